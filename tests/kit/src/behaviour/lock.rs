//! Lock: exclusion, waiting, reentrancy, leases, loss, ownership, cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use baton::{ErrorKind, FencingToken, LockOptions};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{SLACK, Store, WAKE, bounded, eventually, stalled, unique};

/// 16 tasks × 64 acquisitions guard a non-atomic read-modify-write: no update is lost,
/// and tokens strictly increase in grant order.
pub async fn exclusion_counter(store: &Store) {
    // 16 clients keep 15 waiters queued at every grant, so each of the 1 024 grants is a
    // contended hand-over. 64 rounds each (200 until 2026-11): this check was a third of
    // the rust suite's time on the slow stores (68 s of etcd over TLS, 36 s of MySQL),
    // and the cross-process, fault and xlang suites check exclusion again.
    const TASKS: usize = 16;
    const ROUNDS: usize = 64;
    let name = unique("counter");
    let counter = Arc::new(AtomicU64::new(0));
    let tokens = Arc::new(Mutex::new(Vec::with_capacity(TASKS * ROUNDS)));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let (client, name, counter, tokens) = (store.client().await, name.clone(), counter.clone(), tokens.clone());
        tasks.push(tokio::spawn(async move {
            let lock = client.lock(&name);
            for _ in 0..ROUNDS {
                let g = lock.acquire().await.unwrap();
                // Read, yield, write: loses updates unless the lock excludes.
                let v = counter.load(Ordering::SeqCst);
                tokio::task::yield_now().await;
                counter.store(v + 1, Ordering::SeqCst);
                tokens.lock().await.push(g.token().get());
                g.release().await.unwrap();
            }
        }));
    }
    // Bound: only a backstop against a hang (exclusion is what the counter checks); 240 s
    // is about 10× the slowest store's time (a quorum write per step) with other test
    // groups sharing 2 cores.
    bounded("16×64 contended acquisitions", Duration::from_secs(240), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    eprintln!("{TASKS}×{ROUNDS} contended acquisitions on {}: {:?}", store.url, started.elapsed());
    assert_eq!(counter.load(Ordering::SeqCst), (TASKS * ROUNDS) as u64, "lost updates");
    let tokens = tokens.lock().await;
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "tokens not strictly increasing in grant order");
}

