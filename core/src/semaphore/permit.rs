//! `Permit`: permits held from a semaphore.

use std::future::Future;
use std::time::Duration;

use crate::FencingToken;
use crate::engine::Grant;
use crate::error::Result;
use crate::lock::LostSignal;

/// Permits held. Dropping it without [`Permit::release`] gives them back in the background.
#[derive(Debug)]
#[must_use = "dropping a permit releases it at once"]
pub struct Permit {
    grant: Grant,
    name: String,
}

impl Permit {
    pub(crate) fn new(grant: Grant, name: &str) -> Permit {
        Permit { grant, name: name.to_owned() }
    }

    /// The permit id (for a [`crate::PermitSemaphore`], the id others may release it by).
    pub fn id(&self) -> &str {
        self.grant.holder()
    }

    /// How many permits this holds.
    pub fn count(&self) -> u32 {
        self.grant.count()
    }

    /// The fencing token of this grant.
    pub fn token(&self) -> FencingToken {
        self.grant.token()
    }

    /// The semaphore's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Resolves when the lease is lost.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        self.grant.lost_token().clone().cancelled_owned()
    }

    /// Whether the lease is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.grant.lost_token().is_cancelled()
    }

    /// A cloneable handle on the lost signal.
    pub fn lost_signal(&self) -> LostSignal {
        LostSignal::new(self.grant.lost_token().clone())
    }

    /// Sets the lease to `lease` from now.
    pub async fn extend(&self, lease: Duration) -> Result<()> {
        self.grant.extend(lease).await
    }

    /// Gives every permit back.
    ///
    /// # Errors
    /// `LockLost` if the lease had ended (the permits were already back in the pool).
    pub async fn release(self) -> Result<()> {
        self.grant.release().await
    }

    /// Gives `n` permits back and keeps the rest; `InvalidArgument` for 0 or more than held.
    pub async fn release_many(&mut self, n: u32) -> Result<()> {
        self.grant.release_some(n).await
    }
}
