//! `Lock` and `FairLock`: one definition for both.

use std::sync::Arc;

use crate::call;
use crate::errors::FfiError;
use crate::guard::LockGuard;
use crate::inspect::Inspection;
use crate::live::Live;

macro_rules! lock_class {
    ($(#[$m:meta])* $T:ident, $Core:ty) => {
        $(#[$m])*
        #[derive(uniffi::Object)]
        pub struct $T {
            /// The handle, or the error its options met (reported by every call).
            inner: baton::Result<$Core>,
            name: String,
            _live: Live,
        }

        impl $T {
            pub(crate) fn new(inner: baton::Result<$Core>, name: String) -> Arc<$T> {
                Arc::new($T { inner, name, _live: Live::new() })
            }

            fn once(&self) -> impl Future<Output = baton::Result<Option<Arc<LockGuard>>>> + Send + 'static {
                let lock = self.inner.clone();
                async move { Ok(lock?.try_acquire().await?.map(LockGuard::new)) }
            }
        }

        #[uniffi::export]
        impl $T {
            /// The name this handle locks.
            pub fn name(&self) -> String {
                self.name.clone()
            }

            /// The owner id grants of this handle are held under (null for a bad handle).
            pub fn owner(&self) -> Option<String> {
                self.inner.as_ref().ok().and_then(|l| l.owner()).map(str::to_owned)
            }

            /// Waits for the lock (at most `timeout_ms`, then `Timeout`).
            pub async fn acquire(&self, timeout_ms: f64) -> Result<Arc<LockGuard>, FfiError> {
                let lock = self.inner.clone();
                call::run(async move {
                    let lock = lock?;
                    let g = match call::timeout(timeout_ms)? {
                        Some(t) => lock.acquire_timeout(t).await,
                        None => lock.acquire().await,
                    };
                    g.map(LockGuard::new)
                })
                .await
            }

            /// One attempt: null when someone else holds the lock.
            pub async fn try_acquire(&self) -> Result<Option<Arc<LockGuard>>, FfiError> {
                call::run(self.once()).await
            }

            /// [`try_acquire`](Self::try_acquire), blocking the calling thread, after
            /// checking `timeout_ms` (`call::attempt`).
            pub fn attempt(&self, timeout_ms: f64) -> Result<Option<Arc<LockGuard>>, FfiError> {
                call::attempt(timeout_ms, self.once())
            }

            /// Holders, waiters and the last token of this lock.
            pub async fn inspect(&self) -> Result<Inspection, FfiError> {
                let lock = self.inner.clone();
                call::run(async move { lock?.inspect().await.map(Inspection::from) }).await
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
