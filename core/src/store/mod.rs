//! Stores. Each store does one step atomically on its store; waiting, renewal,
//! reentrancy bookkeeping, timeouts and fencing bookkeeping live in `engine`, once.

// Only stores that cannot announce changes poll; a memory-only build has none.
#[cfg_attr(not(any(feature = "sqlite", feature = "mysql")), allow(dead_code))]
pub(crate) mod backoff;
#[cfg(any(feature = "etcd", feature = "etcd-http"))]
mod etcd;
mod fence;
mod margin;
pub(crate) mod memory;
pub(crate) mod open;
#[cfg(feature = "redis")]
mod redis;
// The one arrow from the store contract up into a store, on purpose: `Store::driven_link`
// hands out the Redis store's own link (for `baton::ffi`), which no other store has.
#[cfg(feature = "driven-link")]
pub use self::redis::{DrivenLink, drive_here};
#[cfg(feature = "redlock")]
mod redlock;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod sql;
mod stateful;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod wakes;
#[cfg(feature = "zookeeper")]
mod zk;

pub(crate) use self::fence::FenceOps;
pub(crate) use self::margin::drift_margin;

use std::fmt;
use std::time::Duration;

use crate::rt::Instant;
use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::Key;
use crate::state::{Attempt, Released, Request};

/// Waits for "something about this key may have changed". Created *before* the attempt
/// it follows, so a release between the attempt and the wait is never missed.
#[async_trait]
pub(crate) trait Subscription: Send {
    /// Returns when the key may have changed, or at `until`, whichever is first.
    /// Spurious returns are allowed: the engine always re-checks with an attempt.
    async fn changed(&mut self, until: Instant) -> Result<()>;
}

/// A subscription fed by a local counter that every relevant change bumps (in-process
/// stores, and stores whose server notifications a listener task turns into bumps).
pub(crate) struct WatchSub(pub(crate) tokio::sync::watch::Receiver<u64>);

#[async_trait]
impl Subscription for WatchSub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        // The sender outlives every subscription; an error would only mean a spurious
        // wake-up, which the engine tolerates.
        let _ = crate::rt::timeout_at(until, self.0.changed()).await;
        Ok(())
    }
}

/// Whichever of several subscriptions speaks first (a store listening in several places:
/// channels of two kinds, or every node of `redlock://`).
#[cfg(feature = "redis")]
pub(crate) struct AnyOf(pub(crate) Vec<Box<dyn Subscription>>);

#[cfg(feature = "redis")]
#[async_trait]
impl Subscription for AnyOf {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        if self.0.is_empty() {
            crate::rt::sleep_until(until).await;
            return Ok(());
        }
        futures_util::future::select_all(self.0.iter_mut().map(|s| s.changed(until))).await.0
    }
}

/// The answer of a store whose election layout is not written yet.
#[cfg_attr(
    not(any(feature = "redis", feature = "etcd", feature = "etcd-http", feature = "zookeeper")),
    allow(dead_code)
)]
pub(crate) fn no_election() -> Error {
    Error::unsupported("leader election is not supported by this store yet")
}

/// What `Store::loss_watch` hands the engine.
pub(crate) type LossWatch = std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>;

