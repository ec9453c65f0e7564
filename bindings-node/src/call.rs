//! The async bridge: every native call is polled on napi-rs's runtime (see `lib.rs`: baton's
//! clients made here run their background work on it too) with panics turned into Backend
//! errors (`baton::rt::catch_panics`), and waits that JavaScript can abort take a
//! [`CancelToken`] the facade trips from an `AbortSignal`. Polling in place instead of
//! hopping to baton's shared runtime (`baton::rt::run`) saves two thread wake-ups a call.
//!
//! The hot calls (acquire, tryAcquire, release, close) return a [`Promise`] made by
//! [`hot`]: through the fast path (`fast/`, cargo feature `fast`) when built, else
//! through napi's own future-to-promise bridge, as every other call.

use std::future::Future;
use std::sync::Arc;

use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, sys};
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::errors::{Answer, aborted};

/// Runs `fut`; its error settles the call as the JavaScript error of its kind.
pub(crate) async fn run<T, F>(fut: F) -> napi::Result<Answer<T>>
where
    T: Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    Ok(Answer(baton::rt::catch_panics(fut).await))
}

/// As [`run`], but a tripped `cancel` drops `fut` at once (the acquire futures of the core
/// are cancel-safe: nothing stays held or queued) and rejects with the `Cancelled` status.
pub(crate) async fn run_cancellable<T, F>(cancel: Option<CancellationToken>, fut: F) -> napi::Result<Answer<T>>
where
    T: Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    let Some(cancel) = cancel else { return run(fut).await };
    if cancel.is_cancelled() {
        return Err(aborted());
    }
    // Dropping `fut` is safe: a grant that arrived meanwhile is given back in the background.
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(aborted()),
        r = baton::rt::catch_panics(fut) => Ok(Answer(r)),
    }
}

/// A client's fast link to its store (`fast::Link`); none without the `fast` feature.
#[cfg(feature = "fast")]
pub(crate) use crate::fast::Link;
/// No link without the `fast` feature (the type has no value).
#[cfg(not(feature = "fast"))]
pub(crate) enum Link {}

/// A promise made by [`hot`], returned as is to JavaScript.
pub struct Promise(pub(crate) sys::napi_value);

impl ToNapiValue for Promise {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        Ok(val.0)
    }
}

/// A promise of `fut`'s answer for a hot call, over `link` where the fast path has one.
pub(crate) fn hot<T, F>(env: &Env, link: Option<&Arc<Link>>, fut: F) -> napi::Result<Promise>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = napi::Result<T>> + Send + 'static,
{
    #[cfg(feature = "fast")]
    {
        crate::fast::promise(env, link, fut)
    }
    #[cfg(not(feature = "fast"))]
    {
        let _ = link;
        // SAFETY: napi calls the resolver on the JavaScript thread of `env`.
        let resolve = |env, v| unsafe { T::to_napi_value(env, v) };
        napi::bindgen_prelude::execute_tokio_future(env.raw(), fut, resolve).map(Promise)
    }
}

/// A one-shot cancel switch for a pending call (the facade trips it on `signal.abort`).
#[napi]
pub struct CancelToken {
    pub(crate) inner: CancellationToken,
}

#[napi]
impl CancelToken {
    #[napi(constructor, catch_unwind)]
    pub fn new() -> CancelToken {
        CancelToken { inner: CancellationToken::new() }
    }

    /// Cancels every call this token was passed to.
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

/// The core token behind an optional `CancelToken` argument.
pub(crate) fn token(cancel: Option<&CancelToken>) -> Option<CancellationToken> {
    cancel.map(|c| c.inner.clone())
}
