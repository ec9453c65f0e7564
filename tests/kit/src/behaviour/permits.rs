//! Permit-expirable semaphore: ids, release by id, per-permit leases.

use std::time::Duration;

use baton::{ErrorKind, LockOptions};

use super::{SLACK, Store, bounded, stalled, unique};

/// Ids are 32 hex characters and unique; any client releases a permit by id; an unknown
/// id is `NotHeld`.
pub async fn ids_and_release_by_id(store: &Store) {
    let name = unique("psem");
    let (a, b) = (store.client().await, store.client().await);
    let sem = a.permit_semaphore(&name, 2);
    let p1 = sem.acquire().await.unwrap();
    let p2 = sem.acquire().await.unwrap();
    for p in [&p1, &p2] {
        assert_eq!(p.id().len(), 32);
        assert!(p.id().chars().all(|c| c.is_ascii_hexdigit()), "{}", p.id());
    }
    assert_ne!(p1.id(), p2.id());
    assert!(sem.try_acquire().await.unwrap().is_none());
    let id = p1.id().to_owned();
    std::mem::forget(p1);
    b.permit_semaphore(&name, 2).release(&id).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    let e = b.permit_semaphore(&name, 2).release(&id).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    assert!(e.message().contains(&id), "{e}");
    p2.release().await.unwrap();
}

/// A permit with its own lease expires unless `update_lease` moves it.
pub async fn lease_expiry_and_update(store: &Store) {
    let name = unique("psem-lease");
    let (a, b) = (store.client().await, store.client().await);
    let sem = a.permit_semaphore(&name, 1);
    let short = sem.acquire_lease(Duration::from_millis(700)).await.unwrap();
    // Bound: 700 ms lease plus slack.
    bounded("expired permit lost", Duration::from_secs(5), short.lost()).await;
    let other = bounded("permit back", Duration::from_secs(5), b.permit_semaphore(&name, 1).acquire()).await.unwrap();
    assert_eq!(short.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    other.release().await.unwrap();

    // Updated from another client every 600 ms, eight times: held 4.8 s on a 4 s lease.
    // Each update leaves 3.4 s of slack, and the holder must hear of an update before its
    // own end, asking the store 1 s ahead (the most `ask_ahead` gives): on a 3 s lease it
    // asked twice, and once, with etcd+https under both test groups and the cli suite's
    // process trees, an answer took longer than that and the lease read as lost.
    let p = sem.acquire_lease(Duration::from_secs(4)).await.unwrap();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        b.permit_semaphore(&name, 1).update_lease(p.id(), Duration::from_secs(4)).await.unwrap();
    }
    assert!(b.permit_semaphore(&name, 1).try_acquire().await.unwrap().is_none(), "updated lease kept it");
    let id = p.id().to_owned();
    p.release().await.unwrap();
    let e = sem.update_lease(&id, Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
}

/// Ids stay unique across clients and many acquisitions; an id never seen is `NotHeld`.
pub async fn ids_unique_across_clients(store: &Store) {
    let name = unique("psem-ids");
    let mut ids = std::collections::HashSet::new();
    let mut held = Vec::new();
    for _ in 0..4 {
        let c = store.client().await;
        let sem = c.permit_semaphore(&name, 8);
        for _ in 0..2 {
            let p = sem.acquire().await.unwrap();
            assert!(p.id().len() == 32 && p.id().bytes().all(|b| b.is_ascii_hexdigit()), "{}", p.id());
            assert!(ids.insert(p.id().to_owned()), "duplicate id {}", p.id());
            held.push((c.clone(), p));
        }
    }
    let c = store.client().await;
    let sem = c.permit_semaphore(&name, 8);
    assert_eq!(sem.available().await.unwrap(), 0);
    let owners: std::collections::HashSet<String> =
        sem.inspect().await.unwrap().holders.into_iter().map(|h| h.owner).collect();
    assert_eq!(owners, ids, "inspect lists the permit ids");
    let bogus = "0123456789abcdef0123456789abcdef";
    let e = sem.release(bogus).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    assert!(e.message().contains(bogus), "{e}");
    assert_eq!(sem.update_lease(bogus, Duration::from_secs(1)).await.unwrap_err().kind(), ErrorKind::NotHeld);
    for (_, p) in held {
        p.release().await.unwrap();
    }
    assert_eq!(sem.available().await.unwrap(), 8);
}

/// A watchdog permit of a client whose runtime died comes back when its lease ends.
pub async fn crashed_watchdog_permit_returns(store: &Store) {
    let name = unique("psem-crash");
    let n = name.clone();
    let died = stalled(&store.url, |c| async move {
        let sem = c.permit_semaphore_with(&n, 1, LockOptions::new().lease(Duration::from_secs(1)));
        std::mem::forget(sem.acquire().await.unwrap());
        std::mem::forget(c);
    });
    let b = store.client().await;
    assert_eq!(b.permit_semaphore(&name, 1).available().await.unwrap(), 0, "the dead holder's lease still runs");
    let p = bounded("permit back", Duration::from_secs(10), b.permit_semaphore(&name, 1).acquire()).await.unwrap();
    // Lease 1 s, plus the waiter's re-check and a loaded machine.
    assert!(died.elapsed() < Duration::from_secs(1) + SLACK, "{:?}", died.elapsed());
    p.release().await.unwrap();
}

/// A watchdog permit released by id elsewhere is reported lost by its holder within a
/// renewal period or so (the refused renewal), and its release is `LockLost`.
pub async fn permit_lost_when_released_elsewhere(store: &Store) {
    let name = unique("psem-taken");
    let (a, b) = (store.client().await, store.client().await);
    let p =
        a.permit_semaphore_with(&name, 1, LockOptions::new().lease(Duration::from_secs(1))).acquire().await.unwrap();
    b.permit_semaphore(&name, 1).release(p.id()).await.unwrap();
    // Renewal every ~333 ms; the first refused one fires the signal. 2 s: slack for load,
    // and still inside two lease lengths.
    bounded("lost after release by id", Duration::from_secs(2), p.lost()).await;
    assert!(p.is_lost());
    assert_eq!(p.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    assert_eq!(b.permit_semaphore(&name, 1).available().await.unwrap(), 1);
}

/// `semaphore::size_is_state` for permit semaphores: a 5-permit handle is refused while a
/// 3-permit handle's permit is held, and granted once it is back.
pub async fn permit_size_is_state(store: &Store) {
    use super::semaphore::size_refused;
    let name = unique("psem-size");
    let (a, b) = (store.client().await, store.client().await);
    let (three, five) = (a.permit_semaphore(&name, 3), b.permit_semaphore(&name, 5));
    let p = three.acquire().await.unwrap();
    size_refused("acquire", five.acquire_timeout(Duration::from_secs(2)).await, 3, 5);
    size_refused("try_acquire", five.try_acquire().await, 3, 5);
    size_refused("available", five.available().await, 3, 5);
    size_refused("inspect", five.inspect().await, 3, 5);
    assert_eq!(three.inspect().await.unwrap().permits, Some(3));
    p.release().await.unwrap();
    a.settled().await;
    b.settled().await;
    let q = five.acquire_timeout(Duration::from_secs(10)).await.expect("a permit once every permit is back");
    assert_eq!(five.inspect().await.unwrap().permits, Some(5));
    assert_eq!(five.available().await.unwrap(), 4);
    size_refused("the first size now", three.try_acquire().await, 5, 3);
    q.release().await.unwrap();
}
