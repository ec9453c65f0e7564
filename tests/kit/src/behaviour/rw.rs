//! Read-write lock: shared readers, exclusive writer, no writer starvation, downgrade.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use baton::{ErrorKind, LockOptions};
use tokio::time::Instant;

use super::{SLACK, Store, WAKE, bounded, eventually, stalled, unique};

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
    let t0 = Instant::now();
    let g = bounded("writer among readers", Duration::from_secs(10), w.rw_lock(&name).write()).await.unwrap();
    // Each reader holds 20 ms; once the writer queues no new reader may enter, so it gets
    // in after the current ones leave. 5 s is far from "starved" (the readers never stop)
    // and safe under load.
    assert!(t0.elapsed() < Duration::from_secs(5), "writer waited {:?}", t0.elapsed());
    let before = reads.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let info = w.rw_lock(&name).inspect().await.unwrap();
    assert!(info.holders.iter().all(|h| h.mode == "write"), "a reader shares the write hold: {info:?}");
    assert_eq!(reads.load(Ordering::SeqCst), before, "a reader got in while the writer held");
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

/// Eight readers on eight clients hold at once.
pub async fn many_readers_at_once(store: &Store) {
    let name = unique("rw-many");
    let mut guards = Vec::new();
    for _ in 0..8 {
        let c = store.client().await;
        guards.push(bounded("reader joins readers", Duration::from_secs(5), c.rw_lock(&name).read()).await.unwrap());
    }
    let c = store.client().await;
    let info = c.rw_lock(&name).inspect().await.unwrap();
    assert_eq!(info.holders.len(), 8);
    assert!(info.holders.iter().all(|h| h.mode == "read"), "{info:?}");
    assert!(c.rw_lock(&name).try_write().await.unwrap().is_none());
    for g in guards {
        g.release().await.unwrap();
    }
    assert!(c.rw_lock(&name).try_write().await.unwrap().is_some());
}

