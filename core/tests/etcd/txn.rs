//! `etcd://…?scheme=txn`: the bare-key try-lock many Go services write (a txn on `create_revision == 0`
//! under a lease; no queue, waiters watch the key). The lock checks of the behaviour suite
//! (not the fair-queue, read-write, semaphore or latch ones, which do not change with the
//! lock scheme and run in `etcd.rs`), and the layout: the bare key, a foreign holder.
#![cfg(feature = "etcd")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use std::process::Command;
use std::time::Duration;

use baton::{Client, ErrorKind};
use behaviour::{Store, WAKE, bounded, unique};
use tokio::time::Instant;

fn url() -> String {
    format!("{}?scheme=txn", behaviour::crash::server_url("BATON_TEST_ETCD_URL"))
}

fn store() -> Store {
    Store { url: url(), keep: None }
}

// Left out, and why (both are known gaps of this scheme, see docs/etcd-layout.md):
// - lock::exclusion_counter: every release wakes every waiter (no queue); 16×200 grants
//   through that herd took longer than 120 s here (the check now makes 16×64);
// - lock::cancelled_acquire_leaves_nothing: 400 cancelled attempts of one handle queue up
//   behind each other (one step at a time per holder); the last ones are still taking and
//   giving back the lock 500 ms after the check's probe let go, which the check counts as
//   a hold left behind (without that serialization, concurrent re-entries and releases of
//   one holder lost count, a real leak, so the serialization stays).
behaviour_suite!(@tests crate::txn::store;
    lock::try_and_timeout, lock::release_wakes_waiter, lock::reentrancy,
    lock::owner_option_reenters, lock::ttl_expiry_is_lost, lock::extend_keeps_ttl_lock, lock::watchdog_keeps_lock,
    lock::stalled_holder_frees, lock::non_owner_release_never_frees, lock::dropped_guard_is_released,
    lock::close_releases, lock::watchdog_default_renewal,
    lock::fencing_tokens_grow, lock::pending_calls_fail_on_close, lock::watchdog_renews_many,
    lock::dropped_reentrant_guards, multi::all_or_nothing, multi::no_deadlock, multi::overlapping_subsets_exclude,
    errors::bad_names, errors::odd_names_are_distinct,
);
cross_process_suite!(crate::txn::store);

