//! The lease keeper of one client: a single task renews every watchdog lease the client
//! holds, in batches (Redisson's `LockRenewalScheduler`), so holding 10 000 locks costs
//! 10 000 / `BATCH` store calls per period instead of 10 000 tasks and round trips; and it
//! watches the deadline of every explicit-ttl lease, asking the store when one passes.
//! Neither kind of grant starts a task or wakes this one on the hot path (acquire then
//! release well within the lease): one task per ttl grant cost a spawn, a timer and an
//! abort per acquire (BENCHMARKS.md, Node).

use crate::sync::LockExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::rt::{Instant, sleep_until, timeout};
use tokio::sync::Notify;

use super::Held;
use crate::key::Key;
use crate::rt::{AbortOnDrop, Rt};
use crate::store::Store;

/// Leases renewed per store call (Redisson's `lockWatchdogBatchSize`).
pub(crate) const BATCH: usize = 100;

/// How long the store may take to say what is left of a ttl lease whose local deadline
/// passed before the lease counts as lost.
const TTL_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Entry {
    held: Weak<Held>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Renewed with `lease` every `period`, next at `due`.
    Watchdog { lease: Duration, period: Duration, due: Instant },
    /// Not renewed: when its deadline (`Held::deadline`, moved by `extend`) passes, the
    /// store, whose clock is authoritative and which may have seen an extension from
    /// elsewhere (`PermitSemaphore::update_lease`), says whether it still stands
    /// (`checking`: that question is out).
    Ttl { checking: bool },
}

#[derive(Debug, Default)]
struct Shared {
    entries: Mutex<Entries>,
    wake: Notify,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<u64, Entry>,
    /// When the loop looks at the entries next (`None`: not before an `add` wakes it), so
    /// that an `add` wakes it only when it would look too late: one wake-up per acquire
    /// would cost a thread hop and a scan of every entry.
    next_look: Option<Instant>,
}

impl Shared {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.locked()
    }

    /// Inserts `entry`, waking the loop if it would look later than `look`.
    fn insert(&self, id: u64, entry: Entry, look: Instant) {
        let mut entries = self.entries();
        entries.map.insert(id, entry);
        self.look_by(entries, look);
    }

    /// Wakes the loop if it would look later than `at` (the lock is let go first).
    fn look_by(&self, entries: std::sync::MutexGuard<'_, Entries>, at: Instant) {
        let wake = entries.next_look.is_none_or(|next| next > at);
        drop(entries);
        if wake {
            self.wake.notify_one();
        }
    }
}

/// Registers watchdog leases and renews them; watches ttl leases.
#[derive(Debug)]
pub(crate) struct Renewer {
    shared: Arc<Shared>,
    _task: AbortOnDrop<()>,
}

impl Renewer {
    pub(crate) fn start(rt: &Rt, backend: Arc<dyn Store>) -> Renewer {
        let shared = Arc::new(Shared::default());
        let task = AbortOnDrop(rt.spawn(run(shared.clone(), backend)));
        Renewer { shared, _task: task }
    }

    /// Starts renewing `held` every `period` with `lease`, first at `started + period`.
    pub(crate) fn add(&self, held: &Arc<Held>, lease: Duration, period: Duration, started: Instant) {
        let due = started + period;
        // When `collect` takes it (it renews a third of a period early).
        let look = due.checked_sub(period / 3).unwrap_or(due);
        let entry = Entry { held: Arc::downgrade(held), kind: Kind::Watchdog { lease, period, due } };
        self.shared.insert(held.live_id, entry, look);
    }

    /// Watches the explicit-ttl lease of `held`: fires its lost signal once its deadline
    /// has passed and the store no longer holds it.
    pub(crate) fn watch_ttl(&self, held: &Arc<Held>) {
        let entry = Entry { held: Arc::downgrade(held), kind: Kind::Ttl { checking: false } };
        self.shared.insert(held.live_id, entry, held.deadline());
    }

    /// A deadline moved (an `extend`): the loop must look by `at` (a shorter lease).
    pub(crate) fn look_by(&self, at: Instant) {
        self.shared.look_by(self.shared.entries(), at);
    }

