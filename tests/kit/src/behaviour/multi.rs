//! Multi-lock: all or nothing, canonical order.

use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use baton::{ErrorKind, MultiLock};
use tokio::time::Instant;

use super::{Store, bounded, eventually, unique};

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

/// Multi-locks over the same names given in opposite orders never deadlock. A run past
/// the bound says how far it got and its slowest steps (a stall, not a deadlock, shows as
/// a few long steps among many short ones).
pub async fn no_deadlock(store: &Store) {
    let names: Vec<String> = (0..3).map(|i| unique(&format!("dl{i}"))).collect();
    // (task, round, "acquire"/"release", how long) of every step.
    type Step = (usize, usize, &'static str, Duration);
    let steps: Arc<std::sync::Mutex<Vec<Step>>> = Arc::default();
    let mut tasks = Vec::new();
    for t in 0..6 {
        let c = store.client().await;
        let mut mine = names.clone();
        if t % 2 == 1 {
            mine.reverse();
        }
        let steps = steps.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..20 {
                let t0 = Instant::now();
                let g = MultiLock::new(mine.iter().map(|n| c.lock(n))).acquire().await.unwrap();
                let t1 = Instant::now();
                tokio::task::yield_now().await;
                g.release().await.unwrap();
                let mut s = steps.lock().unwrap();
                s.push((t, round, "acquire", t1 - t0));
                s.push((t, round, "release", t1.elapsed()));
            }
        }));
    }
    let all = async {
        for t in tasks {
            t.await.unwrap();
        }
    };
    if tokio::time::timeout(Duration::from_secs(60), all).await.is_err() {
        let mut s = steps.lock().unwrap().clone();
        let done = s.len() / 2;
        s.sort_by_key(|x| std::cmp::Reverse(x.3));
        s.truncate(8);
        panic!(
            "120 multi-lock rounds took longer than 60s: {done} done; slowest steps (task, round, step, time): {s:?}"
        );
    }
}

/// `acquire_timeout` with one lock busy: `Timeout` after about the timeout and nothing
/// held when it returns; a dropped `acquire` future holds nothing either (soon after);
/// duplicate names count once, and locks from several clients combine.
pub async fn timeout_cancel_and_dedup(store: &Store) {
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let (x, y) = (unique("mx"), unique("my"));
    let busy = b.lock(&y).acquire().await.unwrap();
    let multi = a.multi_lock([&x, &y]);
    let t0 = Instant::now();
    let e = multi.acquire_timeout(Duration::from_millis(300)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(t0.elapsed() >= Duration::from_millis(290) && t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // Partial grants are given back before the Timeout is returned (the lease is 30 s).
    assert!(!c.inspect(&x).await.unwrap().is_held(), "partial grant still held after Timeout");
    assert!(tokio::time::timeout(Duration::from_millis(200), multi.acquire()).await.is_err());
    eventually("partial grant released after a drop", Duration::from_secs(2), || async {
        !c.inspect(&x).await.unwrap().is_held()
    })
    .await;
    busy.release().await.unwrap();
    let dup = a.multi_lock([&x, &y, &x, &y]);
    assert_eq!(dup.locks().len(), 2);
    let g = dup.acquire().await.unwrap();
    assert_eq!(g.tokens().len(), 2);
    assert!(!g.is_lost());
    g.release().await.unwrap();
    let mixed = MultiLock::new([a.lock(&y), c.lock(&x)]);
    let g = mixed.try_acquire().await.unwrap().expect("both free");
    assert_eq!(g.guards().len(), 2);
    assert!(b.lock(&x).try_acquire().await.unwrap().is_none() && b.lock(&y).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    assert!(b.multi_lock([&x, &y]).try_acquire().await.unwrap().is_some());
}

/// Overlapping subsets of four names, each task giving them in its own order: no deadlock
/// and no name ever held by two at once.
pub async fn overlapping_subsets_exclude(store: &Store) {
    let names: Vec<String> = (0..4).map(|i| unique(&format!("sub{i}"))).collect();
    let inside: Arc<Vec<AtomicBool>> = Arc::new((0..4).map(|_| AtomicBool::new(false)).collect());
    let mut tasks = Vec::new();
    for t in 0..8usize {
        let (c, names, inside) = (store.client().await, names.clone(), inside.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..15usize {
                // Subsets of 2..=4 names, rotated and reversed per task and round.
                let size = 2 + (t + round) % 3;
                let mut idx: Vec<usize> = (0..size).map(|k| (t + round + k * 3) % 4).collect();
                idx.dedup();
                if (t + round) % 2 == 1 {
                    idx.reverse();
                }
                let g = c.multi_lock(idx.iter().map(|&i| names[i].as_str())).acquire().await.unwrap();
                for &i in &idx {
                    assert!(!inside[i].swap(true, Ordering::SeqCst), "{} held twice", names[i]);
                }
                tokio::task::yield_now().await;
                for &i in &idx {
                    inside[i].store(false, Ordering::SeqCst);
                }
                g.release().await.unwrap();
            }
        }));
    }
    // 120 rounds; a deadlock would hang here.
    bounded("120 overlapping multi-lock rounds", Duration::from_secs(60), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
}
