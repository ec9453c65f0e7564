//! Counting semaphores whose permits are leased: a crashed holder's permits come back
//! when its lease ends (unlike Redisson's `RSemaphore`, whose permits leak).

mod expirable;
mod permit;

pub use expirable::PermitSemaphore;
pub use permit::Permit;

use std::sync::Arc;
use std::time::Duration;

use crate::engine::{self, Ctx, Slot, Spec, Wait};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::options::{DEFAULT_QUEUE_TTL, Lease, LockOptions};
use crate::state::Mode;

/// The parts every semaphore handle shares.
#[derive(Debug, Clone)]
pub(crate) struct Pool {
    ctx: Arc<Ctx>,
    key: Key,
    limit: u32,
    lease: Lease,
}

impl Pool {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, permits: u32, opts: &LockOptions) -> Result<Pool> {
        if permits == 0 {
            return Err(Error::invalid_argument(format!("semaphore `{name}` needs at least one permit, got 0")));
        }
        Ok(Pool {
            ctx: ctx.clone(),
            key: ctx.key(Family::Semaphore, name)?,
            limit: permits,
            lease: opts.resolve(ctx.defaults)?,
        })
    }

    /// Takes `count` permits under `holder`, waiting as `wait` says.
    pub(crate) async fn take(&self, holder: String, count: u32, lease: Lease, wait: Wait) -> Result<Option<Permit>> {
        if count == 0 || count > self.limit {
            return Err(Error::invalid_argument(format!(
                "cannot acquire {count} permits of {} (it has {})",
                self.key, self.limit
            )));
        }
        let slot = Slot::new(Spec {
            ctx: self.ctx.clone(),
            key: self.key.clone(),
            holder,
            mode: Mode::Permits { count, limit: self.limit },
            lease,
            queue_ttl: DEFAULT_QUEUE_TTL,
            own_holder: false,
            value: None,
        });
        Ok(engine::acquire(&slot, wait).await?.map(|g| Permit::new(g, self.ctx.user_name(&self.key))))
    }

    async fn available(&self) -> Result<u32> {
        let used: u64 = self.inspect().await?.holders.iter().map(|h| u64::from(h.count)).sum();
        Ok(u32::try_from(u64::from(self.limit).saturating_sub(used)).unwrap_or(0))
    }

    /// The store's view, refused (`check_size`) while permits of another size are held:
    /// counted against this handle's size, it would be wrong.
    async fn inspect(&self) -> Result<Inspection> {
        let info = self.ctx.inspect(&self.key).await?;
        crate::state::check_size(&self.key.name, info.permits, self.limit)?;
        Ok(info)
    }
}

fn timed_out(name: &str) -> Error {
    Error::timeout(format!("timed out waiting for permits of semaphore `{name}`"))
}

/// A semaphore of N permits. Every `acquire` returns a [`Permit`] with its own lease
/// (watchdog by default) and fencing token.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let sem = client.semaphore("parking", 3);
/// let two = sem.acquire_many(2).await?;
/// assert_eq!(sem.available().await?, 1);
/// assert!(sem.try_acquire_many(2).await?.is_none());
/// two.release().await?;
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    pool: std::result::Result<Pool, Error>,
    name: String,
}

impl Semaphore {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, permits: u32, opts: &LockOptions) -> Semaphore {
        Semaphore { pool: Pool::new(ctx, name, permits, opts), name: name.to_owned() }
    }

    fn pool(&self) -> Result<&Pool> {
        self.pool.as_ref().map_err(Clone::clone)
    }

    async fn take(&self, count: u32, wait: Wait) -> Result<Option<Permit>> {
        let pool = self.pool()?;
        pool.take(pool.ctx.id.next_owner(), count, pool.lease, wait).await
    }

    /// Waits for one permit.
    ///
    /// # Cancel safety
    /// Cancel-safe: a dropped acquire holds nothing.
    pub async fn acquire(&self) -> Result<Permit> {
        self.acquire_many(1).await
    }

    /// Waits for `count` permits at once (`InvalidArgument` for 0 or more than the total).
    pub async fn acquire_many(&self, count: u32) -> Result<Permit> {
        self.acquire_many_within(count, None).await
    }

    /// Waits for `count` permits, at most `timeout` when there is one (a host language's
    /// optional timeout, passed as it comes).
    pub async fn acquire_many_within(&self, count: u32, timeout: Option<Duration>) -> Result<Permit> {
        self.take(count, Wait::within(timeout)?).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// Waits at most `timeout` for one permit.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Permit> {
        self.acquire_many_timeout(1, timeout).await
    }

    /// Waits at most `timeout` for `count` permits.
    pub async fn acquire_many_timeout(&self, count: u32, timeout: Duration) -> Result<Permit> {
        self.acquire_many_within(count, Some(timeout)).await
    }

    /// One attempt at one permit.
    pub async fn try_acquire(&self) -> Result<Option<Permit>> {
        self.take(1, Wait::No).await
    }

    /// One attempt at `count` permits.
    pub async fn try_acquire_many(&self, count: u32) -> Result<Option<Permit>> {
        self.take(count, Wait::No).await
    }

    /// Permits free right now.
    pub async fn available(&self) -> Result<u32> {
        self.pool()?.available().await
    }

    /// The total number of permits this handle was created with.
    pub fn permits(&self) -> u32 {
        self.pool.as_ref().map_or(0, |p| p.limit)
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Current permit holders and the last token.
    pub async fn inspect(&self) -> Result<Inspection> {
        self.pool()?.inspect().await
    }
}
