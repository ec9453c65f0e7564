//! `CountDownLatch`.

use napi_derive::napi;

use crate::call::{self, CancelToken};
use crate::convert::{MAX_SAFE_INTEGER, safe_number, whole};
use crate::errors::Answer;

/// A count-down latch handle.
#[napi]
pub struct CountDownLatch {
    inner: baton::CountDownLatch,
}

impl CountDownLatch {
    pub(crate) fn new(inner: baton::CountDownLatch) -> CountDownLatch {
        CountDownLatch { inner }
    }
}

#[napi]
impl CountDownLatch {
    /// The name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// Sets the count if it is zero; false while it is still counting.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub async fn try_set_count(&self, count: f64) -> napi::Result<Answer<bool>> {
        let latch = self.inner.clone();
        call::run(async move { latch.try_set_count(whole("count", count, MAX_SAFE_INTEGER)?).await }).await
    }

    /// Decrements the count (never below zero); resolves to the new count.
    #[napi(ts_return_type = "Promise<number>")]
    pub async fn count_down(&self) -> napi::Result<Answer<f64>> {
        let latch = self.inner.clone();
        call::run(async move { latch.count_down().await.map(safe_number) }).await
    }

    /// The current count.
    #[napi(ts_return_type = "Promise<number>")]
    pub async fn count(&self) -> napi::Result<Answer<f64>> {
        let latch = self.inner.clone();
        call::run(async move { latch.count().await.map(safe_number) }).await
    }

    /// Waits until the count is zero (at most `timeoutMs`, then `Timeout`).
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn wait(&self, timeout_ms: Option<f64>, cancel: Option<&CancelToken>) -> napi::Result<Answer<()>> {
        let (latch, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            match crate::convert::timeout(timeout_ms)? {
                Some(t) => latch.wait_timeout(t).await,
                None => latch.wait().await,
            }
        })
        .await
    }
}