    /// Stops renewing the grant `live_id`.
    pub(crate) fn remove(&self, live_id: u64) {
        self.shared.entries().map.remove(&live_id);
    }
}

/// One renewal due now.
struct Due {
    id: u64,
    held: Arc<Held>,
    lease: Duration,
    period: Duration,
}

/// The renewal loop; ends when the `Renewer` (and so its `AbortOnDrop`) is dropped.
async fn run(shared: Arc<Shared>, backend: Arc<dyn Store>) {
    loop {
        let notified = shared.wake.notified();
        let Look { due, expired, next } = collect(&shared);
        // Each on its own: a store slow to answer must not hold up the renewals.
        for (id, held) in expired {
            crate::rt::spawn(check_ttl(shared.clone(), backend.clone(), id, held));
        }
        if due.is_empty() {
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = sleep_until(at) => {}
                        _ = notified => {}
                    }
                }
                None => notified.await,
            }
            continue;
        }
        renew(&shared, &*backend, due).await;
    }
}

/// What one look at the entries found.
struct Look {
    /// Watchdog renewals to send now.
    due: Vec<Due>,
    /// Ttl leases to ask the store about (live id, grant).
    expired: Vec<(u64, Arc<Held>)>,
    /// When the next entry falls due.
    next: Option<Instant>,
}

/// Takes the watchdog entries due now or within the next third of their period (renewing
/// a little early so that leases granted at different moments share batches) and the ttl
/// entries whose deadline passed, and the time the next one falls due.
fn collect(s: &Shared) -> Look {
    let now = Instant::now();
    let mut entries = s.entries();
    entries.map.retain(|_, e| e.held.strong_count() > 0);
    let (mut due, mut expired) = (Vec::new(), Vec::new());
    let mut next: Option<Instant> = None;
    let mut later = |at: Instant| next = Some(next.map_or(at, |n: Instant| n.min(at)));
    for (id, e) in entries.map.iter_mut() {
        let Some(held) = e.held.upgrade() else { continue };
        match &mut e.kind {
            Kind::Watchdog { lease, period, due: at } => {
                if *at <= now + *period / 3 {
                    due.push(Due { id: *id, held, lease: *lease, period: *period });
                } else {
                    later(*at);
                }
            }
            Kind::Ttl { checking: true } => {}
            Kind::Ttl { checking } => {
                let at = held.deadline();
                if at <= now {
                    *checking = true;
                    expired.push((*id, held));
                } else {
                    later(at);
                }
            }
        }
    }
    // With renewals due, the loop looks again as soon as they are sent.
    entries.next_look = if due.is_empty() { next } else { Some(now) };
    Look { due, expired, next }
}

/// Asks the store about a ttl lease whose local deadline passed: still held (extended
/// from elsewhere, or the local deadline was conservative) moves the deadline to what the
/// store says is left; gone, or no answer in time, fires the lost signal.
async fn check_ttl(shared: Arc<Shared>, backend: Arc<dyn Store>, id: u64, held: Arc<Held>) {
    let left = lease_left(&*backend, &held.key, &held.holder).await;
    let mut entries = shared.entries();
    // Released meanwhile: nothing to report.
    let Some(entry) = entries.map.get_mut(&id) else { return };
    match left {
        Some(left) => {
            let at = Instant::now() + left;
            held.set_deadline(at);
            entry.kind = Kind::Ttl { checking: false };
            shared.look_by(entries, at);
        }
        None => {
            entries.map.remove(&id);
            drop(entries);
            held.mark_lost();
        }
    }
}

/// What the store says is left of `holder`'s lease (`None`: gone, or no answer in time).
async fn lease_left(backend: &dyn Store, key: &Key, holder: &str) -> Option<Duration> {
    let info = timeout(TTL_CHECK_TIMEOUT, backend.inspect(key)).await.ok()?.ok()?;
    let left = info.holders.iter().find(|h| h.owner == holder)?.lease_left?;
    (!left.is_zero()).then_some(left)
}

