//! The core guard behind a Python guard object.
//!
//! A core guard is consumed by `release()`; a Python object cannot be, so the guard sits in
//! a [`Cell`] that `release` empties. Dropping the Python object drops the cell, and the
//! core releases a guard dropped unreleased in the background.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton::{Error, ErrorKind, LostSignal, Result};

/// What the binding needs of a core guard (`LockGuard`, `Permit`, `MultiGuard`).
pub(crate) trait CoreGuard: Send + Sync + Sized + 'static {
    fn release(self) -> impl Future<Output = Result<()>> + Send;
    fn lost_signals(&self) -> Vec<LostSignal>;
}

/// Guards with a lease that can be set again.
pub(crate) trait Extend: CoreGuard {
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<()>> + Send + '_;
}

impl CoreGuard for baton::LockGuard {
    fn release(self) -> impl Future<Output = Result<()>> + Send {
        baton::LockGuard::release(self)
    }
    fn lost_signals(&self) -> Vec<LostSignal> {
        vec![self.lost_signal()]
    }
}

impl Extend for baton::LockGuard {
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<()>> + Send + '_ {
        baton::LockGuard::extend(self, lease)
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

impl Extend for baton::Permit {
    fn extend(&self, lease: Duration) -> impl Future<Output = Result<()>> + Send + '_ {
        baton::Permit::extend(self, lease)
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

/// One grant, shared by its Python guard object and the `with` block that took it.
pub(crate) struct Cell<G> {
    guard: tokio::sync::RwLock<Option<G>>,
    released: AtomicBool,
    /// How messages name the grant: "`orders/42`".
    what: String,
}

impl<G: CoreGuard> Cell<G> {
    pub(crate) fn new(guard: G, what: String) -> Arc<Cell<G>> {
        Arc::new(Cell { guard: tokio::sync::RwLock::new(Some(guard)), released: AtomicBool::new(false), what })
    }

    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Releases the grant; a second release is `NotHeld` when `strict`, else a no-op.
    pub(crate) async fn release(self: Arc<Self>, strict: bool) -> Result<()> {
        let taken = self.guard.write().await.take();
        match taken {
            Some(g) => {
                self.released.store(true, Ordering::Release);
                g.release().await
            }
            None if strict => Err(self.not_held()),
            None => Ok(()),
        }
    }

    /// Leaving a `with` block: releases unless already released; a failed release is
    /// raised only when the body itself succeeded (otherwise the body's exception is the
    /// one the caller needs). Resolves to `False` (the exception is not suppressed).
    pub(crate) async fn leave(self: Arc<Self>, body_raised: bool) -> Result<bool> {
        match self.release(false).await {
            Err(_) if body_raised => Ok(false),
            other => other.map(|()| false),
        }
    }

    fn not_held(&self) -> Error {
        Error::new(ErrorKind::NotHeld, format!("{} was already released by this guard", self.what))
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
