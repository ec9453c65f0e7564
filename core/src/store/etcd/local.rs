//! What this process knows of its own contenders (the lock queue's, and the RwLock and
//! semaphore keys' through `keyed`), so that most steps
//! need no read: per (lock prefix, holder) one [`Waiter`] record, and per lock when a
//! read last found its queue busy.

use std::collections::HashMap;
use std::collections::hash_map::Entry as Slot;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::rt::Instant;

use tokio::sync::watch;

use super::keys::{Entry, LockKeys};
use super::session::Sessions;
use super::transport::{Kv, Transport};
use crate::sync::LockExt;

/// What this client knows of its own keys: its contenders' records and its session leases.
#[derive(Debug)]
pub(crate) struct Local {
    pub(crate) sessions: Sessions,
    /// By (lock prefix, holder); a record with nothing left in it is removed.
    waiters: Mutex<HashMap<(Vec<u8>, String), Waiter>>,
    /// When a read last found each queue busy (by lock prefix: any holder's read counts).
    busy: Mutex<HashMap<Vec<u8>, Instant>>,
    /// Waits ended by their predecessor's deletion, and how many of those by a watch
    /// event (the rest found it gone on their first read): tests count them.
    pub(crate) wakes: AtomicU64,
    pub(crate) wake_events: AtomicU64,
}

/// One holder's contender on one lock, as this process last saw and wrote it.
#[derive(Debug, Default)]
struct Waiter {
    /// The queue leases created for its keys, each with when it was last refreshed.
    queue: Vec<(i64, Instant)>,
    /// Until when each of its queue leases surely lives (its last keep-alive's, or its
    /// grant's, send time plus its ttl).
    alive: Vec<(i64, Instant)>,
    /// The key of its grant, as last written.
    held: Option<Kv>,
    /// Its predecessor, the holder, just went.
    hinted: bool,
    /// Its predecessor as its last attempt read it: that key, the revision of the read,
    /// whether the predecessor is the head.
    seen: Option<(Vec<u8>, i64, bool)>,
    /// Its own key as its last attempt read it.
    mine: Option<Kv>,
    /// A hand-off grant whose key is moving to the session lease.
    moving: Option<Moving>,
}

impl Waiter {
    fn is_empty(&self) -> bool {
        self.queue.is_empty()
            && self.alive.is_empty()
            && self.held.is_none()
            && !self.hinted
            && self.seen.is_none()
            && self.mine.is_none()
            && self.moving.is_none()
    }
}

/// What became of the move of a hand-off grant's key (see `handoff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moved {
    Pending,
    /// Under the session lease; the key's new mod revision.
    Done(i64),
    /// Not moved in time, or the key was gone: the hold is lost.
    Failed,
}

/// A hand-off grant whose key is moving.
#[derive(Debug)]
pub(crate) struct Moving {
    pub(crate) rx: watch::Receiver<Moved>,
    /// Until when the key surely lives on its queue lease.
    pub(crate) safe_until: Instant,
    /// The key as the move writes it (its mod revision comes with `Done`).
    pub(crate) kv: Kv,
}

impl Local {
    pub(crate) fn new(t: Arc<dyn Transport>) -> Local {
        Local {
            sessions: Sessions::new(t),
            waiters: Mutex::default(),
            busy: Mutex::default(),
            wakes: AtomicU64::new(0),
            wake_events: AtomicU64::new(0),
        }
    }

    /// Runs `f` on the record of `holder` on `prefix` (a new one if none), then drops the
    /// record if nothing is left in it.
    fn with<R>(&self, prefix: &[u8], holder: &str, f: impl FnOnce(&mut Waiter) -> R) -> R {
        let mut m = self.waiters.locked();
        match m.entry((prefix.to_vec(), holder.to_owned())) {
            Slot::Occupied(mut o) => {
                let r = f(o.get_mut());
                if o.get().is_empty() {
                    o.remove();
                }
                r
            }
            Slot::Vacant(v) => {
                let mut w = Waiter::default();
                let r = f(&mut w);
                if !w.is_empty() {
                    v.insert(w);
                }
                r
            }
        }
    }

