//! Exclusive locks: [`Lock`] (Redisson `RLock` semantics) and [`FairLock`] (grants in
//! request order), plus the guard they return.

mod guard;
pub(crate) mod multi;
pub(crate) mod rw;

pub(crate) use guard::grant_methods;
pub use guard::{LockGuard, LostSignal};

use std::sync::Arc;
use std::time::Duration;

use crate::engine::{self, Ctx, Slot, Spec, Wait};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::Family;
use crate::options::{DEFAULT_QUEUE_TTL, LockOptions};
use crate::state::Mode;

/// A handle's slot, or the error that creating it met (bad name or options), reported by
/// the first call, so that `client.lock(name)` itself stays infallible as in every binding.
pub(crate) type SlotResult = std::result::Result<Arc<Slot>, Error>;

/// Builds the slot of a lock-family handle: resolves owner and lease, validates the name.
pub(crate) fn slot(
    ctx: &Arc<Ctx>,
    family: Family,
    name: &str,
    opts: &LockOptions,
    mode: Mode,
    suffix: &str,
) -> SlotResult {
    spec(ctx, family, name, opts, mode, suffix).map(Slot::new)
}

/// What a handle of `family` takes under `opts` (an election's campaign adds its proposal).
pub(crate) fn spec(
    ctx: &Arc<Ctx>,
    family: Family,
    name: &str,
    opts: &LockOptions,
    mode: Mode,
    suffix: &str,
) -> Result<Spec> {
    let key = ctx.key(family, name)?;
    let lease = opts.resolve(ctx.defaults)?;
    let (owner, own_holder) = match &opts.owner {
        Some(o) => {
            crate::owner::validate_owner(o)?;
            (o.clone(), false)
        }
        None => (ctx.id.next_owner(), true),
    };
    let queue_ttl = crate::duration::validate("queue ttl", opts.queue_ttl.unwrap_or(DEFAULT_QUEUE_TTL))?;
    Ok(Spec {
        ctx: ctx.clone(),
        key,
        holder: format!("{owner}{suffix}"),
        mode,
        lease,
        queue_ttl,
        own_holder,
        value: None,
    })
}

/// Runs one acquire of a slot-backed handle and wraps the grant in a guard.
pub(crate) async fn take(slot: &SlotResult, name: &str, wait: Wait) -> Result<Option<LockGuard>> {
    let slot = slot.as_ref().map_err(Clone::clone)?;
    Ok(engine::acquire(slot, wait).await?.map(|g| LockGuard::new(g, name)))
}

fn timed_out(name: &str) -> Error {
    Error::timeout(format!("timed out waiting for `{name}`"))
}

macro_rules! lock_methods {
    ($ty:ident) => {
        impl $ty {
            /// Waits until the lock is granted.
            ///
            /// # Errors
            /// `InvalidArgument` for a bad name or options, `Closed` after `close`,
            /// `Connection`/`Backend` from the store.
            ///
            /// # Cancel safety
            /// Cancel-safe: dropping the future leaves no hold and no queue place behind.
            pub async fn acquire(&self) -> Result<LockGuard> {
                take(&self.slot, &self.name, Wait::Until(None)).await?.ok_or_else(|| timed_out(&self.name))
            }

            /// Waits at most `timeout`.
            ///
            /// # Errors
            /// `Timeout` when the lock was not granted in time; otherwise as [`Self::acquire`].
            ///
            /// # Cancel safety
            /// Cancel-safe, as [`Self::acquire`].
            pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
                take(&self.slot, &self.name, Wait::timeout(timeout)?).await?.ok_or_else(|| timed_out(&self.name))
            }

            /// One attempt, no waiting: `Ok(None)` when someone else holds the lock.
            ///
            /// # Errors
            /// As [`Self::acquire`].
            ///
            /// # Cancel safety
            /// Cancel-safe, as [`Self::acquire`].
            pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
                take(&self.slot, &self.name, Wait::No).await
            }

            /// The name this handle locks.
            pub fn name(&self) -> &str {
                &self.name
            }

            /// The owner id grants of this handle are held under (`None` if the handle
            /// was created with a bad name or options).
            pub fn owner(&self) -> Option<&str> {
                self.slot.as_ref().ok().map(|s| s.spec.holder.as_str())
            }

            /// Holders, waiters and the last token of this lock on the store.
            pub async fn inspect(&self) -> Result<Inspection> {
                let slot = self.slot.as_ref().map_err(Clone::clone)?;
                slot.spec.ctx.inspect(&slot.spec.key).await
            }
        }
    };
}

/// A re-entrant exclusive lock with a watchdog lease (or an explicit ttl) and a fencing
/// token per grant. Cheap to clone; clones share the owner id and so re-enter each other.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let lock = client.lock("orders/42");
/// let guard = lock.acquire().await?;
/// let again = lock.acquire().await?;             // re-entrant: same token
/// assert_eq!(guard.token(), again.token());
/// again.release().await?;
/// guard.release().await?;
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    pub(crate) slot: SlotResult,
    pub(crate) name: String,
}

/// A lock granted in request order (Redisson `RFairLock`). A waiter that disappears keeps
/// its place only for the queue ttl (5 s by default), then is skipped.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let guard = client.fair_lock("jobs").acquire().await?;
/// guard.release().await?;
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct FairLock {
    pub(crate) slot: SlotResult,
    pub(crate) name: String,
}

lock_methods!(Lock);
lock_methods!(FairLock);

impl Lock {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, opts: &LockOptions) -> Lock {
        Lock { slot: slot(ctx, Family::Lock, name, opts, Mode::Exclusive, ""), name: name.to_owned() }
    }

    /// A key for ordering locks canonically: the store (scheme, hosts and path: options
    /// such as `?lease=` do not make another store), then the name as stored (with the
    /// client's prefix), so that two clients of one store order the same locks alike.
    pub(crate) fn order_key(&self) -> (String, String) {
        match &self.slot {
            Ok(s) => (s.spec.ctx.url.identity(), s.spec.key.name.clone()),
            Err(_) => (String::new(), self.name.clone()),
        }
    }
}

impl FairLock {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, opts: &LockOptions) -> FairLock {
        FairLock { slot: slot(ctx, Family::Lock, name, opts, Mode::Fair, ""), name: name.to_owned() }
    }
}
