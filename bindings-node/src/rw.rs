//! `RwLock`: many readers or one writer.

use napi_derive::napi;

use crate::call::{self, CancelToken};
use crate::errors::Answer;
use crate::guard::LockGuard;
use crate::inspect::Inspection;

/// A read-write lock handle.
#[napi]
pub struct RwLock {
    inner: baton::Result<baton::RwLock>,
    name: String,
}

impl RwLock {
    pub(crate) fn new(inner: baton::Result<baton::RwLock>, name: String) -> RwLock {
        RwLock { inner, name }
    }
}

#[napi]
impl RwLock {
    /// The name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Waits for a shared (read) hold.
    #[napi(ts_return_type = "Promise<LockGuard>")]
    pub async fn read(&self, timeout_ms: Option<f64>, cancel: Option<&CancelToken>) -> napi::Result<Answer<LockGuard>> {
        let (rw, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            let rw = rw?;
            match crate::convert::timeout(timeout_ms)? {
                Some(t) => rw.read_timeout(t).await,
                None => rw.read().await,
            }
        })
        .await
        .map(|a| a.map(LockGuard::new))
    }

    /// Waits for the exclusive (write) hold.
    #[napi(ts_return_type = "Promise<LockGuard>")]
    pub async fn write(
        &self,
        timeout_ms: Option<f64>,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Answer<LockGuard>> {
        let (rw, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            let rw = rw?;
            match crate::convert::timeout(timeout_ms)? {
                Some(t) => rw.write_timeout(t).await,
                None => rw.write().await,
            }
        })
        .await
        .map(|a| a.map(LockGuard::new))
    }

    /// One attempt at a read hold.
    #[napi(ts_return_type = "Promise<LockGuard | null>")]
    pub async fn try_read(&self) -> napi::Result<Answer<Option<LockGuard>>> {
        let rw = self.inner.clone();
        call::run(async move { Ok(rw?.try_read().await?.map(LockGuard::new)) }).await
    }

    /// One attempt at the write hold.
    #[napi(ts_return_type = "Promise<LockGuard | null>")]
    pub async fn try_write(&self) -> napi::Result<Answer<Option<LockGuard>>> {
        let rw = self.inner.clone();
        call::run(async move { Ok(rw?.try_write().await?.map(LockGuard::new)) }).await
    }

    /// Holders (readers and writer), waiting writers and the last token.
    #[napi(ts_return_type = "Promise<Inspection>")]
    pub async fn inspect(&self) -> napi::Result<Answer<Inspection>> {
        let rw = self.inner.clone();
        call::run(async move { rw?.inspect().await.map(Inspection::from) }).await
    }
}
