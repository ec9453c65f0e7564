//! `Semaphore` and the `Permit` guard (shared with `PermitSemaphore`).

use std::sync::Arc;

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use baton_bind::HeldPermit;

use crate::call::{self, CancelToken};
use crate::errors::Answer;
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
    #[napi(ts_return_type = "Promise<Permit>")]
    pub async fn acquire(
        &self,
        count: Option<f64>,
        timeout_ms: Option<f64>,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Answer<Permit>> {
        let (sem, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            let sem = sem?;
            let n = crate::convert::count("count", count.unwrap_or(1.0))?;
            sem.acquire_many_within(n, crate::convert::timeout(timeout_ms)?).await
        })
        .await
        .map(|a| a.map(Permit::new))
    }

    /// One attempt at `count` permits (default 1): null when not enough are free.
    #[napi(ts_return_type = "Promise<Permit | null>")]
    pub async fn try_acquire(&self, count: Option<f64>) -> napi::Result<Answer<Option<Permit>>> {
        let sem = self.inner.clone();
        call::run(async move {
            let n = crate::convert::count("count", count.unwrap_or(1.0))?;
            Ok(sem?.try_acquire_many(n).await?.map(Permit::new))
        })
        .await
    }

    /// Permits free right now.
    #[napi(ts_return_type = "Promise<number>")]
    pub async fn available(&self) -> napi::Result<Answer<u32>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.available().await }).await
    }

    /// Current permit holders and the last token.
    #[napi(ts_return_type = "Promise<Inspection>")]
    pub async fn inspect(&self) -> napi::Result<Answer<Inspection>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.inspect().await.map(Inspection::from) }).await
    }
}

/// Permits held from a semaphore.
#[napi]
pub struct Permit {
    held: HeldPermit,
}

impl Permit {
    /// Released on napi's runtime (semaphores take no fast link).
    fn driven(&self) -> Option<&Arc<call::Link>> {
        None
    }

    pub(crate) fn new(p: baton::Permit) -> Permit {
        Permit { held: HeldPermit::permit(p) }
    }
}

#[napi]
impl Permit {
    /// The fencing token of this grant.
    #[napi(getter, catch_unwind)]
    pub fn token(&self) -> BigInt {
        BigInt::from(self.held.data.token)
    }

    /// The permit id (what a permit semaphore releases it by).
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> String {
        self.held.data.id.clone()
    }

    /// The semaphore's name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.held.data.name.clone()
    }

    /// How many permits this still holds.
    #[napi(getter, catch_unwind)]
    pub fn count(&self) -> u32 {
        self.held.count()
    }

    /// Gives `n` permits back and keeps the rest.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn release_many(&self, n: f64) -> napi::Result<Answer<()>> {
        call::run(self.held.release_many(crate::convert::count("n", n))).await
    }

    /// Sets the lease to `leaseMs` from now.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn extend(&self, lease_ms: f64) -> napi::Result<Answer<()>> {
        let cell = self.held.cell.clone();
        call::run(async move { cell.extend(crate::convert::ms("leaseMs", lease_ms)?).await }).await
    }
}

guard_methods!(Permit, held.cell);
