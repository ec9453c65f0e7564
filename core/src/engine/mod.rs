//! Everything above the stores, written once: the acquire loop, leases and the lost
//! signal, re-entrant holds per handle, background release, cancellation safety.

// Only stores that cannot announce changes poll; a memory-only build has none.
#[cfg_attr(not(any(feature = "sqlite", feature = "mysql")), allow(dead_code))]
mod grant;
mod renewer;
mod wait;

pub(crate) use grant::Grant;
pub(crate) use wait::{Wait, acquire};

use crate::sync::{LockExt, Registry};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::rt::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::key::Key;
use crate::options::Lease;
use crate::owner::ClientId;
use crate::rt::Rt;
use crate::state::Mode;
use crate::store::{Store, drift_margin};
use crate::token::FencingToken;
use crate::url::StoreUrl;

/// Fires `lost` once, recording the loss.
pub(crate) fn mark_lost(key: &Key, token: FencingToken, lost: &CancellationToken) {
    if !lost.is_cancelled() {
        // Recorded before the signal so that whoever wakes on it already sees the count.
        crate::observe::lost(key, token.get());
        lost.cancel();
    }
}

/// The holder's local end of a lease of `lease` whose request was sent at `sent`: the
/// store measured the lease from the moment the request reached it, later than `sent`,
/// so this end comes before the store's by at least the margins.
pub(crate) fn local_end(store: &dyn Store, sent: Instant, lease: Duration) -> Instant {
    let margin = drift_margin(lease) + store.lease_margin(lease);
    sent + lease.saturating_sub(margin)
}

/// What every handle of one client shares: the store, the runtime, the identity.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) rt: Rt,
    pub(crate) id: ClientId,
    pub(crate) url: StoreUrl,
    pub(crate) defaults: Lease,
    pub(crate) prefix: String,
    closed: CancellationToken,
    /// `rt::fork_generation()` when the client was made: a forked child may not use it.
    fork_generation: u64,
    renewer: Arc<renewer::Renewer>,
    /// The client's live grants (for `close`): released grants leave at once (`untrack`),
    /// the few that end otherwise (replaced by a fresh grant) go in the registry's sweep.
    live: Registry<u64, Held>,
    next_live: AtomicU64,
}

impl Ctx {
    pub(crate) fn new(store: Arc<dyn Store>, url: StoreUrl, defaults: Lease, prefix: String) -> Ctx {
        let rt = Rt::current();
        Ctx {
            renewer: Arc::new(renewer::Renewer::start(&rt, store.clone())),
            store,
            rt,
            id: ClientId::random(),
            url,
            defaults,
            prefix,
            closed: CancellationToken::new(),
            fork_generation: crate::rt::fork_generation(),
            live: Registry::default(),
            next_live: AtomicU64::new(1),
        }
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.is_cancelled() {
            return Err(Error::closed());
        }
        if self.in_forked_child() {
            // Its leases, connections and tasks belong to the parent process.
            return Err(Error::new(
                crate::ErrorKind::Closed,
                "this client was created before fork(): connect again in the child process",
            ));
        }
        Ok(())
    }