    /// Reads the record of `holder` on `prefix`, if any.
    fn peek<R>(&self, prefix: &[u8], holder: &str, f: impl FnOnce(&Waiter) -> R) -> Option<R> {
        self.waiters.locked().get(&(prefix.to_vec(), holder.to_owned())).map(f)
    }

    pub(crate) fn hold(&self, prefix: &[u8], holder: &str, kv: Kv) {
        self.with(prefix, holder, |w| w.held = Some(kv));
    }

    pub(crate) fn take_hold(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        self.with(prefix, holder, |w| w.held.take())
    }

    pub(crate) fn known_hold(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        self.peek(prefix, holder, |w| w.held.clone()).flatten()
    }

    /// Notes that `holder`'s queue `lease` (of `ttl_s` seconds) lives at least until
    /// `sent` (when its grant or last keep-alive was sent) plus its ttl.
    pub(crate) fn alive(&self, prefix: &[u8], holder: &str, lease: i64, sent: Instant, ttl_s: i64) {
        let until = sent + Duration::from_secs(u64::try_from(ttl_s).unwrap_or(0));
        self.with(prefix, holder, |w| {
            w.alive.retain(|(l, _)| *l != lease);
            w.alive.push((lease, until));
        });
    }

    pub(crate) fn alive_until(&self, prefix: &[u8], holder: &str, lease: i64) -> Option<Instant> {
        self.peek(prefix, holder, |w| w.alive.iter().find(|(l, _)| *l == lease).map(|(_, at)| *at)).flatten()
    }

    pub(crate) fn moving(&self, prefix: &[u8], holder: &str, m: Moving) {
        self.with(prefix, holder, |w| w.moving = Some(m));
    }

    /// The key of `holder`'s hand-off grant that may still be moving, taken; one that
    /// moved already becomes a known grant instead (`None`).
    pub(crate) fn take_moving(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        let m = self.with(prefix, holder, |w| w.moving.take())?;
        let moved = *m.rx.borrow();
        match moved {
            Moved::Done(rev) => {
                self.hold(prefix, holder, Kv { mod_revision: rev, ..m.kv });
                None
            }
            Moved::Pending | Moved::Failed => Some(m.kv),
        }
    }

    /// What became of `holder`'s hand-off grant whose key was moving, once it is known (at
    /// the latest when the key could have ended); `None`: there is none. A moved key
    /// becomes a known grant.
    pub(crate) async fn settle(&self, prefix: &[u8], holder: &str) -> Option<Moved> {
        let (mut rx, until) =
            self.peek(prefix, holder, |w| w.moving.as_ref().map(|m| (m.rx.clone(), m.safe_until))).flatten()?;

        let _ = crate::rt::timeout_at(until, rx.wait_for(|m| *m != Moved::Pending)).await;
        let m = self.with(prefix, holder, |w| w.moving.take())?;
        let moved = *m.rx.borrow();
        match moved {
            Moved::Done(rev) => {
                self.hold(prefix, holder, Kv { mod_revision: rev, ..m.kv });
                Some(moved)
            }
            // Still pending when the key could have ended: as good as lost.
            Moved::Pending | Moved::Failed => Some(Moved::Failed),
        }
    }

    /// Notes where `holder` stood in the queue `es` read at `revision`, for its next wait.
    pub(crate) fn saw(&self, keys: &LockKeys, holder: &str, es: &[Entry], revision: i64) {
        let at = es.iter().position(|e| e.is(holder)).filter(|i| *i > 0);
        self.with(&keys.prefix, holder, |w| {
            w.mine = at.map(|i| es[i].kv.clone());
            w.seen = at.map(|i| (es[i - 1].kv.key.clone(), revision, i == 1));
        });
    }

