//! The lease keeper of one client: a single task renews every watchdog lease the client
//! holds, in batches (Redisson's `LockRenewalScheduler`), so holding 10 000 locks costs
//! 10 000 / `BATCH` store calls per period instead of 10 000 tasks and round trips; and it
//! watches the deadline of every explicit-ttl lease, asking the store when one passes.
//! Neither kind of grant starts a task or wakes this one on the hot path (acquire then
//! release well within the lease): one task per ttl grant cost a spawn, a timer and an
//! abort per acquire. `ttl` asks the store about the ttl leases, `batch` sends the
//! watchdog's renewals.

mod batch;
mod ttl;

use crate::sync::LockExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::rt::{Instant, sleep_until};
use tokio::sync::Notify;

use super::Held;
use crate::rt::{AbortOnDrop, Rt};
use crate::store::Store;
use batch::{Due, renew};
use ttl::{TTL_ASK_AHEAD_MAX, ask_ahead, ask_at, check_ttl};

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

#[cfg(test)]
mod tests;
