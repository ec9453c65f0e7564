//! Test and benchmark hooks (underscored names, hidden in the facade): every error kind
//! through the native error path, a panic, and the bridge's own cost.

use napi_derive::napi;

use crate::call::{self, Promise};
use crate::errors::Answer;

/// Rejects with the error of the kind named `kind` (`"Timeout"`, …): the test hook that
/// checks the mapping of every kind of `_errorKinds()`.
#[napi(js_name = "_raise", ts_return_type = "Promise<void>")]
pub async fn raise(kind: String) -> napi::Result<Answer<()>> {
    call::run(async move { Err(baton_bind::kind::raised(&kind)) }).await
}

/// The names of every error kind of the core, in declaration order.
#[napi(js_name = "_errorKinds", catch_unwind)]
pub fn error_kinds() -> Vec<&'static str> {
    baton_bind::kind::names()
}

/// A panic inside a native call (test hook): it must reject, not crash the process.
#[napi(js_name = "_panic", ts_return_type = "Promise<void>")]
pub async fn panic_hook() -> napi::Result<Answer<()>> {
    call::run(async { panic!("a deliberate panic from _panic()") }).await
}

/// An async call that does nothing on baton's runtime: the bridge's own cost (benchmarks).
#[napi(js_name = "_noop", ts_return_type = "Promise<void>")]
pub async fn noop() -> napi::Result<Answer<()>> {
    call::run(async { Ok(()) }).await
}

/// The same through the path of acquire and release (`call::hot`): its cost against
/// napi's own.
#[napi(js_name = "_noopSettled", ts_return_type = "Promise<void>")]
pub fn noop_settled(env: napi::Env) -> napi::Result<Promise> {
    call::hot(&env, None, call::run(async { Ok(()) }))
}
