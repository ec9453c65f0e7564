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

use crate::rt::{Instant, sleep_until, timeout, timeout_at};
use tokio::sync::Notify;

use super::Held;
use crate::key::Key;
use crate::rt::{AbortOnDrop, Rt};
use crate::store::Store;

/// Leases renewed per store call (Redisson's `lockWatchdogBatchSize`).
pub(crate) const BATCH: usize = 100;

#[derive(Debug)]
struct Entry {
    held: Weak<Held>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Renewed with `lease` every `period`, next at `due`; `sending`: a renewal is out.
    /// Whatever a renewal still out may bring, the lease counts as lost once its local
    /// deadline (`Held::deadline`, moved only by answered renewals) passes.
    Watchdog { lease: Duration, period: Duration, due: Instant, sending: bool },
    /// Not renewed: lost when its deadline (`Held::deadline`, moved by `extend`) passes,
    /// unless the store, asked a little before (`checking`: that question is out), says
    /// the lease was extended from elsewhere (`PermitSemaphore::update_lease`). `settled`:
    /// the deadline the store last confirmed unchanged, not asked about again.
    /// `again`: asked too early to tell, asked again then. `ahead`: how long before the
    /// deadline it is first asked (`ask_ahead`).
    Ttl { checking: bool, settled: Option<Instant>, again: Option<Instant>, ahead: Duration },
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
    fn look_by(&self, mut entries: std::sync::MutexGuard<'_, Entries>, at: Instant) {
        let wake = entries.next_look.is_none_or(|next| next > at);
        if wake {
            entries.next_look = Some(at);
        }
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
    pub(crate) fn start(rt: &Rt, store: Arc<dyn Store>) -> Renewer {
        let shared = Arc::new(Shared::default());
        let task = AbortOnDrop(rt.spawn(run(shared.clone(), store)));
        Renewer { shared, _task: task }
    }

    /// Starts renewing `held` every `period` with `lease`, first at `started + period`.
    pub(crate) fn add(&self, held: &Arc<Held>, lease: Duration, period: Duration, started: Instant) {
        let due = started + period;
        // When `collect` takes it (it renews a third of a period early).
        let look = due.checked_sub(period / 3).unwrap_or(due).min(held.deadline());
        let entry = Entry { held: Arc::downgrade(held), kind: Kind::Watchdog { lease, period, due, sending: false } };
        self.shared.insert(held.live_id, entry, look);
    }

    /// Watches the explicit-ttl lease of `held` (of length `lease`): fires its lost signal
    /// once its deadline has passed and the store has not said that it was extended.
    pub(crate) fn watch_ttl(&self, held: &Arc<Held>, lease: Duration) {
        let ahead = ask_ahead(lease);
        let kind = Kind::Ttl { checking: false, settled: None, again: None, ahead };
        self.shared.insert(held.live_id, Entry { held: Arc::downgrade(held), kind }, ask_at(held.deadline(), ahead));
    }

    /// A deadline moved (an `extend`): the loop must look by `at` (a shorter lease), as
    /// early as any ttl lease is first asked about.
    pub(crate) fn look_by(&self, at: Instant) {
        self.shared.look_by(self.shared.entries(), ask_at(at, TTL_ASK_AHEAD_MAX));
    }

    /// Stops renewing the grant `live_id`.
    pub(crate) fn remove(&self, live_id: u64) {
        self.shared.entries().map.remove(&live_id);
    }
}

/// How long before a ttl lease's local deadline the store is first asked whether it was
/// extended elsewhere: a quarter of the lease, within these bounds. An answer must arrive
/// before the deadline to count, and on a loaded host one store read can take several
/// hundred ms (etcd over TLS beside two test groups: a 3 s permit updated every 600 ms
/// from another client was reported lost when 250 ms ahead was all its answer had).
const TTL_ASK_AHEAD_MIN: Duration = Duration::from_millis(250);
const TTL_ASK_AHEAD_MAX: Duration = Duration::from_secs(1);

/// How soon a store that could not tell is asked again, before the deadline; and, after a
/// first question asked early, not again before `TTL_ASK_AHEAD_MIN` ahead of it (the
/// number of questions stays that of a 250 ms lead).
const TTL_ASK_AGAIN: Duration = Duration::from_millis(100);

fn ask_ahead(lease: Duration) -> Duration {
    (lease / 4).clamp(TTL_ASK_AHEAD_MIN, TTL_ASK_AHEAD_MAX)
}

fn ask_at(deadline: Instant, ahead: Duration) -> Instant {
    deadline.checked_sub(ahead).unwrap_or(deadline)
}

/// One renewal due now.
struct Due {
    id: u64,
    held: Arc<Held>,
    lease: Duration,
    period: Duration,
}

/// The renewal loop; ends when the `Renewer` (and so its `AbortOnDrop`) is dropped.
async fn run(shared: Arc<Shared>, store: Arc<dyn Store>) {
    loop {
        let notified = shared.wake.notified();
        let Look { due, ask, next } = collect(&shared);
        // Each on its own: a store slow to answer must hold up neither the other
        // renewals nor this loop, which fires the lost signals at the deadlines.
        for (id, held) in ask {
            crate::rt::spawn(check_ttl(shared.clone(), store.clone(), id, held));
        }
        if !due.is_empty() {
            crate::rt::spawn(renew(shared.clone(), store.clone(), due));
        }
        match next {
            Some(at) => {
                tokio::select! {
                    _ = sleep_until(at) => {}
                    _ = notified => {}
                }
            }
            None => notified.await,
        }
    }
}

/// What one look at the entries found.
struct Look {
    /// Watchdog renewals to send now.
    due: Vec<Due>,
    /// Ttl leases to ask the store about (live id, grant).
    ask: Vec<(u64, Arc<Held>)>,
    /// When the loop must look again.
    next: Option<Instant>,
}

/// Fires the lost signal of every lease whose local deadline passed; takes the watchdog
/// entries due now or within the next third of their period (renewing a little early so
/// that leases granted at different moments share batches) and the ttl entries near their
/// deadline; and says when to look next.
fn collect(s: &Shared) -> Look {
    let now = Instant::now();
    let mut entries = s.entries();
    let (mut due, mut ask, mut lapsed) = (Vec::new(), Vec::new(), Vec::new());
    let mut next: Option<Instant> = None;
    let mut later = |at: Instant| next = Some(next.map_or(at, |n: Instant| n.min(at)));
    entries.map.retain(|id, e| {
        let Some(held) = e.held.upgrade() else { return false };
        let end = held.deadline();
        if end <= now {
            lapsed.push(held);
            return false;
        }
        later(end);
        match &mut e.kind {
            Kind::Watchdog { sending: true, .. } => {}
            Kind::Watchdog { lease, period, due: at, sending } => {
                if *at <= now + *period / 3 {
                    *sending = true;
                    due.push(Due { id: *id, held, lease: *lease, period: *period });
                } else {
                    later(*at - *period / 3);
                }
            }
            Kind::Ttl { checking: true, .. } => {}
            Kind::Ttl { settled: Some(at), .. } if *at == end => {}
            Kind::Ttl { checking, again, ahead, .. } => {
                let at = again.unwrap_or_else(|| ask_at(end, *ahead));
                if at <= now {
                    *checking = true;
                    ask.push((*id, held));
                } else {
                    later(at);
                }
            }
        }
        true
    });
    entries.next_look = next;
    drop(entries);
    for held in lapsed {
        held.mark_lost();
    }
    Look { due, ask, next }
}

/// Asks the store about a ttl lease near its local deadline: an answer that arrives in
/// time and moves the lease's end later (an extension from elsewhere) moves the local
/// deadline; gone fires the lost signal; otherwise the deadline stands.
async fn check_ttl(shared: Arc<Shared>, store: Arc<dyn Store>, id: u64, held: Arc<Held>) {
    let (sent, end) = (Instant::now(), held.deadline());
    let left = timeout_at(end, lease_left(&*store, &held.key, &held.holder)).await;
    let mut entries = shared.entries();
    // Released or lapsed meanwhile: nothing to report.
    let Some(entry) = entries.map.get_mut(&id) else { return };
    let Kind::Ttl { ahead, .. } = entry.kind else { return };
    let mut settled = Some(end);
    let mut again = None;
    match left {
        Ok(Some(Some(left))) => {
            let later = super::local_end(&*store, sent, left);
            if later > end && held.deadline() == end {
                held.set_deadline(later);
                settled = None;
            } else {
                // Still held, no later than planned as far as the store can tell (etcd
                // counts whole seconds): an extension may yet land before the deadline.
                let next = (Instant::now() + TTL_ASK_AGAIN).max(ask_at(end, TTL_ASK_AHEAD_MIN));
                if next < end {
                    settled = None;
                    again = Some(next);
                }
            }
        }
        Ok(Some(None)) => {
            entries.map.remove(&id);
            drop(entries);
            held.mark_lost();
            return;
        }
        // No answer in time, or an error: the deadline stands.
        Ok(None) | Err(_) => {}
    }
    entry.kind = Kind::Ttl { checking: false, settled, again, ahead };
    let at = again.unwrap_or_else(|| ask_at(held.deadline(), ahead));
    shared.look_by(entries, at);
}

/// What the store says is left of `holder`'s lease: `Some(None)` when it holds nothing,
/// `Some(Some(left))` when it holds (zero when the store cannot tell: etcd reports whole
/// seconds), `None` with no answer.
async fn lease_left(store: &dyn Store, key: &Key, holder: &str) -> Option<Option<Duration>> {
    let info = store.inspect(key).await.ok()?;
    Some(info.holders.iter().find(|h| h.owner == holder).map(|h| h.lease_left.unwrap_or_default()))
}

/// Sends one set of renewals. Each batch waits for its answer at most one renewal period
/// (then it is retried, perhaps over a new connection); an answer counts from the moment
/// its request was sent, and only while the grant is still live.
async fn renew(shared: Arc<Shared>, store: Arc<dyn Store>, mut due: Vec<Due>) {
    due.sort_by_key(|d| (d.lease, d.period));
    for chunk in due.chunk_by(|a, b| a.lease == b.lease).flat_map(|c| c.chunks(BATCH)) {
        let lease = chunk[0].lease;
        let patience = chunk.iter().map(|d| d.period).min().unwrap_or(lease).max(Duration::from_millis(100));
        let items: Vec<(Key, String)> = chunk.iter().map(|d| (d.held.key.clone(), d.held.holder.clone())).collect();
        let sent = Instant::now();
        let out = match timeout(patience, store.renew_many(&items, lease)).await {
            Ok(Ok(v)) if v.len() == items.len() => Some(v),
            _ => None,
        };
        let renewed = out.as_ref().map_or(0, |v| v.iter().filter(|ok| **ok).count());
        crate::observe::renewals(renewed, chunk.len() - renewed);
        let mut entries = shared.entries();
        let mut lost = Vec::new();
        let mut look: Option<Instant> = None;
        for (i, d) in chunk.iter().enumerate() {
            let Some(Entry { kind: Kind::Watchdog { due, sending, .. }, .. }) = entries.map.get_mut(&d.id) else {
                continue;
            };
            *sending = false;
            let next = match out.as_ref().map(|v| v[i]) {
                Some(true) if !d.held.lost.is_cancelled() => {
                    d.held.extended(sent, lease);
                    sent + d.period
                }
                Some(_) => {
                    entries.map.remove(&d.id);
                    lost.push(d.held.clone());
                    continue;
                }
                // Failed but the lease may still stand: retry sooner than a full period.
                None => Instant::now() + (d.period / 4).max(Duration::from_millis(50)),
            };
            *due = next;
            let at = next.checked_sub(d.period / 3).unwrap_or(next);
            look = Some(look.map_or(at, |l| l.min(at)));
        }
        match look {
            Some(at) => shared.look_by(entries, at),
            None => drop(entries),
        }
        for held in lost {
            held.mark_lost();
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
            std::sync::Arc::new(Counting {
                inner,
                batches: AtomicUsize::new(0),
                items: AtomicUsize::new(0),
                inspect_delay,
            })
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
        let at_least = lease - crate::engine::drift_margin(lease) - Duration::from_millis(10);
        assert!(t0.elapsed() >= at_least, "lost after only {:?}", t0.elapsed());
    }
}
