//! Fair lock: request order, and waiters that vanish are skipped.

use std::sync::Arc;
use std::time::Duration;

use baton::LockOptions;
use tokio::sync::Mutex;

use super::{Store, WAKE, bounded, eventually, stalled, unique};

/// Waits until the lock's queue has `n` waiters.
async fn queue_len(store: &Store, client: &baton::Client, name: &str, n: usize) {
    let _ = store;
    bounded("waiter queued", Duration::from_secs(5), async {
        while client.fair_lock(name).inspect().await.unwrap().waiters.len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// Five waiters that queued one after another are granted in that order.
pub async fn grants_in_request_order(store: &Store) {
    let name = unique("fair");
    let a = store.client().await;
    let g = a.fair_lock(&name).acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..5 {
        let (c, n, order) = (store.client().await, name.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let g = c.fair_lock(&n).acquire().await.unwrap();
            order.lock().await.push(i);
            tokio::time::sleep(Duration::from_millis(10)).await;
            g.release().await.unwrap();
        }));
        queue_len(store, &a, &name, i + 1).await;
    }
    g.release().await.unwrap();
    bounded("five fair grants", Duration::from_secs(20), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    assert_eq!(*order.lock().await, vec![0, 1, 2, 3, 4]);
}

/// A waiter that goes away without leaving the queue (its task aborted mid-wait, like a
/// crashed process) is skipped once its queue place expires.
pub async fn vanished_waiter_is_skipped(store: &Store) {
    let name = unique("fair-gone");
    let a = store.client().await;
    let opts = LockOptions::new().queue_ttl(Duration::from_secs(1));
    let g = a.fair_lock(&name).acquire().await.unwrap();
    // The first waiter's runtime shuts down while it waits, as a process that dies: its
    // future is dropped with no runtime left to tell the store, so its place stays.
    let (n, o) = (name.clone(), opts.clone());
    stalled(&store.url, |c| async move {
        let (waiter, n2) = (c.clone(), n.clone());
        tokio::spawn(async move {
            let _ = waiter.fair_lock_with(&n2, o).acquire().await;
        });
        bounded("first waiter queued", Duration::from_secs(5), async {
            while c.fair_lock(&n).inspect().await.unwrap().waiters.is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
    });
    assert_eq!(a.fair_lock(&name).inspect().await.unwrap().waiters.len(), 1, "the dead waiter's place stays");
    let b = store.client().await;
    let second = tokio::spawn({
        let name = name.clone();
        async move { b.fair_lock_with(&name, opts).acquire().await.map(|g| g.token()) }
    });
    let first = g.token();
    g.release().await.unwrap();
    // Queue ttl 1 s, re-checks every ≤ 1/3 of it, plus slack for a loaded machine.
    let t = bounded("second waiter granted", Duration::from_secs(5), second).await.unwrap().unwrap();
    assert!(t > first);
}

/// A waiter whose `acquire` future is dropped (a timeout around it, an aborted task) gives
/// its place up at once — well before the 5 s queue ttl — and the next waiter is granted on
/// the release.
pub async fn dropped_waiter_leaves_queue(store: &Store) {
    let name = unique("fair-drop");
    let a = store.client().await;
    let g = a.fair_lock(&name).acquire().await.unwrap();
    // A waiter given up by a timeout.
    let b = store.client().await;
    assert!(tokio::time::timeout(Duration::from_millis(300), b.fair_lock(&name).acquire()).await.is_err());
    // Bound: the place goes with the future (1 s is far below the 5 s queue ttl).
    eventually("timed-out waiter leaves", Duration::from_secs(1), || async {
        a.fair_lock(&name).inspect().await.unwrap().waiters.is_empty()
    })
    .await;
    // A waiter that times out gives its place up before returning.
    let e = b.fair_lock(&name).acquire_timeout(Duration::from_millis(300)).await.unwrap_err();
    assert_eq!(e.kind(), baton::ErrorKind::Timeout);
    assert!(a.fair_lock(&name).inspect().await.unwrap().waiters.is_empty(), "a timed-out waiter kept its place");
    // A waiter whose task is aborted, queued ahead of a live one.
    let c = store.client().await;
    let gone = c.fair_lock(&name);
    let gone_owner = gone.owner().unwrap().to_owned();
    let aborted = tokio::spawn(async move { gone.acquire().await.map(|g| g.token()) });
    queue_len(store, &a, &name, 1).await;
    let d = store.client().await;
    let live = d.fair_lock(&name);
    let live_owner = live.owner().unwrap().to_owned();
    let second = tokio::spawn(async move { live.acquire().await.map(|g| (g.token(), tokio::time::Instant::now())) });
    queue_len(store, &a, &name, 2).await;
    assert_eq!(a.fair_lock(&name).inspect().await.unwrap().waiters, vec![gone_owner, live_owner.clone()]);
    aborted.abort();
    eventually("aborted waiter leaves", Duration::from_secs(1), || async {
        a.fair_lock(&name).inspect().await.unwrap().waiters == vec![live_owner.clone()]
    })
    .await;
    let released = tokio::time::Instant::now();
    g.release().await.unwrap();
    let (_, at) = bounded("live waiter granted", Duration::from_secs(5), second).await.unwrap().unwrap();
    let latency = at.duration_since(released);
    assert!(latency < WAKE, "the next fair waiter took {latency:?}");
}

/// `acquire` futures of a fair lock dropped at random points while the lock is busy leave
/// no queue place: after the holder releases, a newcomer gets it long before the queue
/// ttl could have cleaned up.
pub async fn random_cancellation_leaves_no_queue_place(store: &Store) {
    let name = unique("fair-cancel");
    let (a, b) = (store.client().await, store.client().await);
    // A 60 s queue ttl: a place left behind would stay for a minute, far beyond the bound
    // below, so the check tells a clean queue from a leak even on a loaded machine.
    let opts = LockOptions::new().queue_ttl(Duration::from_secs(60));
    let g = a.fair_lock(&name).acquire().await.unwrap();
    // 4 tasks × 100 rounds, each a fresh handle (a fresh queue place) dropped after
    // 0–3 ms; running them side by side is what makes in-flight attempts meet the
    // background `leave_queue` of their own dropped future (the race this checks).
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let (b, name, opts) = (b.clone(), name.clone(), opts.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..100u64 {
                let h = b.fair_lock_with(&name, opts.clone());
                let _ = tokio::time::timeout(Duration::from_micros((t * 997 + i * 7919) % 3000), h.acquire()).await;
            }
        }));
    }
    for t in tasks {
        bounded("cancelling rounds", Duration::from_secs(30), t).await.unwrap();
    }
    // Attempts already sent when their futures were dropped still run in the background,
    // each taking a place and giving it back, so the queue can look empty between two of
    // them: the check is that a newcomer gets in (with no place left) soon, not at one read.
    // Bound: the background `leave_queue`s run in well under a second on an idle machine
    // and took over 4 s for 400 of them on a loaded 2-core one; a leaked place would stay
    // for the 60 s queue ttl, so 20 s still tells the two apart.
    g.release().await.unwrap();
    let c = store.client().await;
    let took = eventually("a newcomer let in, no queue places left", Duration::from_secs(20), || async {
        let Some(g) = c.fair_lock(&name).try_acquire().await.unwrap() else { return false };
        g.release().await.unwrap();
        a.fair_lock(&name).inspect().await.unwrap().waiters.is_empty()
    })
    .await;
    eprintln!("fair lock free {took:?} after the last cancelled acquire");
}

/// The fair lock excludes: 6 tasks × 30 rounds of a non-atomic read-modify-write.
pub async fn fair_exclusion(store: &Store) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let name = unique("fair-count");
    let counter = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (c, name, counter) = (store.client().await, name.clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            let lock = c.fair_lock(&name);
            let mut last = 0;
            for _ in 0..30 {
                let g = lock.acquire().await.unwrap();
                assert!(g.token().get() > last);
                last = g.token().get();
                let v = counter.load(Ordering::SeqCst);
                tokio::task::yield_now().await;
                counter.store(v + 1, Ordering::SeqCst);
                g.release().await.unwrap();
            }
        }));
    }
    bounded("180 fair grants", Duration::from_secs(60), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    assert_eq!(counter.load(Ordering::SeqCst), 180, "lost updates under the fair lock");
}
