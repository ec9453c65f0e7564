//! Permits with ids and leases of their own (Redisson `RPermitExpirableSemaphore`).

use std::sync::Arc;
use std::time::Duration;

use super::{Permit, Pool, timed_out};
use crate::engine::{Ctx, Wait};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::options::{Lease, LockOptions};
use crate::state::Released;

/// A semaphore whose permits each carry an id (32 hex characters) and a lease: by default
/// a watchdog lease, or a fixed one per [`PermitSemaphore::acquire_lease`]. Any process
/// may release a permit by id.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// let client = baton::Client::connect("memory://").await?;
/// let exports = client.permit_semaphore("exports", 5);
/// let p = exports.acquire_lease(Duration::from_secs(60)).await?;
/// let id = p.id().to_owned();
/// std::mem::forget(p);                     // e.g. handed to another worker
/// exports.release(&id).await?;             // released by id
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct PermitSemaphore {
    pool: std::result::Result<Pool, Error>,
    name: String,
}

fn permit_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl PermitSemaphore {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, permits: u32, opts: &LockOptions) -> PermitSemaphore {
        PermitSemaphore { pool: Pool::new(ctx, name, permits, opts), name: name.to_owned() }
    }

    fn pool(&self) -> Result<&Pool> {
        self.pool.as_ref().map_err(Clone::clone)
    }

    async fn take(&self, lease: Option<Duration>, wait: Wait) -> Result<Option<Permit>> {
        let pool = self.pool()?;
        let lease = match lease {
            Some(d) => Lease::Ttl(crate::duration::validate_lease("permit lease", d)?),
            None => pool.lease,
        };
        pool.take(permit_id(), 1, lease, wait).await
    }

    /// Waits for a permit held under the handle's lease (watchdog unless a ttl was set).
    pub async fn acquire(&self) -> Result<Permit> {
        self.take(None, Wait::Until(None)).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// Waits for a permit that expires `lease` after it is granted unless extended.
    pub async fn acquire_lease(&self, lease: Duration) -> Result<Permit> {
        self.take(Some(lease), Wait::Until(None)).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// Waits at most `timeout`.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Permit> {
        self.take(None, Wait::timeout(timeout)?).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// One attempt.
    pub async fn try_acquire(&self) -> Result<Option<Permit>> {
        self.take(None, Wait::No).await
    }

    /// Releases the permit `id`, whoever acquired it.
    ///
    /// # Errors
    /// `NotHeld` when no live permit has this id (released already, or expired).
    pub async fn release(&self, id: &str) -> Result<()> {
        let pool = self.pool()?;
        pool.ctx.check_open()?;
        match pool.ctx.store.release(&pool.key, id, u32::MAX).await? {
            Released::NotHeld => Err(Error::not_held(format!("no live permit `{id}` in {}", pool.key))),
            _ => Ok(()),
        }
    }

    /// Sets permit `id`'s lease to `lease` from now.
    ///
    /// # Errors
    /// `NotHeld` when no live permit has this id.
    pub async fn update_lease(&self, id: &str, lease: Duration) -> Result<()> {
        let pool = self.pool()?;
        let lease = crate::duration::validate_lease("permit lease", lease)?;
        pool.ctx.check_open()?;
        if pool.ctx.store.renew(&pool.key, id, lease).await? {
            Ok(())
        } else {
            Err(Error::not_held(format!("no live permit `{id}` in {}", pool.key)))
        }
    }

    /// Permits free right now.
    pub async fn available(&self) -> Result<u32> {
        self.pool()?.available().await
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Live permits (with ids and lease left) and the last token.
    pub async fn inspect(&self) -> Result<Inspection> {
        self.pool()?.inspect().await
    }
}
