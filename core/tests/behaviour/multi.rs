//! Multi-lock: all or nothing, canonical order.

use std::time::Duration;

use baton::MultiLock;

use super::{Store, bounded, unique};

/// If one lock is busy, none is held afterwards.
pub async fn all_or_nothing(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let names: Vec<String> = (0..3).map(|i| unique(&format!("multi{i}"))).collect();
    let busy = b.lock(&names[2]).acquire().await.unwrap();
    assert!(a.multi_lock(&names).try_acquire().await.unwrap().is_none());
    for n in &names[..2] {
        // Background release of the partial grants may take a moment.
        bounded("partial grant released", Duration::from_secs(5), async {
            while a.inspect(n).await.unwrap().is_held() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
    }
    busy.release().await.unwrap();
    let g = a.multi_lock(&names).acquire().await.unwrap();
    assert_eq!(g.tokens().len(), 3);
    assert!(b.lock(&names[0]).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    assert!(b.lock(&names[1]).try_acquire().await.unwrap().is_some());
}

/// Multi-locks over the same names given in opposite orders never deadlock.
pub async fn no_deadlock(store: &Store) {
    let names: Vec<String> = (0..3).map(|i| unique(&format!("dl{i}"))).collect();
    let mut tasks = Vec::new();
    for t in 0..6 {
        let c = store.client().await;
        let mut mine = names.clone();
        if t % 2 == 1 {
            mine.reverse();
        }
        tasks.push(tokio::spawn(async move {
            for _ in 0..20 {
                let g = MultiLock::new(mine.iter().map(|n| c.lock(n))).acquire().await.unwrap();
                tokio::task::yield_now().await;
                g.release().await.unwrap();
            }
        }));
    }
    bounded("120 multi-lock rounds", Duration::from_secs(60), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
}