    /// Where the last attempt of `holder` saw it stand (its predecessor, the revision of
    /// that read, whether the predecessor is the head); taken once.
    pub(crate) fn last_seen(&self, prefix: &[u8], holder: &str) -> Option<(Vec<u8>, i64, bool)> {
        self.with(prefix, holder, |w| w.seen.take())
    }

    pub(crate) fn busy(&self, prefix: &[u8], busy: bool) {
        let mut m = self.busy.locked();
        if busy {
            m.insert(prefix.to_vec(), Instant::now());
        } else {
            m.remove(prefix);
        }
    }

    /// Whether a read found the queue busy within the last 100 ms.
    pub(crate) fn busy_lately(&self, prefix: &[u8]) -> bool {
        let m = self.busy.locked();
        m.get(prefix).is_some_and(|at| at.elapsed() < Duration::from_millis(100))
    }

    /// Whether this process knows of a key of `holder` (waiting or granted).
    pub(crate) fn knows(&self, prefix: &[u8], holder: &str) -> bool {
        self.peek(prefix, holder, |w| !w.queue.is_empty() || w.held.is_some()).unwrap_or(false)
    }

    /// A waiter whose last attempt found it behind a predecessor, not yet waited on, with
    /// a queue place that needs no refresh yet.
    pub(crate) fn settled_waiter(&self, prefix: &[u8], holder: &str) -> bool {
        self.peek(prefix, holder, |w| {
            w.seen.is_some() && w.queue.last().is_some_and(|(_, at)| at.elapsed() < Duration::from_millis(500))
        })
        .unwrap_or(false)
    }

    /// Notes that `holder`'s predecessor was the holder and went.
    pub(crate) fn hint(&self, prefix: &[u8], holder: &str) {
        self.with(prefix, holder, |w| w.hinted = true);
    }

    /// The waiter's own key, when its predecessor was the head and went: it is the head
    /// now (keys only ever join at the back), so no read is needed to grant it. Takes
    /// the hint only then.
    pub(crate) fn hinted_own(&self, prefix: &[u8], holder: &str) -> Option<Kv> {
        self.with(prefix, holder, |w| {
            if !w.hinted {
                return None;
            }
            let kv = w.mine.take()?;
            w.hinted = false;
            Some(kv)
        })
    }

    pub(crate) fn take_hint(&self, prefix: &[u8], holder: &str) -> bool {
        self.with(prefix, holder, |w| std::mem::take(&mut w.hinted))
    }

    /// Notes a queue lease of `holder`'s, before its key exists (so that a `leave_queue`
    /// racing the attempt can end it).
    pub(crate) fn remember(&self, prefix: &[u8], holder: &str, lease: i64) {
        self.with(prefix, holder, |w| w.queue.push((lease, Instant::now())));
    }

    pub(crate) fn forget(&self, prefix: &[u8], holder: &str, lease: i64) {
        self.with(prefix, holder, |w| {
            w.alive.retain(|(l, _)| *l != lease);
            w.queue.retain(|(l, _)| *l != lease);
        });
    }

    /// `holder`'s queue leases, taken.
    pub(crate) fn take(&self, prefix: &[u8], holder: &str) -> Vec<i64> {
        self.with(prefix, holder, |w| {
            let leases: Vec<i64> = std::mem::take(&mut w.queue).into_iter().map(|(l, _)| l).collect();
            w.alive.retain(|(l, _)| !leases.contains(l));
            leases
        })
    }

    /// Whether `lease` (of `ttl_s` seconds) is due for a keep-alive; marks it refreshed.
    pub(crate) fn due(&self, prefix: &[u8], holder: &str, lease: i64, ttl_s: i64) -> bool {
        let third = Duration::from_millis(u64::try_from(ttl_s).unwrap_or(1).saturating_mul(1000) / 3);
        self.with(prefix, holder, |w| match w.queue.iter_mut().find(|(l, _)| *l == lease) {
            Some((_, at)) if at.elapsed() < third => false,
            Some((_, at)) => {
                *at = Instant::now();
                true
            }
            None => true,
        })
    }
}
