//! `Lock` and `FairLock`: one class definition for both.

use napi::Env;
use napi_derive::napi;

use crate::call::{self, CancelToken, Link, Promise};
use crate::errors::Answer;
use crate::guard::LockGuard;
use crate::inspect::Inspection;

macro_rules! lock_class {
    ($(#[$m:meta])* $Js:ident, $Core:ty) => {
        $(#[$m])*
        #[napi]
        pub struct $Js {
            /// The handle, or the error its options met (reported by every call).
            inner: baton::Result<$Core>,
            name: String,
            /// The client's fast link, if any (`fast`).
            link: Option<std::sync::Arc<Link>>,
        }

        impl $Js {
            pub(crate) fn new(inner: baton::Result<$Core>, name: String, link: Option<std::sync::Arc<Link>>) -> $Js {
                $Js { inner, name, link }
            }
        }

        #[napi]
        impl $Js {
            /// The name this handle locks.
            #[napi(getter, catch_unwind)]
            pub fn name(&self) -> String {
                self.name.clone()
            }

            /// The owner id grants of this handle are held under (null for a bad handle).
            #[napi(getter, catch_unwind)]
            pub fn owner(&self) -> Option<String> {
                self.inner.as_ref().ok().and_then(|l| l.owner()).map(str::to_owned)
            }

            /// Waits for the lock (at most `timeoutMs`, then `Timeout`); `cancel` aborts.
            #[napi(ts_return_type = "Promise<LockGuard>")]
            pub fn acquire(
                &self,
                env: Env,
                timeout_ms: Option<f64>,
                cancel: Option<&CancelToken>,
            ) -> napi::Result<Promise> {
                let (lock, cancel, link) = (self.inner.clone(), call::token(cancel), self.link.clone());
                let fut = call::run_cancellable(cancel, async move {
                    let lock = lock?;
                    let g = match crate::convert::timeout(timeout_ms)? {
                        Some(t) => lock.acquire_timeout(t).await,
                        None => lock.acquire().await,
                    };
                    g.map(|g| LockGuard::over(g, link))
                });
                call::hot(&env, self.link.as_ref(), fut)
            }

            /// One attempt: null when someone else holds the lock.
            #[napi(ts_return_type = "Promise<LockGuard | null>")]
            pub fn try_acquire(&self, env: Env) -> napi::Result<Promise> {
                let (lock, link) = (self.inner.clone(), self.link.clone());
                let fut = call::run(async move { Ok(lock?.try_acquire().await?.map(|g| LockGuard::over(g, link))) });
                call::hot(&env, self.link.as_ref(), fut)
            }

            /// Holders, waiters and the last token of this lock.
            #[napi(ts_return_type = "Promise<Inspection>")]
            pub async fn inspect(&self) -> napi::Result<Answer<Inspection>> {
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
