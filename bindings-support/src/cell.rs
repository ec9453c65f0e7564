//! The core guard behind a guard object of the host language.
//!
//! A core guard is consumed by `release()`; a host object cannot be, so the guard sits in a
//! [`Cell`] that `release` empties. When the host object is collected the cell is dropped,
//! and the core releases a guard dropped unreleased in the background.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use baton::{Error, ErrorKind, LostSignal, Result};
use tokio::sync::{RwLock, RwLockMappedWriteGuard, RwLockWriteGuard};
use tokio_util::sync::CancellationToken;

/// What a binding needs of a core guard (`LockGuard`, `Permit`, `MultiGuard`).
pub trait CoreGuard: Send + Sync + Sized + 'static {
    /// Gives the grant back.
    fn release(self) -> impl Future<Output = Result<()>> + Send;
    /// The signals that fire when the lease is lost (one per lock held).
    fn lost_signals(&self) -> Vec<LostSignal>;
}

/// Guards whose lease can be set again (`LockGuard`, `Permit`).
pub trait Extend: CoreGuard {
    /// Sets the lease to `lease` from now.
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

/// One grant, shared by its host guard object and the calls in flight on it.
pub struct Cell<G> {
    guard: RwLock<Option<G>>,
    lost: Vec<LostSignal>,
    /// Tripped by release and by drop: ends the loss watchers of this grant.
    done: CancellationToken,
    /// How messages name the grant: "`orders/42`".
    what: String,
}

impl<G: CoreGuard> Cell<G> {
    /// A cell holding `guard`; `what` names it in messages ("`orders/42`").
    pub fn new(guard: G, what: String) -> Arc<Cell<G>> {
        let lost = guard.lost_signals();
        Arc::new(Cell { guard: RwLock::new(Some(guard)), lost, done: CancellationToken::new(), what })
    }

    /// Whether the grant was released through this cell.
    pub fn is_released(&self) -> bool {
        self.done.is_cancelled()
    }

    /// Whether the lease is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.lost.iter().any(LostSignal::is_lost)
    }

    /// The loss signals of the grant.
    pub fn lost_signals(&self) -> &[LostSignal] {
        &self.lost
    }

    /// Releases the grant; a second release is `NotHeld` when `strict`, else a no-op.
    pub async fn release(self: Arc<Self>, strict: bool) -> Result<()> {
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

    /// Leaving a scoped block (Python's `with`): releases unless already released; a failed
    /// release is reported only when the body itself succeeded (otherwise the body's error
    /// is the one the caller needs). Resolves to `false` (the body's error is not
    /// suppressed).
    pub async fn leave(self: Arc<Self>, body_raised: bool) -> Result<bool> {
        match self.release(false).await {
            Err(_) if body_raised => Ok(false),
            other => other.map(|()| false),
        }
    }

    /// The held guard, for a step that changes it in place (`releaseMany`); `NotHeld`
    /// after release. Release waits until the returned lock is dropped.
    pub async fn held_mut(&self) -> Result<RwLockMappedWriteGuard<'_, G>> {
        RwLockWriteGuard::try_map(self.guard.write().await, Option::as_mut).map_err(|_| self.not_held())
    }

    /// The `NotHeld` error of a call on a released grant.
    pub fn not_held(&self) -> Error {
        Error::new(ErrorKind::NotHeld, format!("{} was already released by this guard", self.what))
    }

    /// Resolves to `true` when the lease is lost first, `false` once the grant is released
    /// or the cell dropped (a binding's loss callback must not fire after either).
    pub fn lost(&self) -> impl Future<Output = bool> + Send + 'static {
        let (lost, done) = (self.lost.clone(), self.done.clone());
        async move {
            tokio::select! {
                biased;
                () = done.cancelled() => false,
                () = any_lost(lost) => true,
            }
        }
    }
}

impl<G: Extend> Cell<G> {
    /// Sets the lease to `lease` from now (`NotHeld` after release).
    pub async fn extend(self: Arc<Self>, lease: Duration) -> Result<()> {
        let held = self.guard.read().await;
        match held.as_ref() {
            Some(g) => g.extend(lease).await,
            None => Err(self.not_held()),
        }
    }
}

impl<G> Drop for Cell<G> {
    fn drop(&mut self) {
        self.done.cancel();
    }
}

/// Resolves when the first of `signals` reports a loss (never, for none).
pub async fn any_lost(signals: Vec<LostSignal>) {
    let mut waits: Vec<Pin<Box<dyn Future<Output = ()> + Send>>> =
        signals.iter().map(|s| Box::pin(s.wait()) as Pin<Box<dyn Future<Output = ()> + Send>>).collect();
    std::future::poll_fn(|cx| {
        // Every pending signal registers the waker; stopping at the first fired one is fine.
        if waits.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn guard(client: &baton::Client, name: &str) -> baton::LockGuard {
        client.lock(name).acquire().await.unwrap()
    }

    #[tokio::test]
    async fn release_once_then_not_held() {
        let client = baton::Client::connect("memory://bind-cell").await.unwrap();
        let cell = Cell::new(guard(&client, "a").await, "`a`".to_owned());
        let lost = cell.lost();
        assert!(!cell.is_released() && !cell.is_lost());
        cell.clone().release(true).await.unwrap();
        assert!(cell.is_released());
        assert!(!lost.await, "a released grant is not reported lost");
        let e = cell.clone().release(true).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotHeld);
        assert_eq!(e.message(), "`a` was already released by this guard");
        cell.clone().release(false).await.unwrap();
        assert_eq!(cell.clone().extend(Duration::from_secs(1)).await.unwrap_err().kind(), ErrorKind::NotHeld);
        assert_eq!(cell.held_mut().await.err().map(|e| e.kind()), Some(ErrorKind::NotHeld));
        // The lock is free again.
        client.lock("a").try_acquire().await.unwrap().unwrap().release().await.unwrap();
    }

    #[tokio::test]
    async fn leave_keeps_the_body_error() {
        let client = baton::Client::connect("memory://bind-leave").await.unwrap();
        let cell = Cell::new(guard(&client, "b").await, "`b`".to_owned());
        assert!(!cell.clone().leave(true).await.unwrap());
        assert!(cell.is_released());
        assert!(!cell.clone().leave(false).await.unwrap());
    }
}
