//! Fair lock: request order, and waiters that vanish are skipped.

use std::sync::Arc;
use std::time::Duration;

use baton::LockOptions;
use tokio::sync::Mutex;

use super::{Store, bounded, stalled, unique};

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
