//! The read-write lock: many readers or one writer. A waiting writer holds a queue place
//! that turns new readers away, so a stream of readers cannot starve it; the writer may
//! also take the read side (downgrade). Holder ids follow Redisson's `RReadWriteLock`:
//! the reader is `owner`, the writer `owner:write`.

use std::sync::Arc;
use std::time::Duration;

use super::{LockGuard, SlotResult, slot, take, timed_out};
use crate::engine::{Ctx, Wait};
use crate::error::Result;
use crate::inspect::Inspection;
use crate::key::Family;
use crate::options::LockOptions;
use crate::state::Mode;

/// A read-write lock handle. Cheap to clone; clones share the owner.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let rw = client.rw_lock("doc/7");
/// let w = rw.write().await?;
/// let r = rw.read().await?;          // downgrade: the writer may read
/// w.release().await?;
/// r.release().await?;
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct RwLock {
    read: SlotResult,
    write: SlotResult,
    name: String,
}

impl RwLock {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, opts: &LockOptions) -> RwLock {
        let write = slot(ctx, Family::RwLock, name, opts, Mode::Write, ":write");
        let read = write.as_ref().map_err(Clone::clone).and_then(|w| {
            let writer = w.spec.holder.clone();
            let mut read_opts = opts.clone();
            read_opts.owner = Some(crate::state::read_holder_of(&writer).to_owned());
            slot(ctx, Family::RwLock, name, &read_opts, Mode::Read { writer }, "")
        });
        RwLock { read, write, name: name.to_owned() }
    }

    /// Waits for a shared (read) hold.
    ///
    /// # Errors
    /// As [`crate::Lock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel-safe.
    pub async fn read(&self) -> Result<LockGuard> {
        take(&self.read, &self.name, Wait::Until(None)).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// Waits at most `timeout` for a read hold (`Timeout` after).
    pub async fn read_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        take(&self.read, &self.name, Wait::timeout(timeout)?).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// One attempt at a read hold.
    pub async fn try_read(&self) -> Result<Option<LockGuard>> {
        take(&self.read, &self.name, Wait::No).await
    }

    /// Waits for the exclusive (write) hold.
    ///
    /// # Errors
    /// `InvalidArgument` when this handle holds the read side (an upgrade would wait on
    /// itself); otherwise as [`crate::Lock::acquire`].
    ///
    /// # Cancel safety
    /// Cancel-safe.
    pub async fn write(&self) -> Result<LockGuard> {
        take(&self.write, &self.name, Wait::Until(None)).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// Waits at most `timeout` for the write hold (`Timeout` after).
    pub async fn write_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        take(&self.write, &self.name, Wait::timeout(timeout)?).await?.ok_or_else(|| timed_out(&self.name))
    }

    /// One attempt at the write hold.
    pub async fn try_write(&self) -> Result<Option<LockGuard>> {
        take(&self.write, &self.name, Wait::No).await
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Holders (readers and writer), waiting writers and the last token.
    pub async fn inspect(&self) -> Result<Inspection> {
        let slot = self.write.as_ref().map_err(Clone::clone)?;
        slot.spec.ctx.inspect(&slot.spec.key).await
    }
}
