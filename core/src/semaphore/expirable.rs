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
        self.acquire_within(None, None).await
    }

    /// Waits for a permit that expires `lease` after it is granted unless extended.
    pub async fn acquire_lease(&self, lease: Duration) -> Result<Permit> {
        self.acquire_within(None, Some(lease)).await
    }

    /// Waits at most `timeout`.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Permit> {
        self.acquire_within(Some(timeout), None).await
    }

    /// Waits at most `timeout` for a permit that expires `lease` after it is granted unless
    /// extended.
    pub async fn acquire_lease_timeout(&self, lease: Duration, timeout: Duration) -> Result<Permit> {
        self.acquire_within(Some(timeout), Some(lease)).await
    }

    /// Waits for a permit, at most `timeout` when there is one, held for `lease` when there
    /// is one (else under the handle's lease): a host language's optional arguments, passed
    /// as they come.
    pub async fn acquire_within(&self, timeout: Option<Duration>, lease: Option<Duration>) -> Result<Permit> {
        self.take(lease, Wait::within(timeout)?).await?.ok_or_else(|| timed_out(&self.name))
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::client::Client;
    use crate::error::ErrorKind;

    /// A timeout and a lease together: the wait ends at the timeout while the permits are
    /// taken, and a permit granted within it ends with its own lease.
    #[tokio::test]
    async fn acquire_within_takes_a_timeout_and_a_lease_together() {
        let c = Client::connect(&format!("memory://within-{}", uuid::Uuid::new_v4())).await.unwrap();
        let sem = c.permit_semaphore("p", 1);
        let (timeout, lease) = (Some(Duration::from_millis(100)), Some(Duration::from_millis(300)));
        let p = sem.acquire_within(timeout, lease).await.unwrap();
        let left = sem.inspect().await.unwrap().holders[0].lease_left.unwrap();
        assert!(left <= Duration::from_millis(300), "{left:?}");
        let err = sem.acquire_within(timeout, lease).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        p.release().await.unwrap();
        let q = sem.acquire_lease_timeout(Duration::from_secs(5), Duration::from_secs(5)).await.unwrap();
        assert_eq!(sem.available().await.unwrap(), 0);
        q.release().await.unwrap();
    }

    #[tokio::test]
    async fn acquire_many_within_waits_at_most_its_timeout() {
        let c = Client::connect(&format!("memory://many-within-{}", uuid::Uuid::new_v4())).await.unwrap();
        let sem = c.semaphore("s", 3);
        let two = sem.acquire_many_within(2, None).await.unwrap();
        let err = sem.acquire_many_within(2, Some(Duration::from_millis(50))).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        two.release().await.unwrap();
        sem.acquire_many_within(3, Some(Duration::from_millis(50))).await.unwrap().release().await.unwrap();
    }
}
