//! Count-down latch.

use std::time::Duration;

use baton::ErrorKind;
use tokio::time::Instant;

use super::{Store, bounded, unique};

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
    assert!(woke.duration_since(opened) < Duration::from_secs(2));
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
