//! `CountDownLatch`.

use std::sync::Arc;

use crate::call;
use crate::errors::FfiError;
use crate::live::Live;

/// A count-down latch handle.
#[derive(uniffi::Object)]
pub struct CountDownLatch {
    inner: baton::CountDownLatch,
    _live: Live,
}

impl CountDownLatch {
    pub(crate) fn new(inner: baton::CountDownLatch) -> Arc<CountDownLatch> {
        Arc::new(CountDownLatch { inner, _live: Live::new() })
    }
}

#[uniffi::export]
impl CountDownLatch {
    /// The name.
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// Sets the count if it is zero; false while it is still counting.
    pub async fn try_set_count(&self, count: i64) -> Result<bool, FfiError> {
        let latch = self.inner.clone();
        call::run(async move { latch.try_set_count(baton_bind::convert::int("count", i128::from(count))?).await }).await
    }

    /// Decrements the count (never below zero); the new count.
    pub async fn count_down(&self) -> Result<u64, FfiError> {
        let latch = self.inner.clone();
        call::run(async move { latch.count_down().await }).await
    }

    /// The current count.
    pub async fn count(&self) -> Result<u64, FfiError> {
        let latch = self.inner.clone();
        call::run(async move { latch.count().await }).await
    }

    /// Waits until the count is zero (at most `timeout_ms`, then `Timeout`).
    pub async fn wait(&self, timeout_ms: f64) -> Result<(), FfiError> {
        let latch = self.inner.clone();
        call::run(async move {
            match call::timeout(timeout_ms)? {
                Some(t) => latch.wait_timeout(t).await,
                None => latch.wait().await,
            }
        })
        .await
    }
}
