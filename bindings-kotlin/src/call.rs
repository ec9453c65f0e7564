//! Every call is polled where Kotlin polls it (its own threads), inside the context of
//! baton's shared runtime (`baton::rt::in_context`): the JVM has no tokio, and a hop onto a
//! runtime worker and back would cost two thread wake-ups per call. A panic inside becomes
//! a `Backend` error; dropping the future (a cancelled coroutine) drops the call, and the
//! core's acquire futures are cancel-safe: nothing stays held or queued.

use std::future::Future;
use std::time::Duration;

use baton::Result;

use crate::errors::FfiError;

/// Runs `fut` in baton's runtime context; its error becomes the uniffi error of its kind.
pub(crate) async fn run<T, F>(fut: F) -> Result<T, FfiError>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    baton::rt::in_context(fut).await.map_err(FfiError::from)
}

/// Runs `fut` on the calling JVM thread until it completes (`baton::rt::block_on`): for the
/// Java surface's calls that need one store answer and no wait. On a plain `redis://`
/// server (feature `own-link`) this thread also writes the requests and reads the answers
/// itself, over a connection of its own (`baton::ffi::drive_here`): no runtime worker
/// between the socket and the caller, two thread wake-ups fewer a request.
pub(crate) fn block<T, F>(fut: F) -> Result<T, FfiError>
where
    F: Future<Output = Result<T>>,
{
    #[cfg(feature = "own-link")]
    let out = baton::ffi::drive_here(|| baton::rt::block_on(fut));
    #[cfg(not(feature = "own-link"))]
    let out = baton::rt::block_on(fut);
    out.map_err(FfiError::from)
}

/// One attempt, blocking the calling thread: the first step of a Java blocking acquire
/// (a grant, or null for the suspending wait to follow). `timeout_ms` is checked first, as
/// the acquire this begins would check it.
pub(crate) fn attempt<G, F>(timeout_ms: f64, attempt: F) -> Result<Option<G>, FfiError>
where
    F: Future<Output = Result<Option<G>>>,
{
    block(async move {
        timeout(timeout_ms)?;
        attempt.await
    })
}

/// A wait limit in milliseconds (`timeout`), validated as in every binding; `+∞` is none
/// (a plain `f64` crosses JNA without the buffer an optional needs, on every acquire).
pub(crate) fn timeout(ms: f64) -> Result<Option<Duration>> {
    if ms == f64::INFINITY {
        return Ok(None);
    }
    baton_bind::convert::opt_millis("timeout", Some(ms))
}

/// A duration in milliseconds called `what` in messages.
pub(crate) fn millis(what: &str, ms: f64) -> Result<Duration> {
    baton_bind::convert::millis(what, ms)
}

/// A count from a JVM `Long` (`permits`, `count`): out of `u32` range is `InvalidArgument`.
pub(crate) fn count(what: &str, n: i64) -> Result<u32> {
    baton_bind::convert::int(what, i128::from(n))
}
