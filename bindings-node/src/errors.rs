//! Core errors → JavaScript errors, the kind carried as data: a failed call settles with a
//! JavaScript `Error` whose `code` is the kind's name (`"Timeout"`, …) and whose message is
//! the core's (passwords redacted); the facade's `BatonError.from` reads `code`.
//!
//! napi's `async fn` rejects only with `napi::Error<Status>`, whose `code` is one of napi's
//! statuses, and converts it on the worker thread. So a call's answer is an [`Answer`]:
//! the core's `Result`, turned into a JavaScript value on the JavaScript thread, where the
//! error is made with the kind as its code (`napi::Error<&str>`) and handed to napi as the
//! JavaScript value to reject with. Aborts reject with napi's `Cancelled` status.

use napi::bindgen_prelude::{JsError, ToNapiValue, Unknown};
use napi::{Status, sys};

/// A call's answer: the value, or the core error it rejects with.
pub struct Answer<T>(pub(crate) baton::Result<T>);

impl<T> Answer<T> {
    /// The answer with its value mapped (errors pass through).
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Answer<U> {
        Answer(self.0.map(f))
    }
}

impl<T: ToNapiValue> ToNapiValue for Answer<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            // SAFETY: the caller's contract, passed on.
            Ok(v) => unsafe { T::to_napi_value(env, v) },
            Err(e) => Err(rejection(env, &e)),
        }
    }
}

/// The JavaScript error of `e` (`code` = the kind's name), as the `napi::Error` that napi
/// rejects with: it refers to the value made here, and napi settles with that value.
fn rejection(env: sys::napi_env, e: &baton::Error) -> napi::Error {
    let error = napi::Error::new(e.kind().as_str(), e.message());
    // SAFETY: on the JavaScript thread of `env` (napi converts answers there).
    let value = unsafe { JsError::from(error).into_value(env) };
    if value.is_null() {
        // The environment is going away: nobody is left to see the error.
        return napi::Error::new(Status::GenericFailure, format!("{}: {}", e.kind(), e.message()));
    }
    // SAFETY: `value` was just made in `env`.
    napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, value) })
}

/// The rejection of a call whose AbortSignal fired (the facade rethrows `signal.reason`).
pub(crate) fn aborted() -> napi::Error {
    napi::Error::new(Status::Cancelled, "the operation was aborted")
}
