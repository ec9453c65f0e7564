//! `PermitSemaphore`: permits with ids and leases of their own.

use napi_derive::napi;

use crate::call::{self, CancelToken};
use crate::errors::invalid;
use crate::inspect::Inspection;
use crate::semaphore::Permit;

/// A semaphore whose permits carry ids and leases; any process may release one by id.
#[napi]
pub struct PermitSemaphore {
    inner: baton::Result<baton::PermitSemaphore>,
    name: String,
}

impl PermitSemaphore {
    pub(crate) fn new(inner: baton::Result<baton::PermitSemaphore>, name: String) -> PermitSemaphore {
        PermitSemaphore { inner, name }
    }
}

#[napi]
impl PermitSemaphore {
    /// The name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Waits for a permit: held under the handle's lease, or expiring `leaseMs` after the
    /// grant unless extended; at most `timeoutMs` (not together with `leaseMs`).
    #[napi]
    pub async fn acquire(
        &self,
        timeout_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Permit> {
        let (sem, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            let sem = sem?;
            let lease = crate::convert::opt_ms("leaseMs", lease_ms)?;
            match (crate::convert::timeout(timeout_ms)?, lease) {
                (None, None) => sem.acquire().await,
                (Some(t), None) => sem.acquire_timeout(t).await,
                (None, Some(l)) => sem.acquire_lease(l).await,
                // The core has no acquire with both; composing one here would be lock logic.
                (Some(_), Some(_)) => Err(invalid("timeoutMs and leaseMs cannot be combined yet")),
            }
        })
        .await
        .map(Permit::new)
    }

    /// One attempt: null when no permit is free.
    #[napi]
    pub async fn try_acquire(&self) -> napi::Result<Option<Permit>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.try_acquire().await }).await.map(|p| p.map(Permit::new))
    }

    /// Releases the permit `id`, whoever acquired it (`NotHeld` if no live permit has it).
    #[napi]
    pub async fn release(&self, id: String) -> napi::Result<()> {
        let sem = self.inner.clone();
        call::run(async move { sem?.release(&id).await }).await
    }

    /// Sets permit `id`'s lease to `leaseMs` from now.
    #[napi]
    pub async fn update_lease(&self, id: String, lease_ms: f64) -> napi::Result<()> {
        let sem = self.inner.clone();
        call::run(async move { sem?.update_lease(&id, crate::convert::ms("leaseMs", lease_ms)?).await }).await
    }

    /// Permits free right now.
    #[napi]
    pub async fn available(&self) -> napi::Result<u32> {
        let sem = self.inner.clone();
        call::run(async move { sem?.available().await }).await
    }

    /// Live permits (ids, lease left) and the last token.
    #[napi]
    pub async fn inspect(&self) -> napi::Result<Inspection> {
        let sem = self.inner.clone();
        call::run(async move { sem?.inspect().await }).await.map(Inspection::from)
    }
}