/// A waiting reader is woken by the writer's release; a writer excludes other writers.
pub async fn release_wakes_reader(store: &Store) {
    let name = unique("rw-wake");
    let (a, b, c) = (store.client().await, store.client().await, store.client().await);
    let w = a.rw_lock(&name).write().await.unwrap();
    assert!(c.rw_lock(&name).try_write().await.unwrap().is_none(), "two writers");
    let reader = tokio::spawn({
        let name = name.clone();
        async move { b.rw_lock(&name).read().await.map(|g| (g.token(), Instant::now())) }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!reader.is_finished(), "a reader got in while a writer held");
    let (wt, released) = (w.token(), Instant::now());
    w.release().await.unwrap();
    let (t, at) = bounded("reader woken", Duration::from_secs(5), reader).await.unwrap().unwrap();
    assert!(t > wt);
    let latency = at.duration_since(released);
    assert!(latency < WAKE, "the reader took {latency:?} to notice the release");
}

/// Upgrading through the waiting forms (`write`, `write_timeout`) fails at once with
/// `InvalidArgument` instead of waiting on itself, and leaves no writer queue place that
/// would turn new readers away.
pub async fn upgrade_waiting_forms_fail_fast(store: &Store) {
    let name = unique("rw-upgrade");
    let (a, b) = (store.client().await, store.client().await);
    let rw = a.rw_lock(&name);
    let r = rw.read().await.unwrap();
    let e = bounded("write() while reading", Duration::from_secs(2), rw.write()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("upgrade"), "{e}");
    let e = bounded("write_timeout() while reading", Duration::from_secs(2), rw.write_timeout(Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    eventually("no writer queued", Duration::from_secs(1), || async { rw.inspect().await.unwrap().waiters.is_empty() })
        .await;
    let other = b.rw_lock(&name).try_read().await.unwrap().expect("readers still welcome");
    other.release().await.unwrap();
    r.release().await.unwrap();
}

/// Read and write holds are re-entrant per handle, with the same token.
pub async fn reentrant_read_and_write(store: &Store) {
    let name = unique("rw-reenter");
    let (a, b) = (store.client().await, store.client().await);
    let rw = a.rw_lock(&name);
    let w1 = rw.write().await.unwrap();
    let w2 = rw.try_write().await.unwrap().expect("write re-entry");
    assert_eq!(w1.token(), w2.token());
    w2.release().await.unwrap();
    assert!(b.rw_lock(&name).try_read().await.unwrap().is_none(), "freed after one of two releases");
    w1.release().await.unwrap();
    let r1 = rw.read().await.unwrap();
    let r2 = rw.read().await.unwrap();
    assert_eq!(r1.token(), r2.token());
    r1.release().await.unwrap();
    assert!(b.rw_lock(&name).try_write().await.unwrap().is_none(), "read freed after one of two releases");
    r2.release().await.unwrap();
    assert!(b.rw_lock(&name).try_write().await.unwrap().is_some());
}

/// A writer whose watchdog stopped blocks readers no longer than its lease.
pub async fn crashed_writer_lease_ends(store: &Store) {
    let name = unique("rw-crash");
    let n = name.clone();
    let died = stalled(&store.url, |c| async move {
        let g = c.rw_lock_with(&n, LockOptions::new().lease(Duration::from_secs(1))).write().await.unwrap();
        std::mem::forget(g);
        std::mem::forget(c);
    });
    let b = store.client().await;
    assert!(b.rw_lock(&name).try_read().await.unwrap().is_none(), "the dead writer's lease is still running");
    let r = bounded("read after a dead writer", Duration::from_secs(10), b.rw_lock(&name).read()).await.unwrap();
    // Lease 1 s, plus the reader's re-check and a loaded machine.
    assert!(died.elapsed() < Duration::from_secs(1) + SLACK, "{:?}", died.elapsed());
    r.release().await.unwrap();
}

/// A waiting writer that goes away stops turning readers away: at once when its future is
/// dropped, after its queue ttl when its process dies.
pub async fn vanished_writer_unblocks_readers(store: &Store) {
    let name = unique("rw-gone");
    let (a, b) = (store.client().await, store.client().await);
    let r = a.rw_lock(&name).read().await.unwrap();
    // Dropped: a timeout around write().
    assert!(tokio::time::timeout(Duration::from_millis(200), b.rw_lock(&name).write()).await.is_err());
    // Bound: far below the 5 s default queue ttl.
    eventually("dropped writer leaves", Duration::from_secs(1), || async {
        b.rw_lock(&name).try_read().await.unwrap().is_some()
    })
    .await;
    // Died: the waiting writer's runtime shuts down; its place stays for its 1 s queue ttl.
    let n = name.clone();
    stalled(&store.url, |c| async move {
        let (w, n2) = (c.clone(), n.clone());
        tokio::spawn(async move {
            let _ = w.rw_lock_with(&n2, LockOptions::new().queue_ttl(Duration::from_secs(1))).write().await;
        });
        bounded("dead writer queued", Duration::from_secs(5), async {
            while c.rw_lock(&n).inspect().await.unwrap().waiters.is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
    });
    let died = Instant::now();
    assert!(b.rw_lock(&name).try_read().await.unwrap().is_none(), "a queued writer must hold new readers back");
    let g = bounded("read after the dead writer's place expired", Duration::from_secs(10), b.rw_lock(&name).read())
        .await
        .unwrap();
    // Queue ttl 1 s, plus the reader's re-check and a loaded machine. etcd keeps the
    // place under an etcd lease, which lasts at least etcd's minimum (2 s) and ends at its
    // next expiry check (≤ 0.5 s later): 3.5 s still tells it from the 5 s default ttl.
    assert!(died.elapsed() < Duration::from_millis(3500), "{:?}", died.elapsed());
    g.release().await.unwrap();
    r.release().await.unwrap();
}

/// `write` futures dropped at random points while readers hold leave no writer queue
/// place: new readers are welcome again soon, long before the queue ttl could clean up.
pub async fn random_cancellation_leaves_no_writer_place(store: &Store) {
    let name = unique("rw-cancel");
    let (a, b) = (store.client().await, store.client().await);
    // A 60 s queue ttl, as in `fair::random_cancellation_leaves_no_queue_place`: a leaked
    // writer place would outlast the bound below many times over.
    let opts = LockOptions::new().queue_ttl(Duration::from_secs(60));
    let r = a.rw_lock(&name).read().await.unwrap();
    // 4 tasks × 100 rounds, each a fresh handle (a fresh writer id) dropped after 0–3 ms,
    // side by side (see `fair::random_cancellation_leaves_no_queue_place`).
    let mut tasks = Vec::new();
    for t in 0..4u64 {
        let (b, name, opts) = (b.clone(), name.clone(), opts.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..100u64 {
                let h = b.rw_lock_with(&name, opts.clone());
                let _ = tokio::time::timeout(Duration::from_micros((t * 997 + i * 7919) % 3000), h.write()).await;
            }
        }));
    }
    for t in tasks {
        bounded("cancelling rounds", Duration::from_secs(30), t).await.unwrap();
    }
    // Attempts already sent when their futures were dropped still run in the background,
    // each taking a place and giving it back, so the queue can look empty between two of
    // them: the check is that a reader gets in (with no place left) soon, not at one read.
    // Bound: background `leave_queue`s take milliseconds, and over 4 s for 400 of them on
    // a loaded 2-core machine over PostgreSQL; a leaked place would stay for the 60 s
    // queue ttl, so 20 s still tells the two apart.
    let c = store.client().await;
    eventually("a reader let in, no writer places left", Duration::from_secs(20), || async {
        let Some(g) = c.rw_lock(&name).try_read().await.unwrap() else { return false };
        g.release().await.unwrap();
        a.rw_lock(&name).inspect().await.unwrap().waiters.is_empty()
    })
    .await;
    r.release().await.unwrap();
}
