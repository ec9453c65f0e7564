//! `PermitSemaphore`: permits with ids and leases of their own.

use napi_derive::napi;

use baton_bind::kind::invalid;

use crate::call::{self, CancelToken};
use crate::errors::Answer;
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
    #[napi(ts_return_type = "Promise<Permit>")]
    pub async fn acquire(
        &self,
        timeout_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Answer<Permit>> {
        let (sem, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            let sem = sem?;
            let lease = crate::convert::opt_ms("leaseMs", lease_ms)?;
            match (crate::convert::timeout(timeout_ms)?, lease) {
                // The core takes both (`acquire_within`); this API refuses the pair until its
                // typings and tests say otherwise.
                (Some(_), Some(_)) => Err(invalid("timeoutMs and leaseMs cannot be combined yet")),
                (timeout, lease) => sem.acquire_within(timeout, lease).await,
            }
        })
        .await
        .map(|a| a.map(Permit::new))
    }

    /// One attempt: null when no permit is free.
    #[napi(ts_return_type = "Promise<Permit | null>")]
    pub async fn try_acquire(&self) -> napi::Result<Answer<Option<Permit>>> {
        let sem = self.inner.clone();
        call::run(async move { Ok(sem?.try_acquire().await?.map(Permit::new)) }).await
    }

    /// Releases the permit `id`, whoever acquired it (`NotHeld` if no live permit has it).
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn release(&self, id: String) -> napi::Result<Answer<()>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.release(&id).await }).await
    }

    /// Sets permit `id`'s lease to `leaseMs` from now.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn update_lease(&self, id: String, lease_ms: f64) -> napi::Result<Answer<()>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.update_lease(&id, crate::convert::ms("leaseMs", lease_ms)?).await }).await
    }

    /// Permits free right now.
    #[napi(ts_return_type = "Promise<number>")]
    pub async fn available(&self) -> napi::Result<Answer<u32>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.available().await }).await
    }

    /// Live permits (ids, lease left) and the last token.
    #[napi(ts_return_type = "Promise<Inspection>")]
    pub async fn inspect(&self) -> napi::Result<Answer<Inspection>> {
        let sem = self.inner.clone();
        call::run(async move { sem?.inspect().await.map(Inspection::from) }).await
    }
}