/// `try_acquire` never waits; `acquire_timeout` gives `Timeout` after about the timeout.
pub async fn try_and_timeout(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("busy");
    let g = a.lock(&name).acquire().await.unwrap();
    let t0 = Instant::now();
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    let e = b.lock(&name).acquire_timeout(Duration::from_millis(300)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert!(e.to_string().contains(&name), "{e}");
    let waited = t0.elapsed();
    // Lower bound: it did wait; upper bound: generous for a loaded 2-core machine.
    assert!(waited >= Duration::from_millis(290) && waited < Duration::from_secs(5), "{waited:?}");
    g.release().await.unwrap();
    assert!(b.lock(&name).try_acquire().await.unwrap().is_some());
}

/// A waiter is woken by the release, long before any lease would end.
pub async fn release_wakes_waiter(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("wake");
    let g = a.lock(&name).acquire().await.unwrap();
    let waiter = tokio::spawn({
        let name = name.clone();
        async move { b.lock(&name).acquire().await.map(|g| (g.token(), Instant::now())) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t1 = g.token();
    let released = Instant::now();
    g.release().await.unwrap();
    // The lease is 30 s and the waiter's re-check 1 s: a grant within `WAKE` can only
    // come from the store's wake-up.
    let (t2, at) = bounded("waiter wake-up", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert!(t2 > t1);
    let latency = at.duration_since(released);
    assert!(latency < WAKE, "the waiter took {latency:?} to notice the release");
}

/// The same handle re-enters with the same token; the lock is free after as many releases.
pub async fn reentrancy(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("reentrant");
    let lock = a.lock(&name);
    let g1 = lock.acquire().await.unwrap();
    let g2 = lock.acquire().await.unwrap();
    assert_eq!(g1.token(), g2.token());
    let info = a.inspect(&name).await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].count, 2);
    g2.release().await.unwrap();
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none(), "freed after one of two releases");
    g1.release().await.unwrap();
    assert!(b.lock(&name).try_acquire().await.unwrap().is_some());
}

/// Two handles bound to one explicit owner re-enter each other's hold.
pub async fn owner_option_reenters(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("owner");
    let owner = unique("job");
    let g1 = a.lock_with(&name, LockOptions::new().owner(owner.clone())).acquire().await.unwrap();
    let g2 = b.lock_with(&name, LockOptions::new().owner(owner.clone())).try_acquire().await.unwrap().unwrap();
    assert_eq!(g1.token(), g2.token());
    assert!(a.lock(&name).try_acquire().await.unwrap().is_none());
    g1.release().await.unwrap();
    g2.release().await.unwrap();
    assert!(a.lock(&name).try_acquire().await.unwrap().is_some());
}

/// A ttl lease not extended is lost: `lost()` fires, release is `LockLost`, and the next
/// holder gets a larger token.
pub async fn ttl_expiry_is_lost(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("ttl");
    let t0 = Instant::now();
    let g = a.lock_with(&name, LockOptions::new().ttl(Duration::from_millis(800))).acquire().await.unwrap();
    assert!(!g.is_lost());
    // Bound: 800 ms lease plus slack for timers on a loaded machine.
    bounded("lost() after ttl", Duration::from_secs(10), g.lost()).await;
    // At the holder's local deadline: the ttl measured from before the request, less the
    // drift margin (2 % + 50 ms, 66 ms here) and the store's own (etcd's reused
    // keep-alives: 33 ms here), so a little before the store's own expiry, never after it;
    // and not much after that.
    let at = t0.elapsed();
    assert!(at >= Duration::from_millis(690), "lost after only {at:?}");
    assert!(at < Duration::from_millis(800) + SLACK, "lost signalled only after {at:?} for an 800 ms ttl");
    assert!(g.is_lost());
    let g2 = bounded("acquire after expiry", Duration::from_secs(5), b.lock(&name).acquire()).await.unwrap();
    assert!(g2.token() > g.token());
    assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    g2.release().await.unwrap();
}

/// `extend` keeps a ttl lock past its first ttl.
pub async fn extend_keeps_ttl_lock(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("extend");
    // Extended every 400 ms to a 1.5 s ttl: a late timer or a slow round trip on a loaded
    // machine has a second of room before the local deadline.
    let ttl = Duration::from_millis(1500);
    let g = a.lock_with(&name, LockOptions::new().ttl(ttl)).acquire().await.unwrap();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        g.extend(ttl).await.unwrap();
    }
    // 2.4 s after the grant: well past the first ttl, still held.
    assert!(!g.is_lost());
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
}

/// The watchdog renews a short lease for several lease lengths.
pub async fn watchdog_keeps_lock(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("watchdog");
    // Renewed every 300 ms: a renewal may come 1.2 s late on a loaded machine before the
    // 1.5 s lease runs out.
    let opts = LockOptions::new().lease(Duration::from_millis(1500)).renew_every(Duration::from_millis(300));
    let g = a.lock_with(&name, opts).acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert!(!g.is_lost());
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
}

/// A holder whose watchdog stops (its runtime is gone, as when a process freezes or dies)
/// blocks others no longer than its lease.
pub async fn stalled_holder_frees(store: &Store) {
    let name = unique("stalled");
    let n = name.clone();
    let granted = stalled(&store.url, |c| async move {
        let g = c.lock_with(&n, LockOptions::new().lease(Duration::from_secs(1))).acquire().await.unwrap();
        std::mem::forget(g);
        std::mem::forget(c);
    });
    let b = store.client().await;
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    let g = bounded("acquire after a stalled holder", Duration::from_secs(10), b.lock(&name).acquire()).await.unwrap();
    // Lease 1 s, plus the waiter's re-check and a loaded machine.
    assert!(granted.elapsed() < Duration::from_secs(1) + SLACK, "{:?}", granted.elapsed());
    g.release().await.unwrap();
}

/// Releasing a lost lease never frees the next holder's lock.
pub async fn non_owner_release_never_frees(store: &Store) {
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let name = unique("foreign");
    let old = a.lock_with(&name, LockOptions::new().ttl(Duration::from_millis(500))).acquire().await.unwrap();
    let new = bounded("acquire after expiry", Duration::from_secs(5), b.lock(&name).acquire()).await.unwrap();
    assert_eq!(old.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "a stale release freed the lock");
    let info = c.inspect(&name).await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].token, new.token());
    new.release().await.unwrap();
}

