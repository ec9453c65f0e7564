//! `CountDownLatch`.

use napi_derive::napi;

use crate::call::{self, CancelToken};

/// Largest count a JavaScript number carries exactly (2^53 - 1).
const MAX_SAFE: u64 = (1 << 53) - 1;

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

/// A latch count as a JavaScript number (saturating: no store holds more than 2^53).
fn to_js(n: u64) -> f64 {
    n.min(MAX_SAFE) as f64
}

#[napi]
impl CountDownLatch {
    /// The name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// Sets the count if it is zero; false while it is still counting.
    #[napi]
    pub async fn try_set_count(&self, count: f64) -> napi::Result<bool> {
        let latch = self.inner.clone();
        call::run(async move { latch.try_set_count(crate::convert::whole("count", count, MAX_SAFE)?).await }).await
    }

    /// Decrements the count (never below zero); resolves to the new count.
    #[napi]
    pub async fn count_down(&self) -> napi::Result<f64> {
        let latch = self.inner.clone();
        call::run(async move { latch.count_down().await }).await.map(to_js)
    }

    /// The current count.
    #[napi]
    pub async fn count(&self) -> napi::Result<f64> {
        let latch = self.inner.clone();
        call::run(async move { latch.count().await }).await.map(to_js)
    }

    /// Waits until the count is zero (at most `timeoutMs`, then `Timeout`).
    #[napi]
    pub async fn wait(&self, timeout_ms: Option<f64>, cancel: Option<&CancelToken>) -> napi::Result<()> {
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
