//! Per-handle options.

use std::time::Duration;

use crate::error::Result;

/// Redisson's `lockWatchdogTimeout`: the lease a watchdog keeps renewing.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// Renewal period of the watchdog (a third of the lease, as Redisson does).
pub const DEFAULT_RENEW: Duration = Duration::from_secs(10);
/// How long a fair-lock waiter (or a waiting writer) keeps its place without refreshing it.
pub const DEFAULT_QUEUE_TTL: Duration = Duration::from_secs(5);

/// How a grant stays alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lease {
    /// Renewed in the background while the guard lives (the default).
    Watchdog {
        /// The lease each renewal sets.
        lease: Duration,
        /// How often the watchdog renews.
        renew: Duration,
    },
    /// Expires after this long unless `extend`ed; nothing renews it.
    Ttl(Duration),
}

impl Lease {
    pub(crate) fn length(self) -> Duration {
        match self {
            Lease::Watchdog { lease, .. } => lease,
            Lease::Ttl(d) => d,
        }
    }
}

/// Options for a lock handle: lease mode and owner.
///
/// ```
/// use std::time::Duration;
/// let opts = baton::LockOptions::new().ttl(Duration::from_secs(10)).owner("job-7");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct LockOptions {
    pub(crate) ttl: Option<Duration>,
    pub(crate) lease: Option<Duration>,
    pub(crate) renew: Option<Duration>,
    pub(crate) owner: Option<String>,
    pub(crate) queue_ttl: Option<Duration>,
}

impl LockOptions {
    /// Defaults: watchdog lease of the client (30 s renewed every 10 s), a fresh owner id.
    pub fn new() -> LockOptions {
        LockOptions::default()
    }

    /// Explicit lease: the grant expires `ttl` after acquire unless extended; no watchdog.
    pub fn ttl(mut self, ttl: Duration) -> LockOptions {
        self.ttl = Some(ttl);
        self
    }

    /// Watchdog lease length (default 30 s).
    pub fn lease(mut self, lease: Duration) -> LockOptions {
        self.lease = Some(lease);
        self
    }

    /// Watchdog renewal period (default 10 s); must be shorter than the lease.
    pub fn renew_every(mut self, period: Duration) -> LockOptions {
        self.renew = Some(period);
        self
    }

    /// Binds reentrancy to this owner id instead of the handle: every handle created with
    /// the same owner re-enters the other's holds (for tasks and coroutines that move).
    pub fn owner(mut self, owner: impl Into<String>) -> LockOptions {
        self.owner = Some(owner.into());
        self
    }

    /// How long a fair-lock waiter keeps its place without refreshing it (default 5 s);
    /// a waiter that disappears is skipped after this.
    pub fn queue_ttl(mut self, d: Duration) -> LockOptions {
        self.queue_ttl = Some(d);
        self
    }

    /// Resolves the lease policy against the client's defaults, validating every value.
    pub(crate) fn resolve(&self, defaults: Lease) -> Result<Lease> {
        use crate::duration::validate;
        if let Some(t) = self.ttl {
            return Ok(Lease::Ttl(crate::duration::validate_lease("ttl", t)?));
        }
        let Lease::Watchdog { lease, renew } = defaults else { return Ok(defaults) };
        let lease = crate::duration::validate_lease("lease", self.lease.unwrap_or(lease))?;
        let renew = validate("renewal period", self.renew.unwrap_or(renew.min(lease / 3)))?;
        if renew >= lease {
            return Err(crate::error::Error::invalid_argument(format!(
                "renewal period {renew:?} must be shorter than the lease {lease:?}"
            )));
        }
        Ok(Lease::Watchdog { lease, renew })
    }
}