/// A guard dropped without `release` is released in the background.
pub async fn dropped_guard_is_released(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("dropped");
    drop(a.lock(&name).acquire().await.unwrap());
    // Far below the 30 s lease: only the background release can free it this soon.
    let g = bounded("acquire after a dropped guard", Duration::from_secs(5), b.lock(&name).acquire()).await.unwrap();
    g.release().await.unwrap();
}

/// Dropped `acquire` futures (while waiting, and at random points against a free lock)
/// leave no hold and no queue place behind.
pub async fn cancelled_acquire_leaves_nothing(store: &Store) {
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let name = unique("cancel");
    let g = a.lock(&name).acquire().await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(200), b.lock(&name).acquire()).await.is_err());
    g.release().await.unwrap();
    let g = bounded("third party acquires", Duration::from_secs(5), c.lock(&name).acquire()).await.unwrap();
    g.release().await.unwrap();
    // Cancel at random points of the attempt. A 120 s lease: a hold leaked by a cancelled
    // attempt would outlast every bound below by far.
    let lock = b.lock_with(&name, LockOptions::new().lease(Duration::from_secs(120)));
    // 400 rounds: the window between an attempt's answer and its reader going away is
    // narrow; this many hit it on most runs before the `Answer` fix.
    for i in 0..400u64 {
        let _ = tokio::time::timeout(Duration::from_micros((i * 7919) % 2000), lock.acquire()).await;
    }
    // Attempts already sent finish in the background and give back what they got; after
    // that, nothing may be left. Bound: generous for a loaded 2-core machine, where the
    // 400 attempts queue on the store (20 s was once too short for MySQL there), and half
    // the lease that would free a leaked hold.
    let probe = c.lock(&name);
    let t0 = tokio::time::Instant::now();
    let g = loop {
        if let Some(g) = probe.try_acquire().await.unwrap() {
            break g;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            // What was left, to tell a leaked hold from a slow store.
            panic!("lock free again took longer than 60s: {:?}", c.inspect(&name).await);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    g.release().await.unwrap();
    // A straggling attempt may still take it and give it back; a leaked hold would stay.
    eventually("a cancelled acquire left a hold behind", Duration::from_secs(30), || async {
        !c.inspect(&name).await.unwrap().is_held()
    })
    .await;
}

/// `close` releases what the client holds, so others need not wait for the leases.
pub async fn close_releases(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("close");
    let g = a.lock(&name).acquire().await.unwrap();
    a.close().await;
    let g2 = bounded("acquire after close", Duration::from_secs(5), b.lock(&name).acquire()).await.unwrap();
    assert!(g2.token() > g.token());
    assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::Closed);
    g2.release().await.unwrap();
}

/// `LockOptions::lease` alone derives the renewal period (a third of the lease): a 1 s
/// lease held for 3 s is never lost, and nobody else gets in meanwhile.
pub async fn watchdog_default_renewal(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("watchdog-1s");
    let g = a.lock_with(&name, LockOptions::new().lease(Duration::from_secs(1))).acquire().await.unwrap();
    let other = b.lock(&name);
    // 12 samples over 3 s (three lease lengths): a missed renewal would free it.
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!g.is_lost(), "a renewed lease was reported lost");
        assert!(other.try_acquire().await.unwrap().is_none(), "a renewed lease expired");
    }
    let left = a.inspect(&name).await.unwrap().holders[0].lease_left;
    assert!(left.is_none_or(|l| l <= Duration::from_secs(1)), "lease left {left:?} exceeds the lease");
    g.release().await.unwrap();
    assert!(other.try_acquire().await.unwrap().is_some());
}

/// Fencing tokens of one name strictly grow across every kind of grant: release, try,
/// re-entry (same token), a grant that expired, a dropped guard, the fair lock of the same
/// name; `inspect` reports the last one.
pub async fn fencing_tokens_grow(store: &Store) {
    fencing_tokens_grow_with(store, async |_: &str| {}, true).await;
}

