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
        let rw = self.inner.clone();
        call::run(async move { Ok(rw?.try_read().await?.map(LockGuard::new)) }).await
    }

    /// One attempt at the write hold.
    pub async fn try_write(&self) -> Result<Option<Arc<LockGuard>>, FfiError> {
        let rw = self.inner.clone();
        call::run(async move { Ok(rw?.try_write().await?.map(LockGuard::new)) }).await
    }

    /// Holders (readers and writer), waiting writers and the last token.
    pub async fn inspect(&self) -> Result<Inspection, FfiError> {
        let rw = self.inner.clone();
        call::run(async move { rw?.inspect().await.map(Inspection::from) }).await
    }
}
