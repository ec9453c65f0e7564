//! Test hooks: every error kind through the native error path, a panic, the kind list.

use crate::call;
use crate::errors::FfiError;

/// Fails with the error of the kind named `kind` (`"Timeout"`, …).
#[uniffi::export]
pub async fn test_raise(kind: String) -> Result<(), FfiError> {
    call::run(async move { Err(baton_bind::kind::raised(&kind)) }).await
}

/// The names of every error kind of the core, in declaration order.
#[uniffi::export]
pub fn error_kinds() -> Vec<String> {
    baton_bind::kind::names().into_iter().map(str::to_owned).collect()
}

/// A panic inside an async call: it must fail with `Backend`, not crash the JVM.
#[uniffi::export]
pub async fn test_panic() -> Result<(), FfiError> {
    call::run(async { panic!("a deliberate panic from testPanic()") }).await
}

/// An async call that does nothing on baton's runtime: the bridge's own cost (benchmarks).
#[uniffi::export]
pub async fn noop() -> Result<(), FfiError> {
    call::run(async { Ok(()) }).await
}