async fn renew(shared: &Shared, backend: &dyn Store, mut due: Vec<Due>) {
    due.sort_by_key(|d| d.lease);
    for chunk in due.chunk_by(|a, b| a.lease == b.lease).flat_map(|c| c.chunks(BATCH)) {
        let lease = chunk[0].lease;
        let items: Vec<(Key, String)> = chunk.iter().map(|d| (d.held.key.clone(), d.held.holder.clone())).collect();
        let sent = Instant::now();
        // A batch that hangs past the lease is as good as a failed one.
        let out = match timeout(lease, backend.renew_many(&items, lease)).await {
            Ok(Ok(v)) if v.len() == items.len() => Some(v),
            _ => None,
        };
        let renewed = out.as_ref().map_or(0, |v| v.iter().filter(|ok| **ok).count());
        crate::observe::renewals(renewed, chunk.len() - renewed);
        let mut entries = shared.entries();
        for (i, d) in chunk.iter().enumerate() {
            let Some(Entry { kind: Kind::Watchdog { due, .. }, .. }) = entries.map.get_mut(&d.id) else { continue };
            match out.as_ref().map(|v| v[i]) {
                Some(true) => {
                    d.held.extended(sent, lease);
                    *due = sent + d.period;
                }
                Some(false) => {
                    d.held.mark_lost();
                    entries.map.remove(&d.id);
                }
                None if Instant::now() >= d.held.deadline() => {
                    d.held.mark_lost();
                    entries.map.remove(&d.id);
                }
                // Failed but the lease may still stand: retry sooner than a full period.
                None => *due = Instant::now() + (d.period / 4).max(Duration::from_millis(50)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;

    use super::BATCH;
    use crate::error::Result;
    use crate::inspect::Inspection;
    use crate::key::Key;
    use crate::state::{Attempt, Released, Request};
    use crate::store::{Store, Subscription, memory::Memory};
    use crate::{Client, DEFAULT_LEASE, DEFAULT_RENEW, Lease, LockOptions, StoreUrl};

    /// The memory store, counting the watchdog's store calls.
    #[derive(Debug)]
    struct Counting {
        inner: Memory,
        batches: AtomicUsize,
        items: AtomicUsize,
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
            self.inner.inspect(key).await
        }
    }

    /// 1 000 watchdog locks taken together are renewed in batches of `BATCH`, and none is
    /// lost while renewals go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_leases_are_renewed_in_batches() {
        let url = StoreUrl::parse(&format!("memory://renew-batches-{}", uuid::Uuid::new_v4())).unwrap();
        let counting = std::sync::Arc::new(Counting {
            inner: Memory::open(&url).unwrap(),
            batches: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
        });
        let defaults = Lease::Watchdog { lease: DEFAULT_LEASE, renew: DEFAULT_RENEW };
        let client = Client::from_backend(counting.clone(), url.clone(), defaults, String::new());
        let opts = LockOptions::new().lease(Duration::from_millis(1500)).renew_every(Duration::from_millis(500));
        let mut guards = Vec::new();
        for i in 0..1000 {
            guards.push(client.lock_with(&format!("l{i}"), opts.clone()).acquire().await.unwrap());
        }
        // Three renewal periods and a bit: every lease renewed at least twice.
        tokio::time::sleep(Duration::from_millis(1700)).await;
        let (batches, items) = (counting.batches.load(Ordering::Relaxed), counting.items.load(Ordering::Relaxed));
        assert!(items >= 2000, "expected ≥ 2 renewals per lease, got {items} renewals");
        // Full batches, plus at most a few partial ones per period (three windows per period,
        // about four periods elapsed).
        assert!(batches <= items / BATCH + 12, "{batches} batches for {items} renewals: not batched");
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

    /// An `extend` to a shorter lease than the keeper planned for is watched from then on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn extend_to_a_shorter_lease_is_watched() {
        let client = Client::connect(&format!("memory://ttl-shorter-{}", uuid::Uuid::new_v4())).await.unwrap();
        let g = client.lock_with("x", LockOptions::new().ttl(Duration::from_secs(60))).acquire().await.unwrap();
        let t0 = tokio::time::Instant::now();
        g.extend(Duration::from_millis(700)).await.unwrap();
        // Bound: 700 ms plus generous slack, far below the first 60 s lease.
        tokio::time::timeout(Duration::from_secs(10), g.lost()).await.expect("lost after the shorter lease");
        assert!(t0.elapsed() >= Duration::from_millis(690), "lost after only {:?}", t0.elapsed());
    }
}
