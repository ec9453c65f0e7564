//! The core guard behind a JavaScript guard object.
//!
//! A core guard is consumed by `release()`; a JavaScript object cannot be, so the guard
//! sits in a [`Cell`] that `release` empties. When the JavaScript object is collected the
//! cell is dropped, and the core releases a guard dropped unreleased in the background.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use baton::{Error, ErrorKind, LostSignal, Result};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use tokio_util::sync::CancellationToken;

/// What the binding needs of a core guard (`LockGuard`, `Permit`, `MultiGuard`).
pub(crate) trait CoreGuard: Send + Sync + Sized + 'static {
    fn release(self) -> impl Future<Output = Result<()>> + Send;
    fn lost_signals(&self) -> Vec<LostSignal>;
}

impl CoreGuard for baton::LockGuard {
    fn release(self) -> impl Future<Output = Result<()>> + Send {
        baton::LockGuard::release(self)
    }
    fn lost_signals(&self) -> Vec<LostSignal> {
        vec![self.lost_signal()]
    }
}

impl CoreGuard for baton::Permit {
    fn release(self) -> impl Future<Output = Result<()>> + Send {
        baton::Permit::release(self)
    }
    fn lost_signals(&self) -> Vec<LostSignal> {
        vec![self.lost_signal()]
    }
}

impl CoreGuard for baton::MultiGuard {
    fn release(self) -> impl Future<Output = Result<()>> + Send {
        baton::MultiGuard::release(self)
    }
    fn lost_signals(&self) -> Vec<LostSignal> {
        self.guards().iter().map(baton::LockGuard::lost_signal).collect()
    }
}

/// A loss callback that does not keep Node's event loop alive (a weak threadsafe function).
pub(crate) type LostCallback = ThreadsafeFunction<(), napi::Unknown<'static>, (), napi::Status, false, true>;

/// One grant, shared by its JavaScript guard object and the calls in flight on it.
pub(crate) struct Cell<G> {
    pub(crate) guard: tokio::sync::RwLock<Option<G>>,
    lost: Vec<LostSignal>,
    /// Tripped by release and by drop: ends the loss watchers of this grant.
    done: CancellationToken,
    /// How messages name the grant: "`orders/42`".
    what: String,
}

impl<G: CoreGuard> Cell<G> {
    pub(crate) fn new(guard: G, what: String) -> Arc<Cell<G>> {
        let lost = guard.lost_signals();
        Arc::new(Cell { guard: tokio::sync::RwLock::new(Some(guard)), lost, done: CancellationToken::new(), what })
    }

    pub(crate) fn is_released(&self) -> bool {
        self.done.is_cancelled()
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.iter().any(LostSignal::is_lost)
    }

    /// Releases the grant; a second release is `NotHeld` when `strict`, else a no-op.
    pub(crate) async fn release(self: Arc<Self>, strict: bool) -> Result<()> {
        let taken = self.guard.write().await.take();
        match taken {
            Some(g) => {
                self.done.cancel();
                g.release().await
            }
            None if strict => Err(self.not_held()),
            None => Ok(()),
        }
    }

    pub(crate) fn not_held(&self) -> Error {
        Error::new(ErrorKind::NotHeld, format!("{} was already released by this guard", self.what))
    }

    /// Calls `callback` once when the lease is lost; never after release or collection.
    pub(crate) fn on_lost(&self, callback: LostCallback) {
        let (lost, done) = (self.lost.clone(), self.done.clone());
        baton::rt::global().spawn(async move {
            tokio::select! {
                biased;
                () = done.cancelled() => {}
                () = any_lost(lost) => {
                    callback.call((), ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        });
    }
}

impl<G> Drop for Cell<G> {
    fn drop(&mut self) {
        self.done.cancel();
    }
}

/// Resolves when the first of `signals` reports a loss.
async fn any_lost(signals: Vec<LostSignal>) {
    let mut waits: Vec<Pin<Box<dyn Future<Output = ()> + Send>>> =
        signals.iter().map(|s| Box::pin(s.wait()) as Pin<Box<dyn Future<Output = ()> + Send>>).collect();
    std::future::poll_fn(|cx| {
        if waits.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

/// Guards whose lease can be set again (`LockGuard`, `Permit`).
pub(crate) trait Extend: CoreGuard {
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<()>> + Send + '_;
}

impl Extend for baton::LockGuard {
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<()>> + Send + '_ {
        baton::LockGuard::extend(self, lease)
    }
}

impl Extend for baton::Permit {
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<()>> + Send + '_ {
        baton::Permit::extend(self, lease)
    }
}

impl<G: Extend> Cell<G> {
    /// Sets the lease to `lease` from now (`NotHeld` after release).
    pub(crate) async fn extend(self: Arc<Self>, lease: Duration) -> Result<()> {
        let held = self.guard.read().await;
        match held.as_ref() {
            Some(g) => g.extend(lease).await,
            None => Err(self.not_held()),
        }
    }
}
