//! Semaphore: at most N permits out, many at once, leased permits come back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use baton::{ErrorKind, LockOptions};

use super::{SLACK, Store, WAKE, bounded, stalled, unique};

/// 8 tasks × 50 acquisitions of a 3-permit semaphore: never more than 3 inside.
pub async fn never_more_than_permits(store: &Store) {
    let name = unique("sem");
    let inside = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (c, name, inside, peak) = (store.client().await, name.clone(), inside.clone(), peak.clone());
        tasks.push(tokio::spawn(async move {
            let sem = c.semaphore(&name, 3);
            for _ in 0..50 {
                let p = sem.acquire().await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                // Long enough inside for holders to overlap on every store.
                tokio::time::sleep(Duration::from_millis(3)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                p.release().await.unwrap();
            }
        }));
    }
    bounded("400 permit acquisitions", Duration::from_secs(60), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak <= 3, "{peak} permits out of 3 were held at once");
    assert!(peak >= 2, "the test never overlapped holders (peak {peak})");
}

/// `acquire_many`, `release_many`, `available`, and the limits on counts.
pub async fn many_and_available(store: &Store) {
    let name = unique("sem-many");
    let (a, b) = (store.client().await, store.client().await);
    let sem = a.semaphore(&name, 5);
    let mut p = sem.acquire_many(3).await.unwrap();
    assert_eq!(p.count(), 3);
    assert_eq!(sem.available().await.unwrap(), 2);
    assert!(b.semaphore(&name, 5).try_acquire_many(3).await.unwrap().is_none());
    let e = p.release_many(4).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    p.release_many(2).await.unwrap();
    assert_eq!(p.count(), 1);
    assert_eq!(sem.available().await.unwrap(), 4);
    // On redlock:// a step returns once a quorum of nodes answered; the other nodes finish
    // it in the background (b's refused attempt above, a's release), and until they do an
    // attempt of 4 can meet them half-done. Elsewhere nothing is left running. A node step
    // past its timeout on a loaded host (a's release) may still land after that, and 4 of
    // 5 permits need every one of 5 nodes: a wait (bounded, 10 s) rather than one try.
    a.settled().await;
    b.settled().await;
    let q = b.semaphore(&name, 5).acquire_many_timeout(4, Duration::from_secs(10)).await.expect("4 free");
    assert!(q.token() > p.token());
    p.release().await.unwrap();
    q.release().await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 5);
}

/// Permits of a holder whose watchdog stopped come back when its lease ends.
pub async fn crashed_permits_return(store: &Store) {
    let name = unique("sem-crash");
    let n = name.clone();
    let granted = stalled(&store.url, |c| async move {
        let sem = c.semaphore_with(&n, 2, LockOptions::new().lease(Duration::from_secs(1)));
        std::mem::forget(sem.acquire_many(2).await.unwrap());
        std::mem::forget(c);
    });
    let b = store.client().await;
    assert!(b.semaphore(&name, 2).try_acquire().await.unwrap().is_none());
    let p = bounded("permits return", Duration::from_secs(10), b.semaphore(&name, 2).acquire_many(2)).await.unwrap();
    // Lease 1 s, plus the waiter's re-check and a loaded machine.
    assert!(granted.elapsed() < Duration::from_secs(1) + SLACK, "{:?}", granted.elapsed());
    p.release().await.unwrap();
}

/// A waiter is woken by returned permits; a permit dropped without release comes back in
/// the background; permit tokens grow.
pub async fn waiter_woken_and_dropped_permit_returns(store: &Store) {
    let name = unique("sem-wake");
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let p = a.semaphore(&name, 1).acquire().await.unwrap();
    let waiter = tokio::spawn({
        let name = name.clone();
        async move { b.semaphore(&name, 1).acquire().await.map(|p| (p, tokio::time::Instant::now())) }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "a second permit out of one");
    let released = tokio::time::Instant::now();
    let first = p.token();
    p.release().await.unwrap();
    let (q, at) = bounded("permit waiter woken", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let latency = at.duration_since(released);
    assert!(latency < WAKE, "the permit waiter took {latency:?}");
    assert!(q.token() > first);
    drop(q);
    // The lease is 30 s: only the background release can return it this soon.
    let r = bounded("dropped permit returns", Duration::from_secs(5), c.semaphore(&name, 1).acquire()).await.unwrap();
    r.release().await.unwrap();
    assert_eq!(c.semaphore(&name, 1).available().await.unwrap(), 1);
}

/// Fails unless `r` is the size refusal: `InvalidArgument`, naming both sizes.
pub(crate) fn size_refused<T: std::fmt::Debug>(what: &str, r: baton::Result<T>, held: u32, asked: u32) {
    let e = r.expect_err(what);
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{what}: {e}");
    let m = e.message();
    assert!(m.contains(&format!("has {held} permits")) && m.contains(&format!("asked for {asked}")), "{what}: {e}");
}

/// A semaphore's size is part of its state: while a 3-permit handle's permit is held, a
/// 5-permit handle on the same name is refused by every call; once every permit is back
/// (and the stores' background steps are done), the 5-permit handle is granted its 5.
pub async fn size_is_state(store: &Store) {
    let name = unique("sem-size");
    let (a, b) = (store.client().await, store.client().await);
    let (three, five) = (a.semaphore(&name, 3), b.semaphore(&name, 5));
    let p = three.acquire().await.unwrap();
    size_refused("acquire", five.acquire_timeout(Duration::from_secs(2)).await, 3, 5);
    size_refused("try_acquire", five.try_acquire().await, 3, 5);
    size_refused("available", five.available().await, 3, 5);
    size_refused("inspect", five.inspect().await, 3, 5);
    assert_eq!(three.inspect().await.unwrap().permits, Some(3));
    assert_eq!(three.available().await.unwrap(), 2);
    p.release().await.unwrap();
    a.settled().await;
    b.settled().await;
    assert_eq!(five.inspect().await.unwrap().permits, None);
    // All 5 at once: the store counts 5 now, not 3 (Redis: the counter moved with the size).
    let q = five.acquire_many_timeout(5, Duration::from_secs(10)).await.expect("5 of 5 once every permit is back");
    assert_eq!(five.inspect().await.unwrap().permits, Some(5));
    size_refused("the first size now", three.try_acquire().await, 5, 3);
    q.release().await.unwrap();
    a.settled().await;
    b.settled().await;
    assert_eq!(five.available().await.unwrap(), 5);
}
