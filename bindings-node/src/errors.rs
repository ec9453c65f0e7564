//! Core errors → JavaScript errors (GUIDE B.5): one `match` on the kind.
//!
//! napi's `async fn` rejects with `napi::Error<Status>` only (a custom status type is not
//! accepted there), so the kind travels as the message prefix the core's `Display` already
//! writes (`"Timeout: …"`), under the status `GenericFailure`; the facade's
//! `BatonError.from` reads it back into `code`. Aborts use the status `Cancelled`.

use baton::{Error, ErrorKind};
use napi::Status;
use napi_derive::napi;

/// The JavaScript error for a core error: `"<code>: <message>"` (passwords redacted).
pub(crate) fn to_napi(e: Error) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("{}: {}", code(e.kind()), e.message()))
}

/// `BatonError.code` of each kind (API.md's names).
fn code(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidArgument => "InvalidArgument",
        ErrorKind::InvalidUrl => "InvalidUrl",
        ErrorKind::Timeout => "Timeout",
        ErrorKind::NotHeld => "NotHeld",
        ErrorKind::LockLost => "LockLost",
        ErrorKind::Connection => "Connection",
        ErrorKind::Backend => "Backend",
        ErrorKind::Closed => "Closed",
        ErrorKind::Unsupported => "Unsupported",
        // `ErrorKind` is non-exhaustive: a kind added later is Backend until mapped.
        _ => "Backend",
    }
}

/// `InvalidArgument` with `msg`, for bad input the binding itself finds.
pub(crate) fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, msg.into())
}

/// The rejection of a call whose AbortSignal fired (the facade rethrows `signal.reason`).
pub(crate) fn aborted() -> napi::Error {
    napi::Error::new(Status::Cancelled, "the operation was aborted")
}

/// Rejects with the error of the kind named `kind` (`"Timeout"`, …): the test hook that
/// checks the mapping of every kind of `ErrorKind.ALL`.
#[napi(js_name = "_raise")]
pub async fn raise(kind: String) -> napi::Result<()> {
    crate::call::run(async move {
        Err(match ErrorKind::from_name(&kind) {
            Some(k) => Error::new(k, format!("raised by _raise({kind:?})")),
            None => invalid(format!("unknown error kind {kind:?}")),
        })
    })
    .await
}

/// The names of every error kind of the core, in declaration order.
#[napi(js_name = "_errorKinds", catch_unwind)]
pub fn error_kinds() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|k| k.as_str()).collect()
}

/// A panic inside a native call (test hook): it must reject, not crash the process.
#[napi(js_name = "_panic")]
pub async fn panic_hook() -> napi::Result<()> {
    crate::call::run(async { panic!("a deliberate panic from _panic()") }).await
}
