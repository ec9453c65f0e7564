//! All-or-nothing over several locks, possibly on different stores.

use std::time::Duration;

use crate::rt::Instant;

use super::{Lock, LockGuard};
use crate::error::{Error, Result};
use crate::token::FencingToken;

/// Several locks taken together (Redisson `RedissonMultiLock`): in a canonical order
/// (store, then name) so that two multi-locks over the same names cannot deadlock, and
/// released again if any of them cannot be taken.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let guard = client.multi_lock(["b", "a"]).acquire().await?;
/// assert_eq!(guard.tokens().len(), 2);
/// guard.release().await?;
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct MultiLock {
    locks: Vec<Lock>,
}

impl MultiLock {
    /// A multi-lock over `locks`, which may come from different clients and stores.
    /// Duplicate (store, name) pairs are kept once.
    pub fn new(locks: impl IntoIterator<Item = Lock>) -> MultiLock {
        let mut locks: Vec<Lock> = locks.into_iter().collect();
        locks.sort_by_key(Lock::order_key);
        locks.dedup_by_key(|l| l.order_key());
        MultiLock { locks }
    }

    /// The locks, in acquisition order.
    pub fn locks(&self) -> &[Lock] {
        &self.locks
    }

    /// Waits until every lock is held.
    ///
    /// # Cancel safety
    /// Cancel-safe: locks already taken are released when the future is dropped.
    pub async fn acquire(&self) -> Result<MultiGuard> {
        self.take(None).await?.ok_or_else(|| Error::timeout("multi-lock not granted"))
    }

    /// Waits at most `timeout` for all of them (`Timeout` after, with none held).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<MultiGuard> {
        let timeout = crate::duration::validate("timeout", timeout)?;
        self.take(Some(Some(Instant::now() + timeout)))
            .await?
            .ok_or_else(|| Error::timeout(format!("timed out waiting for {} locks", self.locks.len())))
    }

    /// One attempt at each: `Ok(None)` (and nothing held) if any is busy.
    pub async fn try_acquire(&self) -> Result<Option<MultiGuard>> {
        self.take(Some(None)).await
    }

    /// `None`: wait forever; `Some(None)`: no waiting; `Some(Some(t))`: until t.
    async fn take(&self, wait: Option<Option<Instant>>) -> Result<Option<MultiGuard>> {
        if self.locks.is_empty() {
            return Err(Error::invalid_argument("a multi-lock needs at least one lock"));
        }
        // On a busy lock, a timeout or an error, the locks already taken are released
        // before returning, so the caller sees none of them held; if this future is
        // dropped instead, the dropped guards are released in the background.
        let mut guards = Vec::with_capacity(self.locks.len());
        for lock in &self.locks {
            let got = match wait {
                None => lock.acquire().await.map(Some),
                Some(None) => lock.try_acquire().await,
                Some(Some(deadline)) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => lock.acquire_timeout(left).await.map(Some),
                    _ => lock.try_acquire().await,
                },
            };
            match got {
                Ok(Some(g)) => guards.push(g),
                Ok(None) => {
                    release_all(guards).await?;
                    return Ok(None);
                }
                Err(e) => {
                    // The acquire's error is the one to report.
                    let _ = release_all(guards).await;
                    return Err(e);
                }
            }
        }
        Ok(Some(MultiGuard { guards }))
    }
}

async fn release_all(guards: Vec<LockGuard>) -> Result<()> {
    let mut first = None;
    for g in guards.into_iter().rev() {
        if let Err(e) = g.release().await {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Every lock of a [`MultiLock`], held.
#[derive(Debug)]
#[must_use = "dropping a guard releases the locks at once"]
pub struct MultiGuard {
    guards: Vec<LockGuard>,
}

impl MultiGuard {
    /// One token per lock, in acquisition order.
    pub fn tokens(&self) -> Vec<FencingToken> {
        self.guards.iter().map(LockGuard::token).collect()
    }

    /// The guards, in acquisition order.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Whether any of the leases is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(LockGuard::is_lost)
    }

    /// Resolves when any lease is lost.
    pub async fn lost(&self) {
        let signals: Vec<_> = self.guards.iter().map(|g| Box::pin(g.lost())).collect();
        futures_select_any(signals).await;
    }

    /// Releases every lock (in reverse order); the first error is returned after all
    /// were attempted.
    pub async fn release(self) -> Result<()> {
        release_all(self.guards).await
    }
}

/// Resolves when the first of `futs` does.
async fn futures_select_any<F: std::future::Future<Output = ()> + Unpin>(mut futs: Vec<F>) {
    std::future::poll_fn(|cx| {
        for f in futs.iter_mut() {
            if std::pin::Pin::new(f).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order is the store's and the stored name's: URL options (here `lease`) do not
    /// make another store, and a client's prefix is part of the name.
    #[tokio::test]
    async fn canonical_order_ignores_url_options() {
        let plain = crate::client::Client::connect("memory://order").await.unwrap();
        let leased = crate::client::Client::connect("memory://order?lease=20s").await.unwrap();
        let names = |m: MultiLock| m.locks().iter().map(|l| l.name().to_owned()).collect::<Vec<_>>();
        assert_eq!(names(MultiLock::new([leased.lock("a"), plain.lock("b")])), ["a", "b"]);
        assert_eq!(names(MultiLock::new([plain.lock("a"), leased.lock("b")])), ["a", "b"]);
        assert_eq!(names(MultiLock::new([plain.lock("b"), leased.lock("a")])), ["a", "b"]);
        // The same name through both clients is one lock.
        assert_eq!(MultiLock::new([plain.lock("a"), leased.lock("a")]).locks().len(), 1);
        let prefixed = crate::client::Client::connect("memory://order?prefix=z/").await.unwrap();
        assert_eq!(names(MultiLock::new([prefixed.lock("a"), plain.lock("b")])), ["b", "a"]);
    }
}
