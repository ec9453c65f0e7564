//! `Permit`: permits held from a semaphore.

use crate::engine::Grant;
use crate::error::Result;

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

    crate::lock::grant_methods!();

    /// The semaphore's name.
    pub fn name(&self) -> &str {
        &self.name
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
