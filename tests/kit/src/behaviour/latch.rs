//! Count-down latch.

use std::time::Duration;

use baton::ErrorKind;
use tokio::time::Instant;

use super::{Store, WAKE, bounded, unique};

/// `try_set_count` only at zero; counting down to zero wakes a waiter; never below zero.
pub async fn set_count_down_wait(store: &Store) {
    let name = unique("latch");
    let (a, b) = (store.client().await, store.client().await);
    let latch = a.count_down_latch(&name);
    assert!(latch.try_set_count(2).await.unwrap());
    assert!(!latch.try_set_count(7).await.unwrap());
    assert_eq!(latch.count().await.unwrap(), 2);
    let waiter = tokio::spawn({
        let name = name.clone();
        async move { b.count_down_latch(&name).wait().await.map(|()| Instant::now()) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(latch.count_down().await.unwrap(), 1);
    assert!(!waiter.is_finished());
    assert_eq!(latch.count_down().await.unwrap(), 0);
    let opened = Instant::now();
    let woke = bounded("latch waiter", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    // Well under the latch's 1 s re-check: the store's wake-up did it.
    let latency = woke.duration_since(opened);
    eprintln!("latch waiter woken {latency:?} after the last count_down on {}", store.url);
    assert!(latency < WAKE, "the latch waiter took {latency:?}");
    assert_eq!(latch.count_down().await.unwrap(), 0, "never below zero");
    assert!(latch.try_set_count(1).await.unwrap(), "settable again at zero");
}

/// Waiting on a closed latch times out.
pub async fn wait_timeout(store: &Store) {
    let name = unique("latch-timeout");
    let a = store.client().await;
    let latch = a.count_down_latch(&name);
    latch.try_set_count(1).await.unwrap();
    let t0 = Instant::now();
    let e = latch.wait_timeout(Duration::from_millis(300)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert!(t0.elapsed() >= Duration::from_millis(290));
    assert_eq!(latch.try_set_count(0).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

/// Every waiter (on several clients) is woken when the count reaches zero; counts from
/// several clients add up; a waiter on an open latch returns at once.
pub async fn count_down_from_many_clients(store: &Store) {
    let name = unique("latch-many");
    let a = store.client().await;
    assert!(a.count_down_latch(&name).try_set_count(6).await.unwrap());
    let mut waiters = Vec::new();
    for _ in 0..4 {
        let (c, name) = (store.client().await, name.clone());
        waiters.push(tokio::spawn(async move { c.count_down_latch(&name).wait().await.map(|()| Instant::now()) }));
    }
    let mut downers = Vec::new();
    for _ in 0..3 {
        let (c, name) = (store.client().await, name.clone());
        downers.push(tokio::spawn(async move {
            for _ in 0..2 {
                c.count_down_latch(&name).count_down().await.unwrap();
            }
        }));
    }
    for d in downers {
        bounded("count downs", Duration::from_secs(5), d).await.unwrap();
    }
    let opened = Instant::now();
    assert_eq!(a.count_down_latch(&name).count().await.unwrap(), 0);
    for w in waiters {
        let woke = bounded("every waiter woken", Duration::from_secs(5), w).await.unwrap().unwrap();
        assert!(woke.saturating_duration_since(opened) < WAKE, "a waiter took {:?}", woke.duration_since(opened));
    }
    let t0 = Instant::now();
    a.count_down_latch(&name).wait_timeout(Duration::from_secs(5)).await.unwrap();
    assert!(t0.elapsed() < WAKE, "waiting on an open latch took {:?}", t0.elapsed());
}
