//! `CountDownLatch`.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::call::{cancellable, promise};
use crate::convert::{MAX_SAFE_INTEGER, safe_number, timeout, whole};

/// A count-down latch.
#[wasm_bindgen]
pub struct CountDownLatch {
    inner: baton::CountDownLatch,
}

impl CountDownLatch {
    pub(crate) fn new(inner: baton::CountDownLatch) -> CountDownLatch {
        CountDownLatch { inner }
    }
}

#[wasm_bindgen]
impl CountDownLatch {
    /// The latch's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// Sets the count if it is zero; false if a count is running.
    #[wasm_bindgen(js_name = trySetCount)]
    pub fn try_set_count(&self, n: f64) -> Promise {
        let latch = self.inner.clone();
        promise(async move { latch.try_set_count(whole("count", n, MAX_SAFE_INTEGER)?).await })
    }

    /// Counts down by one; the count after.
    #[wasm_bindgen(js_name = countDown)]
    pub fn count_down(&self) -> Promise {
        let latch = self.inner.clone();
        promise(async move { latch.count_down().await.map(safe_number) })
    }

    /// The count now.
    pub fn count(&self) -> Promise {
        let latch = self.inner.clone();
        promise(async move { latch.count().await.map(safe_number) })
    }

    /// Waits until the count is zero (at most `timeoutMs`).
    pub fn wait(&self, timeout_ms: Option<f64>, cancel: JsValue) -> Promise {
        let latch = self.inner.clone();
        cancellable(&cancel, async move {
            match timeout(timeout_ms)? {
                Some(t) => latch.wait_timeout(t).await,
                None => latch.wait().await,
            }
            .map(|()| JsValue::UNDEFINED)
        })
    }
}
