//! The async bridge: every native call is polled on napi-rs's runtime (see `lib.rs`: baton's
//! clients made here run their background work on it too) with panics turned into Backend
//! errors (`baton::rt::catch_panics`), and waits that JavaScript can abort take a
//! [`CancelToken`] the facade trips from an `AbortSignal`. Polling in place instead of
//! hopping to baton's shared runtime (`baton::rt::run`) saves two thread wake-ups a call.

use std::future::Future;

use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::errors::{aborted, to_napi};

/// Runs `fut` and maps its error for JavaScript.
pub(crate) async fn run<T, F>(fut: F) -> napi::Result<T>
where
    T: Send + 'static,
    F: Future<Output = baton::Result<T>> + Send + 'static,
{
    baton::rt::catch_panics(fut).await.map_err(to_napi)
}

/// As [`run`], but a tripped `cancel` drops `fut` at once (the acquire futures of the core
/// are cancel-safe: nothing stays held or queued) and rejects with the `Cancelled` status.
pub(crate) async fn run_cancellable<T, F>(cancel: Option<CancellationToken>, fut: F) -> napi::Result<T>
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
        r = baton::rt::catch_panics(fut) => r.map_err(to_napi),
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

/// An async call that does nothing on baton's runtime: the bridge's own cost (benchmarks).
#[napi(js_name = "_noop")]
pub async fn noop() -> napi::Result<()> {
    run(async { Ok(()) }).await
}

/// The same through `settle` (what acquire and release use): its cost against napi's own.
#[napi(js_name = "_noopSettled", ts_return_type = "Promise<void>")]
pub fn noop_settled(env: napi::Env) -> napi::Result<crate::settle::Promise> {
    crate::settle::promise(&env, run(async { Ok(()) }))
}
