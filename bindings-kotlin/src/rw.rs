//! `RwLock`: many readers or one writer.

use std::sync::Arc;

use crate::call;
use crate::errors::FfiError;
use crate::guard::LockGuard;
use crate::inspect::Inspection;
use crate::live::Live;

/// A read-write lock handle.
#[derive(uniffi::Object)]
pub struct RwLock {
    inner: baton::Result<baton::RwLock>,
    name: String,
    _live: Live,
}

impl RwLock {
    pub(crate) fn new(inner: baton::Result<baton::RwLock>, name: String) -> Arc<RwLock> {
        Arc::new(RwLock { inner, name, _live: Live::new() })
    }

    /// One attempt at the write hold (`write`) or a read hold.
    fn once(&self, write: bool) -> impl Future<Output = baton::Result<Option<Arc<LockGuard>>>> + Send + 'static {
        let rw = self.inner.clone();
        async move {
            let rw = rw?;
            let g = if write { rw.try_write().await } else { rw.try_read().await };
            Ok(g?.map(LockGuard::new))
        }
    }
}

#[uniffi::export]
impl RwLock {
    /// The name.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Waits for a shared (read) hold.
    pub async fn read(&self, timeout_ms: f64) -> Result<Arc<LockGuard>, FfiError> {
        let rw = self.inner.clone();
        call::run(async move {
            let rw = rw?;
            match call::timeout(timeout_ms)? {
                Some(t) => rw.read_timeout(t).await,
                None => rw.read().await,
            }
            .map(LockGuard::new)
        })
        .await
    }

    /// Waits for the exclusive (write) hold.
    pub async fn write(&self, timeout_ms: f64) -> Result<Arc<LockGuard>, FfiError> {
        let rw = self.inner.clone();
        call::run(async move {
            let rw = rw?;
            match call::timeout(timeout_ms)? {
                Some(t) => rw.write_timeout(t).await,
                None => rw.write().await,
            }
            .map(LockGuard::new)
        })
        .await
    }

    /// One attempt at a read hold.
    pub async fn try_read(&self) -> Result<Option<Arc<LockGuard>>, FfiError> {
        call::run(self.once(false)).await
    }

    /// [`try_read`](Self::try_read), blocking the calling thread, after checking
    /// `timeout_ms` (`call::attempt`).
    pub fn attempt_read(&self, timeout_ms: f64) -> Result<Option<Arc<LockGuard>>, FfiError> {
        call::attempt(timeout_ms, self.once(false))
    }

    /// One attempt at the write hold.
    pub async fn try_write(&self) -> Result<Option<Arc<LockGuard>>, FfiError> {
        call::run(self.once(true)).await
    }

    /// [`try_write`](Self::try_write), blocking the calling thread, after checking
    /// `timeout_ms` (`call::attempt`).
    pub fn attempt_write(&self, timeout_ms: f64) -> Result<Option<Arc<LockGuard>>, FfiError> {
        call::attempt(timeout_ms, self.once(true))
    }

    /// Holders (readers and writer), waiting writers and the last token.
    pub async fn inspect(&self) -> Result<Inspection, FfiError> {
        let rw = self.inner.clone();
        call::run(async move { rw?.inspect().await.map(Inspection::from) }).await
    }
}
