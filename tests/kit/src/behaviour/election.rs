//! Leader election: one leader at a time, rising terms, succession after a lost or
//! stalled leader, every change observed in order, a deposed leader fenced off, no
//! candidate left behind by a cancelled campaign, bad input refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use baton::{ErrorKind, LockOptions, MAX_PROPOSAL_BYTES};
use tokio::time::Instant;

use super::{SLACK, Store, bounded, expect_err, stalled, unique};

/// Four candidates on four clients campaign in turn, twice each: never two leaders at
/// once, every leader's term above the one before, and `leader()` names the one leading.
pub async fn one_leader_at_a_time(store: &Store) {
    let name = unique("elect-one");
    let leading = Arc::new(AtomicUsize::new(0));
    let terms = Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..4 {
        let (c, name, leading, terms) = (store.client().await, name.clone(), leading.clone(), terms.clone());
        tasks.push(tokio::spawn(async move {
            let election = c.election(&name);
            for round in 0..2 {
                let me = format!("candidate-{i}-{round}");
                let l = election.campaign(&me).await.unwrap();
                assert_eq!(leading.fetch_add(1, Ordering::SeqCst), 0, "two leaders at once");
                terms.lock().await.push(l.term());
                let info = election.leader().await.unwrap().expect("a leader while one leads");
                assert_eq!((info.proposal.as_str(), info.term), (me.as_str(), l.term()));
                assert_eq!(info.holder, l.holder());
                tokio::time::sleep(Duration::from_millis(20)).await;
                leading.fetch_sub(1, Ordering::SeqCst);
                l.resign().await.unwrap();
            }
        }));
    }
    for t in tasks {
        bounded("campaigns", Duration::from_secs(60), t).await.unwrap();
    }
    let terms = terms.lock().await;
    assert_eq!(terms.len(), 8);
    assert!(terms.windows(2).all(|w| w[0] < w[1]), "terms must rise leader after leader: {terms:?}");
    assert!(store.client().await.election(&name).leader().await.unwrap().is_none(), "nobody leads after all resigned");
}

/// A leader whose process stalls (its runtime gone: no renewal, no resignation) is
/// succeeded within its lease, with a higher term.
pub async fn stalled_leader_is_succeeded(store: &Store) {
    let name = unique("elect-stalled");
    let n = name.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let stopped = stalled(&store.url, move |c| async move {
        let opts = LockOptions::new().lease(Duration::from_secs(1));
        let l = c.election_with(&n, opts).campaign("stalls").await.unwrap();
        tx.send(l.term()).unwrap();
        std::mem::forget(l);
        std::mem::forget(c);
    });
    let old = rx.recv().unwrap();
    let c = store.client().await;
    let e = c.election(&name);
    assert_eq!(e.leader().await.unwrap().map(|i| i.proposal), Some("stalls".into()));
    let l = bounded("campaign after a stalled leader", Duration::from_secs(20), e.campaign("next")).await.unwrap();
    // Lease 1 s, plus the waiter's re-check and a loaded machine.
    assert!(stopped.elapsed() < Duration::from_secs(1) + SLACK, "took {:?}", stopped.elapsed());
    assert!(l.term() > old, "term {} not above the stalled leader's {old}", l.term());
    l.resign().await.unwrap();
}

