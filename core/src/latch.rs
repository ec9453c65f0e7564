//! Count-down latches (Redisson `RCountDownLatch`).

use std::sync::Arc;
use std::time::Duration;

use crate::rt::Instant;

use crate::engine::Ctx;
use crate::error::{Error, Result};
use crate::key::{Family, Key};

/// Opens once its count reaches zero; `wait` is woken by the store.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let latch = client.count_down_latch("boot");
/// assert!(latch.try_set_count(2).await?);
/// assert!(!latch.try_set_count(5).await?);      // only when zero
/// latch.count_down().await?;
/// latch.count_down().await?;
/// latch.wait().await?;                          // open: returns at once
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct CountDownLatch {
    inner: std::result::Result<(Arc<Ctx>, Key), Error>,
    name: String,
}

/// Re-checks the count this often even without a notification.
const RECHECK: Duration = Duration::from_secs(1);

impl CountDownLatch {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str) -> CountDownLatch {
        CountDownLatch { inner: ctx.key(Family::Latch, name).map(|k| (ctx.clone(), k)), name: name.to_owned() }
    }

    fn parts(&self) -> Result<(&Ctx, &Key)> {
        let (ctx, key) = self.inner.as_ref().map_err(Clone::clone)?;
        ctx.check_open()?;
        Ok((ctx, key))
    }

    /// Sets the count to `count` if it is zero; `Ok(false)` when the latch is still counting.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero count.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        if count == 0 {
            return Err(Error::invalid_argument(format!("latch `{}` count must be at least 1", self.name)));
        }
        let (ctx, key) = self.parts()?;
        ctx.store.latch_try_set(key, count).await
    }

    /// Decrements the count (never below zero) and returns the new value.
    pub async fn count_down(&self) -> Result<u64> {
        let (ctx, key) = self.parts()?;
        ctx.store.latch_count_down(key).await
    }

    /// The current count.
    pub async fn count(&self) -> Result<u64> {
        let (ctx, key) = self.parts()?;
        ctx.store.latch_count(key).await
    }

    /// Waits until the count is zero.
    ///
    /// # Cancel safety
    /// Cancel-safe: waiting changes nothing on the store.
    pub async fn wait(&self) -> Result<()> {
        self.wait_until(None).await
    }

    /// Waits at most `timeout` for the count to reach zero (`Timeout` after).
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        let timeout = crate::duration::validate("timeout", timeout)?;
        self.wait_until(Some(Instant::now() + timeout)).await
    }

    async fn wait_until(&self, deadline: Option<Instant>) -> Result<()> {
        let (ctx, key) = self.parts()?;
        ctx.closed_or(self.wait_inner(ctx, key, deadline).await)
    }

    async fn wait_inner(&self, ctx: &Ctx, key: &Key, deadline: Option<Instant>) -> Result<()> {
        let mut sub = ctx.store.subscribe(key).await?;
        loop {
            if ctx.store.latch_count(key).await? == 0 {
                return Ok(());
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(Error::timeout(format!("timed out waiting for latch `{}` to open", self.name)));
            }
            let until = deadline.map_or(now + RECHECK, |d| d.min(now + RECHECK));
            sub.changed(until).await?;
            ctx.check_open()?;
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