/// `fencing_tokens_grow` on a store without fair locks (`redlock://`): the grant after
/// the dropped guard is a plain lock's.
pub async fn fencing_tokens_grow_without_fair(store: &Store) {
    fencing_tokens_grow_with(store, async |_: &str| {}, false).await;
}

/// `fencing_tokens_grow` with `between` run after the expired grant (a foreign client's
/// hold and release, on stores that have one), and the last grant a fair lock's when
/// `last_fair` (stores without fair locks: a plain lock's).
pub async fn fencing_tokens_grow_with(store: &Store, between: impl AsyncFnOnce(&str), last_fair: bool) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("fence");
    let mut seen = Vec::new();
    let g = a.lock(&name).acquire().await.unwrap();
    seen.push(g.token());
    g.release().await.unwrap();
    let lock = b.lock(&name);
    let g = lock.try_acquire().await.unwrap().expect("free");
    let again = lock.acquire().await.unwrap();
    assert_eq!(again.token(), g.token(), "a re-entry keeps the token");
    seen.push(g.token());
    again.release().await.unwrap();
    g.release().await.unwrap();
    let expired = a.lock_with(&name, LockOptions::new().ttl(Duration::from_millis(300))).acquire().await.unwrap();
    seen.push(expired.token());
    bounded("ttl grant expires", Duration::from_secs(5), expired.lost()).await;
    between(&name).await;
    let g = bounded("grant after expiry", Duration::from_secs(5), b.lock(&name).acquire()).await.unwrap();
    seen.push(g.token());
    drop(g);
    let last = async { if last_fair { a.fair_lock(&name).acquire().await } else { a.lock(&name).acquire().await } };
    let g = bounded("grant after a dropped guard", Duration::from_secs(5), last).await.unwrap();
    seen.push(g.token());
    let info = b.inspect(&name).await.unwrap();
    assert_eq!(info.holders[0].token, g.token());
    // On redlock:// the last token is the largest node counter: a node whose grant lands
    // after the quorum's (now, or after this read) keeps its own clock-based counter when it
    // is above the grant's token. Elsewhere it is the grant's token exactly.
    let max_register = store.url.starts_with("redlock");
    let last_is = |last: Option<FencingToken>, want: FencingToken| {
        if max_register { last >= Some(want) } else { last == Some(want) }
    };
    assert!(last_is(info.last_token, g.token()), "last token {:?}, granted {:?}", info.last_token, g.token());
    g.release().await.unwrap();
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "tokens not strictly increasing: {seen:?}");
    assert_eq!(expired.extend(Duration::from_secs(5)).await.unwrap_err().kind(), ErrorKind::LockLost);
    assert_eq!(expired.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    // A store keeps the last token, or forgets the freed name whole (Redis, SQL, memory:
    // a free name leaves no state behind) — never anything else.
    let after = b.inspect(&name).await.unwrap().last_token;
    assert!(
        after.is_none() || last_is(after, info.last_token.unwrap()),
        "a release moved the token: {after:?} after {:?}",
        info.last_token
    );
    // Either way the next grant's token is above every earlier one.
    let g = bounded("grant after the release", Duration::from_secs(5), a.lock(&name).acquire()).await.unwrap();
    assert!(g.token() > *seen.last().unwrap(), "token {:?} after {seen:?}", g.token());
    g.release().await.unwrap();
}

/// `close` gives back every kind of hold at once: locks (re-entered too), fair locks,
/// read and write holds, semaphore permits, expirable permits.
pub async fn close_releases_every_primitive(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let n = unique("close-all");
    let (lock, fair, rd, wr, sem, psem) =
        (format!("{n}-l"), format!("{n}-f"), format!("{n}-r"), format!("{n}-w"), format!("{n}-s"), format!("{n}-p"));
    let l = a.lock(&lock);
    let guards = vec![
        l.acquire().await.unwrap(),
        l.acquire().await.unwrap(),
        a.fair_lock(&fair).acquire().await.unwrap(),
        a.rw_lock(&rd).read().await.unwrap(),
        a.rw_lock(&wr).write().await.unwrap(),
    ];
    let permits = vec![
        a.semaphore(&sem, 2).acquire_many(2).await.unwrap(),
        a.permit_semaphore(&psem, 1).acquire().await.unwrap(),
    ];
    bounded("close", Duration::from_secs(10), a.close()).await;
    // Immediately: every lease here is 30 s, and close awaited the releases.
    assert!(b.lock(&lock).try_acquire().await.unwrap().is_some(), "re-entered lock still held");
    assert!(b.fair_lock(&fair).try_acquire().await.unwrap().is_some(), "fair lock still held");
    assert!(b.rw_lock(&rd).try_write().await.unwrap().is_some(), "read hold still held");
    assert!(b.rw_lock(&wr).try_read().await.unwrap().is_some(), "write hold still held");
    assert!(b.semaphore(&sem, 2).try_acquire_many(2).await.unwrap().is_some(), "permits still held");
    assert!(b.permit_semaphore(&psem, 1).try_acquire().await.unwrap().is_some(), "expirable permit still held");
    for g in guards {
        assert!(g.is_lost());
        assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::Closed);
    }
    for p in permits {
        assert_eq!(p.release().await.unwrap_err().kind(), ErrorKind::Closed);
    }
}