/// What a store must provide.
///
/// Contract, which the behaviour suite checks for every store:
/// - `acquire` is one atomic step: grant (fresh grant: token strictly above every earlier
///   token of the key; re-entry by the same holder id: same token, count + 1), or report
///   busy and, when `enqueue`, take/refresh a queue place that expires after `queue_ttl`.
/// - Leases are measured on the store's clock; an expired hold is gone for everyone.
/// - `renew` and `release` act only on the given holder id's own hold.
/// - Methods are cancel-safe in the sense that matters to the engine: a dropped call may
///   or may not have taken effect, and the engine deals with both (see `engine::attempt`).
#[async_trait]
pub(crate) trait Store: Send + Sync + fmt::Debug + 'static {
    /// One attempt to take `req` on `key`.
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt>;

    /// Extends `holder`'s lease; `Ok(false)` when it no longer holds anything.
    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool>;

    /// Renews many leases at once (the watchdog's batches); one answer per item, in order.
    /// Stores that can pipeline override this; the default renews one by one.
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(items.len());
        for (key, holder) in items {
            out.push(self.renew(key, holder, lease).await?);
        }
        Ok(out)
    }

    /// Releases `count` holds of `holder` (`u32::MAX`: all).
    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released>;

    /// Gives up `holder`'s queue place, if any.
    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()>;

    /// Whether a waiting plain lock takes a queue place too, as a fair lock does: stores
    /// whose locks are queues (etcd's revision queue) say so, and the engine then gives the
    /// place back when the waiter leaves.
    fn queues_locks(&self) -> bool {
        false
    }

    /// How much of a `lease` the holder must not count on, beyond the time its request
    /// took: `redlock://` allows for clock drift between its nodes (`ttl·factor + 2 ms`).
    /// The engine ends its local view of a lease this much early.
    fn lease_margin(&self, lease: Duration) -> Duration {
        let _ = lease;
        Duration::ZERO
    }

    /// A future that ends when the store learns that `holder`'s fresh grant of `key` is
    /// gone (`true`: the engine fires the lost signal at once, not at the next renewal) or
    /// that the grant ended otherwise (`false`). Asked once, right after a fresh grant.
    /// Stores whose holds die with a connection have one (the SQL session schemes: their
    /// pinned connection closing); `None` elsewhere.
    fn loss_watch(&self, key: &Key, holder: &str) -> Option<LossWatch> {
        let _ = (key, holder);
        None
    }

    /// Starts listening for changes of `key`.
    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>>;

    /// Starts listening for the changes that may let `req` in. Stores that can wake one
    /// waiter in particular (the head of a fair queue, as Redisson's per-waiter channels
    /// do) override it; the default listens to every change of `key`.
    async fn subscribe_for(&self, key: &Key, req: &Request) -> Result<Box<dyn Subscription>> {
        let _ = req;
        self.subscribe(key).await
    }

    /// Holders, waiters and the last token of `key`.
    async fn inspect(&self, key: &Key) -> Result<Inspection>;

    /// Sets the latch count to `count` if it is zero; true when it was set.
    async fn latch_try_set(&self, key: &Key, count: u64) -> Result<bool> {
        let _ = (key, count);
        Err(Error::unsupported("count-down latches are not supported by this store"))
    }

    /// Decrements the latch count (not below zero); returns the new count.
    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        let _ = key;
        Err(Error::unsupported("count-down latches are not supported by this store"))
    }

    /// The current latch count.
    async fn latch_count(&self, key: &Key) -> Result<u64> {
        let _ = key;
        Err(Error::unsupported("count-down latches are not supported by this store"))
    }

    /// Sets the value `holder`'s hold of `key` proclaims (an election's leader), in one
    /// step guarded by the hold; `Ok(false)` when it no longer holds `key`.
    async fn proclaim(&self, key: &Key, holder: &str, value: &str) -> Result<bool> {
        let _ = (key, holder, value);
        Err(no_election())
    }

    /// Closes connections; later calls may fail.
    async fn close(&self) {}

    /// The store's fenced writes (`Client::fence`), where it can compare and write in one
    /// atomic step.
    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        None
    }

    /// A connection the caller's event loop drives (`ffi::driven_link`); None where the
    /// store has none.
    #[cfg(feature = "driven-link")]
    async fn driven_link(&self) -> Result<Option<DrivenLink>> {
        Ok(None)
    }

    /// The store's benchmark and test hooks, where it has any.
    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn Diagnostics> {
        None
    }
}

/// Times a store's requests one after the other, for [`Diagnostics::yardsticks`].
#[cfg(feature = "bench")]
pub(crate) struct Stopwatch {
    last: Instant,
    laps: Vec<(&'static str, Duration)>,
}

#[cfg(feature = "bench")]
impl Stopwatch {
    pub(crate) fn start() -> Stopwatch {
        Stopwatch { last: Instant::now(), laps: Vec::new() }
    }

    /// The time since the last lap (or the start), as `what`.
    pub(crate) fn lap(&mut self, what: &'static str) {
        let now = Instant::now();
        self.laps.push((what, now - self.last));
        self.last = now;
    }

    pub(crate) fn laps(self) -> Vec<(&'static str, Duration)> {
        self.laps
    }
}

/// Hooks for benchmarks and tests (feature `bench`), kept off the semantic [`Store`]
/// trait: nothing in the engine calls them.
#[cfg(feature = "bench")]
#[async_trait]
pub(crate) trait Diagnostics: Send + Sync {
    /// Once the steps a call left running in the background have ended (Redlock: the
    /// nodes that answered after the quorum), so a benchmark does not time one call's
    /// leftovers into the next.
    async fn settled(&self) {}

    /// Requests sent to the store so far, where the store counts them.
    fn round_trips(&self) -> Option<u64> {
        None
    }

    /// Counters of the store's own machinery, by name.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// The benches' yardsticks: the store's own round trips on `name`, timed on this
    /// client's connection (none for most stores).
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let _ = name;
        Ok(Vec::new())
    }
}
