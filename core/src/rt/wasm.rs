//! The seam on `wasm32`: one thread, the JavaScript event loop.
//!
//! The core's futures are `Send` (the trait objects of the stores say so); browser values
//! (promises, timer ids) are not. On `wasm32-unknown-unknown` without the `atomics`
//! target feature there is exactly one thread, so [`Local`] may claim `Send` and `Sync`
//! for them; a build with threads is refused below rather than made unsound.

#[cfg(target_feature = "atomics")]
compile_error!("baton's wasm runtime seam assumes one thread: build without the `atomics` target feature");

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use js_sys::{Function, Promise};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::Local;
use crate::error::Result;

/// The clock: `performance.now()`, monotonic.
pub(crate) type Instant = web_time::Instant;

#[wasm_bindgen]
extern "C" {
    // The global timer functions: present in windows, workers, Node and edge runtimes.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// Where a client spawns its background work: the event loop (there is only one).
#[derive(Debug, Clone)]
pub(crate) struct Rt;

impl Rt {
    pub(crate) fn current() -> Rt {
        Rt
    }

    pub(crate) fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn(fut)
    }
}

/// No `fork()` in a page.
pub(crate) fn fork_generation() -> u64 {
    0
}

/// A task on the event loop; `abort` stops it at its next await.
#[derive(Debug)]
pub(crate) struct JoinHandle<T> {
    cancel: CancellationToken,
    rx: oneshot::Receiver<T>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn abort(&self) {
        self.cancel.cancel();
    }
}

/// A task that was aborted before it finished.
#[derive(Debug)]
pub(crate) struct Aborted;

impl<T> Future for JoinHandle<T> {
    type Output = std::result::Result<T, Aborted>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map_err(|_| Aborted)
    }
}

pub(crate) fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let (tx, rx) = oneshot::channel();
    wasm_bindgen_futures::spawn_local(async move {
        tokio::select! {
            biased;
            _ = stop.cancelled() => {}
            v = fut => { let _ = tx.send(v); }
        }
    });
    JoinHandle { cancel, rx }
}

/// Aborts the task when dropped.
#[derive(Debug)]
pub(crate) struct AbortOnDrop<T>(pub(crate) JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// As the native `run`: here there is no other runtime to hop to, and a panic traps the
/// instance (wasm32 has no unwinding), which the JavaScript layer reports as an error.
pub fn run<T, F>(fut: F) -> impl Future<Output = Result<T>>
where
    F: Future<Output = Result<T>> + 'static,
{
    fut
}

/// As the native `catch_panics`; see [`run`] for panics on wasm32.
pub fn catch_panics<T, F>(fut: F) -> impl Future<Output = Result<T>>
where
    F: Future<Output = Result<T>>,
{
    fut
}

/// A `setTimeout` as a future; dropping it clears the timer.
#[derive(Debug)]
pub(crate) struct Sleep(Local<(JsFuture, JsValue)>);

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0.0.0).poll(cx).map(drop)
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        clear_timeout(&self.0.0.1);
    }
}

pub(crate) fn sleep(d: Duration) -> Sleep {
    // Whole milliseconds, rounded up: waking early would only make the caller sleep again.
    let ms = (d.as_micros().div_ceil(1000) as f64).min(f64::from(i32::MAX));
    let mut id = JsValue::UNDEFINED;
    let p = Promise::new(&mut |resolve, _| id = set_timeout(&resolve, ms));
    Sleep(Local((JsFuture::from(p), id)))
}

pub(crate) fn sleep_until(at: Instant) -> Sleep {
    sleep(at.saturating_duration_since(Instant::now()))
}

/// The deadline passed first.
#[derive(Debug)]
pub(crate) struct Elapsed;

pub(crate) async fn timeout<F: Future>(d: Duration, fut: F) -> std::result::Result<F::Output, Elapsed> {
    tokio::select! {
        biased;
        v = fut => Ok(v),
        _ = sleep(d) => Err(Elapsed),
    }
}

pub(crate) async fn timeout_at<F: Future>(at: Instant, fut: F) -> std::result::Result<F::Output, Elapsed> {
    timeout(at.saturating_duration_since(Instant::now()), fut).await
}
