//! Read-write lock: shared readers, exclusive writer, no writer starvation, downgrade.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use baton::ErrorKind;

use super::{Store, bounded, unique};

/// Readers hold together; a writer excludes them and they it.
pub async fn readers_share_writer_excludes(store: &Store) {
    let name = unique("rw");
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let r1 = a.rw_lock(&name).read().await.unwrap();
    let r2 = b.rw_lock(&name).try_read().await.unwrap().expect("second reader");
    assert!(c.rw_lock(&name).try_write().await.unwrap().is_none());
    assert_eq!(c.rw_lock(&name).inspect().await.unwrap().holders.len(), 2);
    r1.release().await.unwrap();
    r2.release().await.unwrap();
    let w = c.rw_lock(&name).try_write().await.unwrap().expect("writer after readers left");
    assert!(a.rw_lock(&name).try_read().await.unwrap().is_none());
    assert!(a.rw_lock(&name).try_write().await.unwrap().is_none());
    w.release().await.unwrap();
}

/// A stream of overlapping readers does not keep a waiting writer out.
pub async fn writer_not_starved(store: &Store) {
    let name = unique("rw-starve");
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (c, name, stop, reads) = (store.client().await, name.clone(), stop.clone(), reads.clone());
        readers.push(tokio::spawn(async move {
            let rw = c.rw_lock(&name);
            // Bounded: at most 2 000 reads per reader, and stops when told.
            for _ in 0..2000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let g = rw.read().await.unwrap();
                reads.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                g.release().await.unwrap();
            }
        }));
    }
    bounded("readers running", Duration::from_secs(5), async {
        while reads.load(Ordering::SeqCst) < 8 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let w = store.client().await;
    // Readers overlap all the time; only the writer's queue place lets it in.
    let g = bounded("writer among readers", Duration::from_secs(10), w.rw_lock(&name).write()).await.unwrap();
    g.release().await.unwrap();
    stop.store(true, Ordering::SeqCst);
    for r in readers {
        bounded("reader stops", Duration::from_secs(10), r).await.unwrap();
    }
}

/// The writer may take the read side (downgrade); a reader may not upgrade.
pub async fn downgrade_and_no_upgrade(store: &Store) {
    let name = unique("rw-grade");
    let (a, b) = (store.client().await, store.client().await);
    let rw = a.rw_lock(&name);
    let w = rw.write().await.unwrap();
    let r = rw.try_read().await.unwrap().expect("downgrade");
    w.release().await.unwrap();
    assert!(b.rw_lock(&name).try_write().await.unwrap().is_none(), "the read hold survives");
    assert!(b.rw_lock(&name).try_read().await.unwrap().is_some());
    let e = rw.try_write().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("upgrade"), "{e}");
    r.release().await.unwrap();
}