    /// Whether this process is a `fork()` child of the one that made the client.
    fn in_forked_child(&self) -> bool {
        self.fork_generation != crate::rt::fork_generation()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// A call that was under way when the client closed fails with `Closed`, whatever
    /// the store said on its way down (a closed pool, a dropped connection).
    pub(crate) fn closed_or<T>(&self, r: Result<T>) -> Result<T> {
        match r {
            Err(e) if self.is_closed() && e.kind() != crate::ErrorKind::Closed => Err(Error::closed()),
            r => r,
        }
    }

    /// Marks the client closed, releases every live grant (so others need not wait for
    /// the leases to run out), and closes the store.
    pub(crate) async fn close(&self) {
        if self.closed.is_cancelled() {
            return;
        }
        self.closed.cancel();
        if self.in_forked_child() {
            // In a forked child: the holds and connections are the parent's, still in use
            // there (a socket both processes share must not be written or shut down here).
            return;
        }
        for held in self.live.drain() {
            held.stop();
            let _ =
                crate::rt::timeout(Duration::from_secs(5), self.store.release(&held.key, &held.holder, u32::MAX)).await;
            held.lost.cancel();
        }
        // Bounded: a store that cannot close cleanly must not hang the caller.
        let _ = crate::rt::timeout(Duration::from_secs(5), self.store.close()).await;
    }

    fn track(&self, held: &Arc<Held>) {
        self.live.insert(held.live_id, held);
    }

    fn untrack(&self, id: u64) {
        self.live.remove(&id);
    }

    /// The store key of a user name (validated), with the client's prefix. The limits of
    /// a name apply to the name the user gave; the prefix was checked on its own at connect.
    pub(crate) fn key(&self, family: crate::key::Family, name: &str) -> Result<Key> {
        crate::name::validate(name)?;
        let full = if self.prefix.is_empty() { name.to_owned() } else { format!("{}{name}", self.prefix) };
        Ok(Key { family, name: full })
    }

    /// The name the user gave for `key` (without the client's prefix).
    pub(crate) fn user_name<'k>(&self, key: &'k Key) -> &'k str {
        key.name.strip_prefix(self.prefix.as_str()).unwrap_or(&key.name)
    }

    /// What the store says of `key`, under the name the user gave.
    pub(crate) async fn inspect(&self, key: &Key) -> Result<crate::Inspection> {
        self.check_open()?;
        let mut info = self.store.inspect(key).await?;
        info.name = self.user_name(key).to_owned();
        Ok(info)
    }
}

/// What one handle takes: key, holder id, mode, lease.
#[derive(Debug)]
pub(crate) struct Spec {
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) key: Key,
    pub(crate) holder: String,
    pub(crate) mode: Mode,
    pub(crate) lease: Lease,
    pub(crate) queue_ttl: Duration,
    /// The holder id is this handle's own (generated, not `LockOptions::owner`): no other
    /// handle or client takes holds under it.
    pub(crate) own_holder: bool,
    /// What a fresh grant records beside its hold (an election's proposal).
    pub(crate) value: Option<String>,
}

/// A handle's slot: the live grant its guards share while re-entered.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) spec: Spec,
    held: Mutex<Option<Arc<Held>>>,
    /// One store call at a time on this handle's holds (an attempt with its answer's
    /// bookkeeping or give-back, a release): the hold count the store answers can then be
    /// checked against the holds this handle's guards have (`Turn`).
    turn: Arc<tokio::sync::Mutex<()>>,
}

/// A slot's turn at the store (see `Slot::turn`).
pub(crate) struct Turn {
    slot: Arc<Slot>,
    _turn: tokio::sync::OwnedMutexGuard<()>,
}

impl Turn {
    /// How many holds the store should count under the holder id once the attempt this
    /// turn is for is granted: the current grant's plus one. `None` where the store's
    /// count says nothing of strays (see `Slot::counts_holds`).
    fn expected_after_grant(&self) -> Option<u32> {
        self.slot.counts_holds().then(|| self.slot.known_holds() + 1)
    }
}

impl Slot {
    pub(crate) fn new(spec: Spec) -> Arc<Slot> {
        Arc::new(Slot { spec, held: Mutex::new(None), turn: Arc::new(tokio::sync::Mutex::new(())) })
    }

    /// Waits for this slot's turn at the store.
    pub(crate) async fn turn(self: &Arc<Self>) -> Turn {
        Turn { slot: self.clone(), _turn: self.turn.clone().lock_owned().await }
    }

    /// Whether every hold the store counts under this slot's holder id is this handle's:
    /// an own holder id (no other handle takes holds under it) and a lock-like mode (a
    /// permit count is not a re-entry count). Then, with store calls taking turns, holds
    /// beyond the ones the handle's guards have are strays: holds of attempts whose
    /// answers were lost with their connections, or whose give-back failed. Nobody would
    /// release those, and the watchdog would renew them with the handle's grant.
    fn counts_holds(&self) -> bool {
        self.spec.own_holder && !matches!(self.spec.mode, Mode::Permits { .. })
    }

    /// The holds the guards of the live grant have (0 with none).
    fn known_holds(&self) -> u32 {
        let held = self.held.locked();
        held.as_ref().filter(|h| !h.lost.is_cancelled()).map_or(0, |h| h.holds.load(Ordering::SeqCst))
    }

