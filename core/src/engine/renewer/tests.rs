//! The renewer's unit tests: batching, ttl watching, a slow store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use super::BATCH;
use crate::client::Client;
use crate::error::Result;
use crate::inspect::Inspection;
use crate::key::Key;
use crate::options::{DEFAULT_LEASE, DEFAULT_RENEW, Lease, LockOptions};
use crate::state::{Attempt, Released, Request};
use crate::store::{Store, Subscription, memory::Memory};
use crate::url::StoreUrl;

/// The memory store, counting the watchdog's store calls; its `inspect` (the keeper's
/// question about a ttl lease) answers after `inspect_delay`, as a loaded store would.
#[derive(Debug)]
struct Counting {
    inner: Memory,
    batches: AtomicUsize,
    items: AtomicUsize,
    inspect_delay: Duration,
}

impl Counting {
    fn new(url: &StoreUrl, inspect_delay: Duration) -> std::sync::Arc<Counting> {
        let inner = Memory::open(url).unwrap();
        std::sync::Arc::new(Counting { inner, batches: AtomicUsize::new(0), items: AtomicUsize::new(0), inspect_delay })
    }
}

#[async_trait]
impl Store for Counting {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        self.inner.acquire(key, req).await
    }
    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        self.inner.renew(key, holder, lease).await
    }
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.items.fetch_add(items.len(), Ordering::Relaxed);
        self.inner.renew_many(items, lease).await
    }
    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        self.inner.release(key, holder, count).await
    }
    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        self.inner.leave_queue(key, holder).await
    }
    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Store::subscribe(&self.inner, key).await
    }
    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        tokio::time::sleep(self.inspect_delay).await;
        self.inner.inspect(key).await
    }
}

/// 1 000 watchdog locks taken together are renewed in batches of `BATCH`, and none is
/// lost while renewals go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_leases_are_renewed_in_batches() {
    let url = StoreUrl::parse(&format!("memory://renew-batches-{}", uuid::Uuid::new_v4())).unwrap();
    let counting = Counting::new(&url, Duration::ZERO);
    let defaults = Lease::Watchdog { lease: DEFAULT_LEASE, renew: DEFAULT_RENEW };
    let client = Client::from_backend(counting.clone(), url.clone(), defaults, String::new());
    let opts = LockOptions::new().lease(Duration::from_secs(5)).renew_every(Duration::from_millis(500));
    let mut guards = Vec::new();
    let t0 = tokio::time::Instant::now();
    for i in 0..1000 {
        guards.push(client.lock_with(&format!("l{i}"), opts.clone()).acquire().await.unwrap());
    }
    // (A 5 s lease: renewals delayed by a loaded machine still land in time.)
    // Every lease renewed at least twice: about 1.2 s on an idle machine; the bound
    // (20 s) only stops a hung renewer, as a loaded 2-core machine may delay the timers.
    while counting.items.load(Ordering::Relaxed) < 2000 && t0.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (batches, items) = (counting.batches.load(Ordering::Relaxed), counting.items.load(Ordering::Relaxed));
    assert!(items >= 2000, "expected ≥ 2 renewals per lease, got {items} renewals");
    // Twice the full batches, plus a few partial ones per renewal period (a period's
    // due leases can fall into up to three windows) for each period that has passed,
    // plus 10 for timers a loaded machine fires apart: an idle machine sends 29–34 for
    // 2 000 renewals, one with a build just ended beside it 40. Unbatched is 2 000.
    let periods = t0.elapsed().as_millis() as usize / 500 + 2;
    assert!(batches <= 2 * items / BATCH + 3 * periods + 10, "{batches} batches for {items} renewals: not batched");
    assert!(guards.iter().all(|g| !g.is_lost()));
    let other = Client::connect(&url.to_string()).await.unwrap();
    assert!(other.lock("l0").try_acquire().await.unwrap().is_none());
    drop(guards);
}

/// Ttl leases start no task of their own: 1 000 of them are watched by the client's
/// one keeper task, and each still fires its lost signal when it runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_leases_share_the_keeper_task() {
    let client = Client::connect(&format!("memory://ttl-keeper-{}", uuid::Uuid::new_v4())).await.unwrap();
    // A first grant starts the client's tasks (the keeper among them).
    let first = client.lock_with("warm", LockOptions::new().ttl(Duration::from_secs(30))).acquire().await.unwrap();
    let tasks = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let opts = LockOptions::new().ttl(Duration::from_millis(600));
    let mut guards = Vec::new();
    for i in 0..1000 {
        guards.push(client.lock_with(&format!("l{i}"), opts.clone()).acquire().await.unwrap());
    }
    let now = tokio::runtime::Handle::current().metrics().num_alive_tasks();
    assert!(now < tasks + 10, "{} tasks alive for 1 000 ttl leases (from {tasks})", now);
    // Bound: the 600 ms lease plus generous slack for a loaded 2-core machine.
    tokio::time::timeout(Duration::from_secs(10), async {
        for g in &guards {
            g.lost().await;
        }
    })
    .await
    .expect("every ttl lease reported lost");
    assert!(!first.is_lost());
}

/// A ttl lease extended from another client stays held when the store takes 300 ms to
/// answer the keeper's question (asked a quarter of the 4 s lease, 1 s, ahead; at
/// 250 ms ahead the answer came after the deadline and the lease read as lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_from_elsewhere_counts_from_a_slow_store() {
    let url = StoreUrl::parse(&format!("memory://ttl-slow-{}", uuid::Uuid::new_v4())).unwrap();
    let defaults = Lease::Watchdog { lease: DEFAULT_LEASE, renew: DEFAULT_RENEW };
    let client =
        Client::from_backend(Counting::new(&url, Duration::from_millis(300)), url.clone(), defaults, String::new());
    let other = Client::connect(&url.to_string()).await.unwrap();
    let p = client.permit_semaphore("p", 1).acquire_lease(Duration::from_secs(4)).await.unwrap();
    // Updated every 500 ms, twelve times: 6 s on a 4 s lease, each update leaving 3.5 s.
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        other.permit_semaphore("p", 1).update_lease(p.id(), Duration::from_secs(4)).await.unwrap();
    }
    assert!(!p.is_lost(), "a lease extended from elsewhere read as lost");
    p.release().await.unwrap();
}

/// An `extend` to a shorter lease than the keeper planned for is watched from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_to_a_shorter_lease_is_watched() {
    let client = Client::connect(&format!("memory://ttl-shorter-{}", uuid::Uuid::new_v4())).await.unwrap();
    let g = client.lock_with("x", LockOptions::new().ttl(Duration::from_secs(60))).acquire().await.unwrap();
    let t0 = tokio::time::Instant::now();
    g.extend(Duration::from_millis(700)).await.unwrap();
    // Bound: 700 ms plus generous slack, far below the first 60 s lease.
    tokio::time::timeout(Duration::from_secs(10), g.lost()).await.expect("lost after the shorter lease");
    // Lost at the local deadline: the lease less the drift margin.
    let lease = Duration::from_millis(700);
    let at_least = lease - crate::store::drift_margin(lease) - Duration::from_millis(10);
    assert!(t0.elapsed() >= at_least, "lost after only {:?}", t0.elapsed());
}