/// `observe` starts with the current leader, then reports every proclamation and every
/// new leader once, in order.
pub async fn observe_sees_every_change_in_order(store: &Store) {
    let name = unique("elect-observe");
    let (a, b, o) = (store.client().await, store.client().await, store.client().await);
    let first = a.election(&name).campaign("a1").await.unwrap();
    let mut watch = o.election(&name).observe();
    let seen = next(&mut watch).await;
    assert_eq!((seen.proposal.as_str(), seen.term), ("a1", first.term()));
    for v in ["a2", "a3"] {
        first.proclaim(v).await.unwrap();
        let seen = next(&mut watch).await;
        assert_eq!((seen.proposal.as_str(), seen.term), (v, first.term()), "proclaimed {v}");
    }
    assert_eq!(first.proposal(), "a3");
    let waiting = tokio::spawn({
        let name = name.clone();
        async move { b.election(&name).campaign("b1").await.map(|l| (l.term(), l)) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let old = first.term();
    first.resign().await.unwrap();
    let (term, second) = bounded("the waiting candidate", Duration::from_secs(10), waiting).await.unwrap().unwrap();
    assert!(term > old);
    let seen = next(&mut watch).await;
    assert_eq!((seen.proposal.as_str(), seen.term), ("b1", term), "the new leader");
    second.proclaim("b2").await.unwrap();
    assert_eq!(next(&mut watch).await.proposal, "b2");
    // Nothing else happened: no change is reported twice.
    assert!(tokio::time::timeout(Duration::from_millis(500), watch.next()).await.is_err(), "a change seen twice");
    second.resign().await.unwrap();
}

/// The next change `watch` reports (bounded: 10 s).
async fn next(watch: &mut baton::LeaderWatch) -> baton::LeaderInfo {
    bounded("observe", Duration::from_secs(10), watch.next()).await.unwrap()
}

/// A leader whose ttl ran out is deposed: the next leader's fenced write stands, the old
/// leader's write with its old term is refused, and its `proclaim` fails with `LockLost`
/// (firing its lost signal) without touching the new leader's value.
pub async fn deposed_leader_is_fenced(store: &Store) {
    let name = unique("elect-fenced");
    let resource = unique("elect-resource");
    let (a, b) = (store.client().await, store.client().await);
    let old = a.election_with(&name, LockOptions::new().ttl(Duration::from_millis(600))).campaign("old").await.unwrap();
    assert!(a.fence().write(&resource, "from old", old.term()).await.unwrap());
    let new =
        bounded("campaign after the ttl", Duration::from_secs(20), b.election(&name).campaign("new")).await.unwrap();
    assert!(new.term() > old.term());
    assert!(b.fence().write(&resource, "from new", new.term()).await.unwrap());
    assert!(!a.fence().write(&resource, "stale", old.term()).await.unwrap(), "the deposed leader's write was taken");
    assert_eq!(b.fence().read(&resource).await.unwrap().unwrap().value, "from new");
    expect_err(old.proclaim("old again").await, ErrorKind::LockLost, "no longer the leader");
    assert!(old.is_lost());
    assert_eq!(b.election(&name).leader().await.unwrap().unwrap().proposal, "new");
    assert_eq!(old.resign().await.unwrap_err().kind(), ErrorKind::LockLost);
    new.resign().await.unwrap();
}

/// A campaign that times out or is dropped leaves no candidate: once the leader resigns,
/// a third candidate's attempt wins (at once after a timeout; within the background
/// give-up of a dropped campaign's place).
pub async fn cancelled_campaign_leaves_no_candidate(store: &Store) {
    let name = unique("elect-cancel");
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let leader = a.election(&name).campaign("a").await.unwrap();
    let e = b.election(&name);
    let t0 = Instant::now();
    expect_err(e.campaign_timeout("b", Duration::from_millis(300)).await, ErrorKind::Timeout, "timed out");
    assert!(t0.elapsed() >= Duration::from_millis(290));
    // Dropped mid-wait.
    assert!(tokio::time::timeout(Duration::from_millis(200), e.campaign("b")).await.is_err());
    assert!(e.try_campaign("b").await.unwrap().is_none(), "another leads");
    leader.resign().await.unwrap();
    // A dropped campaign gives its place up in the background, as a dropped fair-lock
    // waiter does (`fair::dropped_waiter_leaves_queue`): within 1 s, far below the 5 s
    // queue ttl that would otherwise skip it.
    let third = c.election(&name);
    let t0 = Instant::now();
    let won = loop {
        if let Some(l) = third.try_campaign("c").await.unwrap() {
            break l;
        }
        assert!(t0.elapsed() < Duration::from_secs(1), "a candidate was left ahead of c");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(b.election(&name).leader().await.unwrap().unwrap().proposal, "c");
    won.resign().await.unwrap();
    // And the handle that gave up may campaign again.
    e.try_campaign("b").await.unwrap().expect("free").resign().await.unwrap();
}

/// Bad names, proposals and values; a second campaign on one handle: typed errors,
/// nothing left in the store.
pub async fn bad_election_input(store: &Store) {
    let c = store.client().await;
    let name = unique("elect-bad");
    for bad in ["", "a\0b"] {
        assert_eq!(c.election(bad).campaign("x").await.unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(c.election(bad).leader().await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    let e = c.election(&name);
    let long = "p".repeat(MAX_PROPOSAL_BYTES + 1);
    expect_err(e.campaign("").await, ErrorKind::InvalidArgument, "must not be empty");
    expect_err(e.try_campaign("a\0b").await, ErrorKind::InvalidArgument, "NUL");
    expect_err(e.campaign(&long).await, ErrorKind::InvalidArgument, "4096");
    expect_err(e.campaign_timeout("x", Duration::ZERO).await, ErrorKind::InvalidArgument, "timeout");
    assert!(e.leader().await.unwrap().is_none(), "a refused campaign left a leader");
    let l = e.campaign(&"p".repeat(MAX_PROPOSAL_BYTES)).await.unwrap();
    expect_err(e.try_campaign("again").await, ErrorKind::InvalidArgument, "already campaigning");
    expect_err(e.clone().campaign("again").await, ErrorKind::InvalidArgument, "already campaigning");
    expect_err(l.proclaim("").await, ErrorKind::InvalidArgument, "must not be empty");
    expect_err(l.proclaim(&long).await, ErrorKind::InvalidArgument, "4096");
    assert_eq!(e.leader().await.unwrap().unwrap().proposal.len(), MAX_PROPOSAL_BYTES, "refused values change nothing");
    l.resign().await.unwrap();
    let l = e.try_campaign("after").await.unwrap().expect("free after resign");
    l.resign().await.unwrap();
    c.close().await;
    assert_eq!(e.campaign("closed").await.unwrap_err().kind(), ErrorKind::Closed);
}