    /// Records a grant; returns the `Held` the new guard shares. Synchronous on purpose:
    /// nothing between the store's answer and this bookkeeping can be cancelled.
    fn on_granted(self: &Arc<Self>, token: u64, fresh: bool, started: Instant) -> Arc<Held> {
        let mut slot = self.held.locked();
        if let Some(h) = slot.as_ref() {
            if !fresh && !h.lost.is_cancelled() {
                h.holds.fetch_add(1, Ordering::SeqCst);
                return h.clone();
            }
            // A fresh grant while we thought we held: the old lease was lost.
            h.mark_lost();
            h.stop();
        }
        let held = Held::start(self, FencingToken::new(token), started);
        *slot = Some(held.clone());
        held
    }

    /// Forgets `held` if it is still the current grant.
    fn detach(&self, held: &Arc<Held>) {
        let mut slot = self.held.locked();
        if slot.as_ref().is_some_and(|h| Arc::ptr_eq(h, held)) {
            *slot = None;
        }
        drop(slot);
        held.stop();
        self.spec.ctx.untrack(held.live_id);
    }
}

/// One live grant of a holder id: token, lease deadline, lost signal.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) key: Key,
    pub(crate) holder: String,
    pub(crate) token: FencingToken,
    pub(crate) lost: CancellationToken,
    /// When the grant was requested (for hold-time metrics).
    pub(crate) granted_at: Instant,
    /// The local, conservative end of the lease.
    deadline: Mutex<Instant>,
    renewer: Arc<renewer::Renewer>,
    /// The store, for its lease margin (`Store::lease_margin`).
    store: Arc<dyn Store>,
    live_id: u64,
    /// Holds the guards sharing this grant have (re-entries add one each; locks only,
    /// see `Slot::counts_holds`).
    holds: std::sync::atomic::AtomicU32,
}

impl Held {
    fn start(slot: &Arc<Slot>, token: FencingToken, started: Instant) -> Arc<Held> {
        let spec = &slot.spec;
        let length = spec.lease.length();
        let deadline = Mutex::new(local_end(&*spec.ctx.store, started, length));
        let lost = CancellationToken::new();
        let held = Arc::new(Held {
            key: spec.key.clone(),
            holder: spec.holder.clone(),
            token,
            lost,
            granted_at: started,
            deadline,
            renewer: spec.ctx.renewer.clone(),
            store: spec.ctx.store.clone(),
            live_id: spec.ctx.next_live.fetch_add(1, Ordering::Relaxed),
            holds: std::sync::atomic::AtomicU32::new(1),
        });
        match spec.lease {
            Lease::Watchdog { lease, renew } => held.renewer.add(&held, lease, renew, started),
            Lease::Ttl(_) => held.renewer.watch_ttl(&held, length),
        }
        // A store that learns of a loss by itself (a hold's connection closing) reports
        // it at once.
        if let Some(gone) = spec.ctx.store.loss_watch(&spec.key, &spec.holder) {
            let (weak, lost) = (Arc::downgrade(&held), held.lost.clone());
            drop(spec.ctx.rt.spawn(async move {
                tokio::select! {
                    gone = gone => {
                        if gone && let Some(h) = weak.upgrade() {
                            h.mark_lost();
                        }
                    }
                    () = lost.cancelled() => {}
                }
            }));
        }
        spec.ctx.track(&held);
        held
    }

    /// Fires the lost signal (once).
    pub(crate) fn mark_lost(&self) {
        mark_lost(&self.key, self.token, &self.lost);
    }

    /// Stops renewing or watching the lease (the store side is handled by the caller).
    fn stop(&self) {
        self.renewer.remove(self.live_id);
    }

    /// The local, conservative end of the lease.
    fn deadline(&self) -> Instant {
        *self.deadline.locked()
    }

    fn set_deadline(&self, at: Instant) {
        *self.deadline.locked() = at;
    }

    /// Moves the local lease end after a successful renewal or extend sent at `sent`.
    fn extended(&self, sent: Instant, lease: Duration) {
        self.set_deadline(local_end(&*self.store, sent, lease));
    }
}
