//! `MultiLock`: all-or-nothing over several locks (its guard, `MultiGuard`, is in `guard`).

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::call::{cancellable, promise};
use crate::convert::timeout;
use crate::guard::MultiGuard;
use crate::inspect::opt;

/// Several locks taken together.
#[wasm_bindgen]
pub struct MultiLock {
    inner: baton::MultiLock,
}

impl MultiLock {
    pub(crate) fn new(inner: baton::MultiLock) -> MultiLock {
        MultiLock { inner }
    }
}

#[wasm_bindgen]
impl MultiLock {
    /// The names, in the order they are taken.
    #[wasm_bindgen(getter)]
    pub fn names(&self) -> Vec<String> {
        self.inner.locks().iter().map(|l| l.name().to_owned()).collect()
    }

    /// Waits for every lock (at most `timeoutMs`).
    pub fn acquire(&self, timeout_ms: Option<f64>, cancel: JsValue) -> Promise {
        let multi = self.inner.clone();
        cancellable(&cancel, async move {
            let g = match timeout(timeout_ms)? {
                Some(t) => multi.acquire_timeout(t).await,
                None => multi.acquire().await,
            };
            g.map(MultiGuard::new)
        })
    }

    /// One attempt: null when any lock is busy.
    #[wasm_bindgen(js_name = tryAcquire)]
    pub fn try_acquire(&self) -> Promise {
        let multi = self.inner.clone();
        promise(async move { Ok(opt(multi.try_acquire().await?.map(MultiGuard::new))) })
    }
}
