//! The watchdog of one client: a single task renews every watchdog lease the client
//! holds, in batches (Redisson's `LockRenewalScheduler`), so holding 10 000 locks costs
//! 10 000 / `BATCH` store calls per period instead of 10 000 tasks and round trips.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until, timeout};

use super::Held;
use crate::backend::{Backend, Key};
use crate::rt::{AbortOnDrop, Rt};

/// Leases renewed per store call (Redisson's `lockWatchdogBatchSize`).
pub(crate) const BATCH: usize = 100;

#[derive(Debug)]
struct Entry {
    held: Weak<Held>,
    lease: Duration,
    period: Duration,
    due: Instant,
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
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Registers watchdog leases and renews them.
#[derive(Debug)]
pub(crate) struct Renewer {
    shared: Arc<Shared>,
    _task: AbortOnDrop<()>,
}

impl Renewer {
    pub(crate) fn start(rt: &Rt, backend: Arc<dyn Backend>) -> Renewer {
        let shared = Arc::new(Shared::default());
        let task = AbortOnDrop(rt.spawn(run(shared.clone(), backend)));
        Renewer { shared, _task: task }
    }

    /// Starts renewing `held` every `period` with `lease`, first at `started + period`.
    pub(crate) fn add(&self, held: &Arc<Held>, lease: Duration, period: Duration, started: Instant) {
        let due = started + period;
        // When `collect` takes it (it renews a third of a period early).
        let look = due.checked_sub(period / 3).unwrap_or(due);
        let mut entries = self.shared.entries();
        entries.map.insert(held.live_id, Entry { held: Arc::downgrade(held), lease, period, due });
        let wake = entries.next_look.is_none_or(|at| at > look);
        drop(entries);
        if wake {
            self.shared.wake.notify_one();
        }
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
async fn run(shared: Arc<Shared>, backend: Arc<dyn Backend>) {
    loop {
        let notified = shared.wake.notified();
        let (due, next) = collect(&shared);
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

/// Takes the entries due now or within the next third of their period (renewing a little
/// early so that leases granted at different moments share batches), and the time the
/// next one falls due.
fn collect(s: &Shared) -> (Vec<Due>, Option<Instant>) {
    let now = Instant::now();
    let mut entries = s.entries();
    entries.map.retain(|_, e| e.held.strong_count() > 0);
    let mut due = Vec::new();
    let mut next: Option<Instant> = None;
    for (id, e) in entries.map.iter() {
        if e.due <= now + e.period / 3 {
            if let Some(held) = e.held.upgrade() {
                due.push(Due { id: *id, held, lease: e.lease, period: e.period });
            }
        } else {
            next = Some(next.map_or(e.due, |n| n.min(e.due)));
        }
    }
    // With renewals due, the loop looks again as soon as they are sent.
    entries.next_look = if due.is_empty() { next } else { Some(now) };
    (due, next)
}

async fn renew(shared: &Shared, backend: &dyn Backend, mut due: Vec<Due>) {
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
            let Some(e) = entries.map.get_mut(&d.id) else { continue };
            match out.as_ref().map(|v| v[i]) {
                Some(true) => {
                    d.held.extended(sent, lease);
                    e.due = sent + d.period;
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
                None => e.due = Instant::now() + (d.period / 4).max(Duration::from_millis(50)),
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
    use crate::backend::{Backend, Key, Subscription, memory::Memory};
    use crate::error::Result;
    use crate::inspect::Inspection;
    use crate::state::{Attempt, Released, Request};
    use crate::{Client, DEFAULT_LEASE, DEFAULT_RENEW, Lease, LockOptions, StoreUrl};

    /// The memory store, counting the watchdog's store calls.
    #[derive(Debug)]
    struct Counting {
        inner: Memory,
        batches: AtomicUsize,
        items: AtomicUsize,
    }

    #[async_trait]
    impl Backend for Counting {
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
            Backend::subscribe(&self.inner, key).await
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
}