/// Calls already waiting when their client is closed end with `Closed` (within the 1 s
/// re-check), and hold nothing afterwards.
pub async fn pending_calls_fail_on_close(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("pending-close");
    let g = b.lock(&name).acquire().await.unwrap();
    b.count_down_latch(&name).try_set_count(1).await.unwrap();
    let lock = a.lock(&name);
    let latch = a.count_down_latch(&name);
    let waiting_lock = tokio::spawn(async move { lock.acquire().await.map(|g| g.token()) });
    let waiting_latch = tokio::spawn(async move { latch.wait().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting_lock.is_finished() && !waiting_latch.is_finished());
    a.close().await;
    // Bound: the 1 s re-check (+ jitter) plus slack for a loaded machine.
    let e = bounded("pending acquire ends", Duration::from_secs(3), waiting_lock).await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
    let e = bounded("pending latch wait ends", Duration::from_secs(3), waiting_latch).await.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
    g.release().await.unwrap();
    eventually("lock free", Duration::from_secs(2), || async { !b.inspect(&name).await.unwrap().is_held() }).await;
}

/// One client's watchdog keeps 150 short leases alive at once (more than one renewal
/// batch of 100), and none of them can be taken meanwhile.
pub async fn watchdog_renews_many(store: &Store) {
    const N: usize = 150;
    let (a, b) = (store.client().await, store.client().await);
    let base = unique("many");
    let names: Vec<String> = (0..N).map(|i| format!("{base}/{i}")).collect();
    // 4 s leases, renewed every ~1.3 s: a batch of 150 renewals must fit in a renewal
    // period even on a loaded 2-core machine with a store that renews one transaction at a
    // time (MySQL; 2 s leases were once lost there), yet a watchdog that stopped would lose
    // them well within the wait below.
    let opts = LockOptions::new().lease(Duration::from_secs(4));
    let mut guards = Vec::with_capacity(N);
    for n in &names {
        guards.push(a.lock_with(n, opts.clone()).acquire().await.unwrap());
    }
    // Two lease lengths after the last grant (more for the first ones).
    tokio::time::sleep(Duration::from_secs(8)).await;
    let lost = guards.iter().filter(|g| g.is_lost()).count();
    assert_eq!(lost, 0, "{lost} of {N} renewed leases reported lost");
    for n in names.iter().step_by(7) {
        assert!(b.lock(n).try_acquire().await.unwrap().is_none(), "{n} expired while renewed");
    }
    for g in guards {
        g.release().await.unwrap();
    }
    assert!(b.lock(&names[N - 1]).try_acquire().await.unwrap().is_some());
}

/// Re-entered guards dropped one by one: still held after the first drop, free after the
/// second (both in the background).
pub async fn dropped_reentrant_guards(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let name = unique("drop-reenter");
    let lock = a.lock(&name);
    let g1 = lock.acquire().await.unwrap();
    let g2 = lock.acquire().await.unwrap();
    drop(g2);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let info = b.inspect(&name).await.unwrap();
    assert_eq!(info.holders.len(), 1, "freed by dropping one of two holds");
    assert_eq!(info.holders[0].count, 1);
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    drop(g1);
    let g =
        bounded("acquire after both guards dropped", Duration::from_secs(5), b.lock(&name).acquire()).await.unwrap();
    g.release().await.unwrap();
}
