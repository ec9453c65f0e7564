//! `Lock`, `FairLock` (one class definition for both) and `RwLock`.

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::call::{cancellable, promise};
use crate::convert::timeout;
use crate::guard::LockGuard;
use crate::inspect::{inspection, opt};

macro_rules! lock_class {
    ($(#[$m:meta])* $Js:ident, $Core:ty) => {
        $(#[$m])*
        #[wasm_bindgen]
        pub struct $Js {
            /// The handle, or the error its options met (reported by every call).
            inner: baton::Result<$Core>,
            name: String,
        }

        impl $Js {
            pub(crate) fn new(inner: baton::Result<$Core>, name: String) -> $Js {
                $Js { inner, name }
            }
        }

        #[wasm_bindgen]
        impl $Js {
            /// The name this handle locks.
            #[wasm_bindgen(getter)]
            pub fn name(&self) -> String {
                self.name.clone()
            }

            /// The owner id grants of this handle are held under (null for a bad handle).
            #[wasm_bindgen(getter)]
            pub fn owner(&self) -> Option<String> {
                self.inner.as_ref().ok().and_then(|l| l.owner()).map(str::to_owned)
            }

            /// Waits for the lock (at most `timeoutMs`, then `Timeout`); `cancel` aborts.
            pub fn acquire(&self, timeout_ms: Option<f64>, cancel: JsValue) -> Promise {
                let lock = self.inner.clone();
                cancellable(&cancel, async move {
                    let lock = lock?;
                    let g = match timeout(timeout_ms)? {
                        Some(t) => lock.acquire_timeout(t).await,
                        None => lock.acquire().await,
                    };
                    g.map(LockGuard::new)
                })
            }

            /// One attempt: null when someone else holds the lock.
            #[wasm_bindgen(js_name = tryAcquire)]
            pub fn try_acquire(&self) -> Promise {
                let lock = self.inner.clone();
                promise(async move { Ok(opt(lock?.try_acquire().await?.map(LockGuard::new))) })
            }

            /// Holders, waiters and the last token of this lock.
            pub fn inspect(&self) -> Promise {
                let lock = self.inner.clone();
                promise(async move { lock?.inspect().await.map(inspection) })
            }
        }
    };
}

lock_class!(
    /// A re-entrant exclusive lock.
    Lock,
    baton::Lock
);
lock_class!(
    /// A lock granted in request order.
    FairLock,
    baton::FairLock
);

/// Many readers or one writer.
#[wasm_bindgen]
pub struct RwLock {
    inner: baton::Result<baton::RwLock>,
    name: String,
}

impl RwLock {
    pub(crate) fn new(inner: baton::Result<baton::RwLock>, name: String) -> RwLock {
        RwLock { inner, name }
    }
}

#[wasm_bindgen]
impl RwLock {
    /// The name this handle locks.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// A read hold, shared with other readers.
    pub fn read(&self, timeout_ms: Option<f64>, cancel: JsValue) -> Promise {
        let rw = self.inner.clone();
        cancellable(&cancel, async move {
            let rw = rw?;
            let g = match timeout(timeout_ms)? {
                Some(t) => rw.read_timeout(t).await,
                None => rw.read().await,
            };
            g.map(LockGuard::new)
        })
    }

    /// The write hold, exclusive.
    pub fn write(&self, timeout_ms: Option<f64>, cancel: JsValue) -> Promise {
        let rw = self.inner.clone();
        cancellable(&cancel, async move {
            let rw = rw?;
            let g = match timeout(timeout_ms)? {
                Some(t) => rw.write_timeout(t).await,
                None => rw.write().await,
            };
            g.map(LockGuard::new)
        })
    }

    /// One attempt at a read hold: null when a writer holds it.
    #[wasm_bindgen(js_name = tryRead)]
    pub fn try_read(&self) -> Promise {
        let rw = self.inner.clone();
        promise(async move { Ok(opt(rw?.try_read().await?.map(LockGuard::new))) })
    }

    /// One attempt at the write hold: null when anyone holds it.
    #[wasm_bindgen(js_name = tryWrite)]
    pub fn try_write(&self) -> Promise {
        let rw = self.inner.clone();
        promise(async move { Ok(opt(rw?.try_write().await?.map(LockGuard::new))) })
    }

    /// Holders, waiters and the last token of this lock.
    pub fn inspect(&self) -> Promise {
        let rw = self.inner.clone();
        promise(async move { rw?.inspect().await.map(inspection) })
    }
}
