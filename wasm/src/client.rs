//! `connect()` and `Client`: the handle factory.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::call::promise;
use crate::convert::{count, lock_options};
use crate::inspect::inspection;
use crate::latch::CountDownLatch;
use crate::lock::{FairLock, Lock, RwLock};
use crate::multi::MultiLock;
use crate::semaphore::{PermitSemaphore, Semaphore};

/// Connects to the store `url` names (`memory://`, `etcd+http://host:2379`, …).
#[wasm_bindgen]
pub fn connect(url: String) -> Promise {
    promise(async move { baton::Client::connect(&url).await.map(|inner| Client { inner }) })
}

/// A connection to one store.
#[wasm_bindgen]
pub struct Client {
    inner: baton::Client,
}

#[wasm_bindgen]
impl Client {
    /// A lock handle (bad names or options are reported by its calls).
    pub fn lock(&self, name: String, options: JsValue) -> Lock {
        Lock::new(lock_options(&options).map(|o| self.inner.lock_with(&name, o)), name)
    }

    /// A fair lock handle (grants in request order).
    #[wasm_bindgen(js_name = fairLock)]
    pub fn fair_lock(&self, name: String, options: JsValue) -> FairLock {
        FairLock::new(lock_options(&options).map(|o| self.inner.fair_lock_with(&name, o)), name)
    }

    /// A read-write lock handle.
    #[wasm_bindgen(js_name = rwLock)]
    pub fn rw_lock(&self, name: String, options: JsValue) -> RwLock {
        RwLock::new(lock_options(&options).map(|o| self.inner.rw_lock_with(&name, o)), name)
    }

    /// A semaphore of `permits` permits.
    pub fn semaphore(&self, name: String, permits: f64, options: JsValue) -> Semaphore {
        let inner = count("permits", permits)
            .and_then(|n| lock_options(&options).map(|o| self.inner.semaphore_with(&name, n, o)));
        Semaphore::new(inner, name)
    }

    /// A semaphore whose permits have ids and leases of their own.
    #[wasm_bindgen(js_name = permitSemaphore)]
    pub fn permit_semaphore(&self, name: String, permits: f64, options: JsValue) -> PermitSemaphore {
        let inner = count("permits", permits)
            .and_then(|n| lock_options(&options).map(|o| self.inner.permit_semaphore_with(&name, n, o)));
        PermitSemaphore::new(inner, name)
    }

    /// A count-down latch handle.
    #[wasm_bindgen(js_name = countDownLatch)]
    pub fn count_down_latch(&self, name: String) -> CountDownLatch {
        CountDownLatch::new(self.inner.count_down_latch(&name))
    }

    /// A multi-lock over `names`.
    #[wasm_bindgen(js_name = multiLock)]
    pub fn multi_lock(&self, names: Vec<String>) -> MultiLock {
        MultiLock::new(self.inner.multi_lock(names))
    }

    /// Holder, hold count, lease left and last token of the lock `name`.
    pub fn inspect(&self, name: String) -> Promise {
        let client = self.inner.clone();
        promise(async move { client.inspect(&name).await.map(inspection) })
    }

    /// Releases everything this client holds and closes the store connection.
    pub fn close(&self) -> Promise {
        let client = self.inner.clone();
        promise(async move {
            client.close().await;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// This client's id.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_owned()
    }

    /// The store URL, password redacted.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.inner.url()
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter = isClosed)]
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
