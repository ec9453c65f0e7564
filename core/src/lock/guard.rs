//! `LockGuard` and the lost signal.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use crate::engine::Grant;
use crate::error::Result;

/// The methods every guard type shares (`LockGuard`, `Permit`): token, lost signal,
/// extend. One definition, so the guards cannot drift apart.
macro_rules! grant_methods {
    () => {
        /// The fencing token of this grant (the same for every re-entry of one hold).
        pub fn token(&self) -> $crate::token::FencingToken {
            self.grant.token()
        }

        /// Resolves when the lease is lost (renewal refused or failing past the lease, ttl
        /// expired, or the client closed). Never resolves while the lease is kept.
        ///
        /// ```no_run
        /// # async fn f(client: baton::Client) -> baton::Result<()> {
        /// let guard = client.lock("jobs/1").acquire().await?;
        /// tokio::select! {
        ///     _ = guard.lost() => eprintln!("lease lost: stop writing"),
        ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        /// }
        /// guard.release().await?;
        /// # Ok(()) }
        /// ```
        pub fn lost(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
            self.grant.lost_token().clone().cancelled_owned()
        }

        /// Whether the lease is known to be lost.
        pub fn is_lost(&self) -> bool {
            self.grant.lost_token().is_cancelled()
        }

        /// A cloneable handle on the lost signal, for passing to other tasks.
        pub fn lost_signal(&self) -> $crate::lock::LostSignal {
            $crate::lock::LostSignal::new(self.grant.lost_token().clone())
        }

        /// How long until this holder's local end of its lease (zero once it has passed):
        /// the end the lost signal fires at, counted on this process's monotonic clock from
        /// when the request that set the lease was sent, less the drift margin, so it comes
        /// before the store's own end. It moves later with every answered renewal, `extend`
        /// or confirmed update, so read it again rather than keep it. (A duration, not an
        /// instant, so that it means the same on every platform.)
        pub fn lease_remaining(&self) -> std::time::Duration {
            self.grant.lease_remaining()
        }

        /// Sets the lease to `lease` from now (for `ttl` grants; a watchdog grant accepts it
        /// too and keeps renewing afterwards).
        ///
        /// # Errors
        /// `LockLost` if the lease was already gone, `InvalidArgument` for a zero or too long
        /// duration, `Closed`, `Connection`/`Backend` from the store.
        pub async fn extend(&self, lease: std::time::Duration) -> $crate::error::Result<()> {
            self.grant.extend(lease).await
        }
    };
}
pub(crate) use grant_methods;

/// A held lock (or read/write hold). Dropping it without [`LockGuard::release`] releases
/// it in the background.
#[derive(Debug)]
#[must_use = "dropping a guard releases the lock at once"]
pub struct LockGuard {
    pub(crate) grant: Grant,
    pub(crate) name: String,
}

impl LockGuard {
    pub(crate) fn new(grant: Grant, name: &str) -> LockGuard {
        LockGuard { grant, name: name.to_owned() }
    }

    grant_methods!();

    /// The name held.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner id this grant is held under.
    pub fn owner(&self) -> &str {
        self.grant.holder()
    }

    /// Releases this hold (one level of re-entry).
    ///
    /// # Errors
    /// `LockLost` if the lease was lost before the release (the lock may have been granted
    /// to someone else meanwhile: whatever this guard protected is suspect), `Closed` after
    /// [`crate::client::Client::close`], `Connection`/`Backend` from the store.
    ///
    /// # Cancel safety
    /// Not cancel-safe in the sense that a dropped release may or may not have reached the
    /// store; the lease ends on its own either way.
    pub async fn release(self) -> Result<()> {
        self.grant.release().await
    }
}

/// The lost signal of a guard, detached from it (cheap to clone).
#[derive(Debug, Clone)]
pub struct LostSignal(CancellationToken);

impl LostSignal {
    pub(crate) fn new(token: CancellationToken) -> LostSignal {
        LostSignal(token)
    }

    /// Whether the lease is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves when the lease is lost.
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        self.0.clone().cancelled_owned()
    }
}
