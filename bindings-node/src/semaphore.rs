//! `Semaphore` and the `Permit` guard (shared with `PermitSemaphore`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use crate::call::{self, CancelToken};
use crate::cell::Cell;
use crate::guard::guard_methods;
use crate::inspect::Inspection;

/// A semaphore of N permits.
#[napi]
pub struct Semaphore {
    inner: baton::Result<baton::Semaphore>,
    name: String,
}

impl Semaphore {
    pub(crate) fn new(inner: baton::Result<baton::Semaphore>, name: String) -> Semaphore {
        Semaphore { inner, name }
    }
}

#[napi]
impl Semaphore {
    /// The name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The total number of permits (0 for a bad handle).
    #[napi(getter, catch_unwind)]
    pub fn permits(&self) -> u32 {
        self.inner.as_ref().map_or(0, baton::Semaphore::permits)
    }

    /// Waits for `count` permits at once (default 1).
    #[napi]
    pub async fn acquire(
        &self,
        count: Option<f64>,
        timeout_ms: Option<f64>,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Permit> {
        let (sem, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            let sem = sem?;
            let n = crate::convert::count("count", count.unwrap_or(1.0))?;
            match crate::convert::timeout(timeout_ms)? {
                Some(t) => sem.acquire_many_timeout(n, t).await,
                None => sem.acquire_many(n).await,
            }
        })
        .await
        .map(Permit::new)
    }

    /// One attempt at `count` permits (default 1): null when not enough are free.
    #[napi]
    pub async fn try_acquire(&self, count: Option<f64>) -> napi::Result<Option<Permit>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.try_acquire_many(crate::convert::count("count", count.unwrap_or(1.0))?).await })
            .await
            .map(|p| p.map(Permit::new))
    }

    /// Permits free right now.
    #[napi]
    pub async fn available(&self) -> napi::Result<u32> {
        let sem = self.inner.clone();
        call::run(async move { sem?.available().await }).await
    }

    /// Current permit holders and the last token.
    #[napi]
    pub async fn inspect(&self) -> napi::Result<Inspection> {
        let sem = self.inner.clone();
        call::run(async move { sem?.inspect().await }).await.map(Inspection::from)
    }
}

/// Permits held from a semaphore.
#[napi]
pub struct Permit {
    cell: Arc<Cell<baton::Permit>>,
    token: u64,
    id: String,
    name: String,
    /// The count held, kept in step by `releaseMany` (read without waiting on the cell).
    count: Arc<AtomicU32>,
}

impl Permit {
    /// Released on napi's runtime (no JavaScript-thread link: see `here`).
    fn driven(&self) -> Option<&Arc<crate::here::Link>> {
        None
    }

    pub(crate) fn new(p: baton::Permit) -> Permit {
        let (token, id, name, count) = (p.token().get(), p.id().to_owned(), p.name().to_owned(), p.count());
        let cell = Cell::new(p, format!("permit `{id}` of `{name}`"));
        Permit { cell, token, id, name, count: Arc::new(AtomicU32::new(count)) }
    }
}

#[napi]
impl Permit {
    /// The fencing token of this grant.
    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.token)
    }

    /// The permit id (what a permit semaphore releases it by).
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// The semaphore's name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// How many permits this still holds.
    #[napi(getter, catch_unwind)]
    pub fn count(&self) -> u32 {
        if self.cell.is_released() { 0 } else { self.count.load(Ordering::Acquire) }
    }

    /// Gives `n` permits back and keeps the rest.
    #[napi]
    pub async fn release_many(&self, n: f64) -> napi::Result<()> {
        let (cell, count) = (self.cell.clone(), self.count.clone());
        call::run(async move {
            let n = crate::convert::count("n", n)?;
            let mut held = cell.guard.write().await;
            let p = held.as_mut().ok_or_else(|| cell.not_held())?;
            let out = p.release_many(n).await;
            count.store(p.count(), Ordering::Release);
            out
        })
        .await
    }

    /// Sets the lease to `leaseMs` from now.
    #[napi]
    pub async fn extend(&self, lease_ms: f64) -> napi::Result<()> {
        let cell = self.cell.clone();
        call::run(async move { cell.extend(crate::convert::ms("leaseMs", lease_ms)?).await }).await
    }
}

guard_methods!(Permit);