fn etcdctl(args: &[&str]) -> String {
    let ep = behaviour::crash::server_url("BATON_TEST_ETCD_URL");
    let ep = ep.split_once("://").unwrap().1.to_owned();
    let out =
        Command::new("etcdctl").env("ETCDCTL_API", "3").arg(format!("--endpoints={ep}")).args(args).output().unwrap();
    assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The lock is the bare key, under a lease, its create revision the token; a key written by
/// someone else (a Go client that writes `g`) is a holder too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_key_layout_and_foreign_holder() {
    let (a, b) = (Client::connect(&url()).await.unwrap(), Client::connect(&url()).await.unwrap());
    let name = unique("txn");
    let g = a.lock(&name).acquire().await.unwrap();
    let j: serde_json::Value = serde_json::from_str(&etcdctl(&["get", &name, "-w", "json"])).unwrap();
    let kv = &j["kvs"][0];
    assert_eq!(kv["create_revision"].as_u64(), Some(g.token().get()), "token = create revision");
    assert!(kv["lease"].as_i64().unwrap_or(0) != 0, "under a lease");
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    let waiter = tokio::spawn({
        let (b, name) = (b.clone(), name.clone());
        async move { b.lock(&name).acquire().await.map(|g| (g, Instant::now())) }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first = g.token();
    let released = Instant::now();
    g.release().await.unwrap();
    let (g2, at) = bounded("waiter granted", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert!(at.duration_since(released) < WAKE, "woken after {:?}", at.duration_since(released));
    assert!(g2.token() > first);
    g2.release().await.unwrap();
    // A foreign holder (no lease, value `g`): busy until it is deleted.
    etcdctl(&["put", &name, "g"]);
    assert!(a.lock(&name).try_acquire().await.unwrap().is_none());
    assert_eq!(a.inspect(&name).await.unwrap().holders[0].owner, format!("etcd:{name}"));
    let waiter = tokio::spawn({
        let (a, name) = (a.clone(), name.clone());
        async move { a.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    etcdctl(&["del", &name]);
    let g3 = bounded("granted after the foreign key went", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    g3.release().await.unwrap();
}

/// Unknown schemes are refused.
#[tokio::test]
async fn unknown_scheme_is_refused() {
    let bad = url().replace("scheme=txn", "scheme=zk");
    let e = Client::connect(&bad).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("zk"), "{e}");
}

/// The default scheme's queue keys `NAME/<lease>` and this scheme's bare key `NAME` do not
/// meet, so two services on one name with different schemes would both be granted: each
/// scheme refuses a name the other holds or waits on (fail closed, naming both), and
/// `inspect` shows the other scheme's holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_scheme_on_the_same_name_is_refused() {
    let queue_url = url().replace("?scheme=txn", "");
    let (txn, queue) = (Client::connect(&url()).await.unwrap(), Client::connect(&queue_url).await.unwrap());
    let name = unique("two-schemes");
    let refused = |e: baton::Error, found: &str| {
        assert_eq!(e.kind(), ErrorKind::Backend, "{e}");
        let m = e.to_string();
        assert!(m.contains("one name takes one scheme") && m.contains(found), "{m}");
    };
    let g = txn.lock(&name).acquire().await.unwrap();
    refused(queue.lock(&name).try_acquire().await.map(drop).unwrap_err(), "?scheme=txn");
    refused(queue.lock(&name).acquire_timeout(Duration::from_secs(2)).await.map(drop).unwrap_err(), "?scheme=txn");
    let seen = queue.inspect(&name).await.unwrap();
    assert_eq!((seen.holders.len(), seen.holders[0].token), (1, g.token()), "{seen:?}");
    assert!(seen.waiters.is_empty(), "a refused waiter leaves no key: {seen:?}");
    let first = g.token();
    g.release().await.unwrap();
    let g = queue.lock(&name).acquire().await.unwrap();
    assert!(g.token() > first);
    refused(txn.lock(&name).try_acquire().await.map(drop).unwrap_err(), "the lock queue");
    let seen = txn.inspect(&name).await.unwrap();
    assert_eq!((seen.holders.len(), seen.holders[0].token), (1, g.token()), "{seen:?}");
    g.release().await.unwrap();
    // Free again: either scheme takes it.
    txn.lock(&name).acquire().await.unwrap().release().await.unwrap();
}

/// Many contenders of both schemes on one name: every grant is alone (no overlap), its
/// token above every earlier grant's, and every attempt ends granted, timed out or
/// refused as above (no other error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_schemes_contending_never_overlap() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    let queue_url = url().replace("?scheme=txn", "");
    let clients = [Client::connect(&url()).await.unwrap(), Client::connect(&queue_url).await.unwrap()];
    let name = unique("two-schemes-race");
    let (inside, overlaps, granted) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let last = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = clients[i % 2].clone();
        let (name, inside, overlaps, granted, last) =
            (name.clone(), inside.clone(), overlaps.clone(), granted.clone(), last.clone());
        tasks.push(tokio::spawn(async move {
            let mut inversions = 0;
            for _ in 0..8 {
                match c.lock(&name).acquire_timeout(Duration::from_secs(5)).await {
                    Ok(g) => {
                        if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                            overlaps.fetch_add(1, Ordering::SeqCst);
                        }
                        if last.fetch_max(g.token().get(), Ordering::SeqCst) >= g.token().get() {
                            inversions += 1;
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        granted.fetch_add(1, Ordering::SeqCst);
                        g.release().await.unwrap();
                    }
                    Err(e) if e.kind() == ErrorKind::Timeout => {}
                    Err(e) => assert!(e.to_string().contains("one name takes one scheme"), "{e}"),
                }
            }
            inversions
        }));
    }
    let mut inversions = 0;
    for t in tasks {
        inversions += bounded("contender", Duration::from_secs(120), t).await.unwrap();
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "holds overlapped");
    assert_eq!(inversions, 0, "a grant's token was not above every earlier grant's");
    assert!(granted.load(Ordering::SeqCst) > 0, "nobody was granted");
}
