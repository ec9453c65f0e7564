//! The runtime seam: the one place that knows what runs the core's futures. Everything
//! that differs between a native build and a browser — spawning background tasks,
//! timers, the clock — goes through here, so the engine and the stores have no `cfg` of
//! their own.
//!
//! - Native (`native`): tokio. One captured handle per client, a shared multi-threaded
//!   runtime for callers that have none (Python, the JVM, C), tokio's timers and clock.
//! - `wasm32` (`wasm`): the page's single thread. Tasks run on the JavaScript event loop
//!   (`wasm-bindgen-futures`), timers are `setTimeout`, the clock is `performance.now()`.

#[cfg(not(target_family = "wasm"))]
mod native;
#[cfg(not(target_family = "wasm"))]
pub(crate) use self::native::{AbortOnDrop, Rt, fork_generation};
#[cfg(not(target_family = "wasm"))]
pub use self::native::{block_on, catch_panics, global, in_context, run};
// The seam's whole surface: builds without some stores use only part of it.
#[cfg(not(target_family = "wasm"))]
#[allow(unused_imports)]
pub(crate) use std::time::{SystemTime, UNIX_EPOCH};
#[cfg(not(target_family = "wasm"))]
#[allow(unused_imports)]
pub(crate) use tokio::{
    spawn,
    time::{Instant, sleep, sleep_until, timeout, timeout_at},
};

#[cfg(target_family = "wasm")]
mod wasm;
#[cfg(target_family = "wasm")]
pub(crate) use self::wasm::{
    AbortOnDrop, Instant, Rt, fork_generation, sleep, sleep_until, spawn, timeout, timeout_at,
};
#[cfg(target_family = "wasm")]
pub use self::wasm::{catch_panics, run};
#[cfg(target_family = "wasm")]
#[allow(unused_imports)]
pub(crate) use web_time::{SystemTime, UNIX_EPOCH};

/// A value that belongs to the event loop's thread: a `fetch` future, a response body.
/// Natively it is as `Send` as what it holds; on wasm32 (one thread) it is always `Send`
/// and `Sync`, which lets browser values sit inside the core's `Send` futures.
#[derive(Debug)]
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
pub(crate) struct Local<T>(pub(crate) T);

#[cfg(target_family = "wasm")]
// SAFETY: `rt::wasm` refuses builds with threads (`atomics`): nothing can cross one.
unsafe impl<T> Send for Local<T> {}
#[cfg(target_family = "wasm")]
// SAFETY: as above.
unsafe impl<T> Sync for Local<T> {}

/// `fut`, pinned, as a [`Local`].
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
pub(crate) fn local<F: std::future::Future>(fut: F) -> Local<std::pin::Pin<Box<F>>> {
    Local(Box::pin(fut))
}

impl<F: std::future::Future + Unpin> std::future::Future for Local<F> {
    type Output = F::Output;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}
