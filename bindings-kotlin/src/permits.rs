//! `PermitSemaphore`: permits with ids and leases of their own.

use std::sync::Arc;

use baton_bind::kind::invalid;

use crate::call;
use crate::errors::FfiError;
use crate::inspect::Inspection;
use crate::live::Live;
use crate::semaphore::Permit;

/// A semaphore whose permits carry ids and leases; any process may release one by id.
#[derive(uniffi::Object)]
pub struct PermitSemaphore {
    inner: baton::Result<baton::PermitSemaphore>,
    name: String,
    _live: Live,
}

impl PermitSemaphore {
    pub(crate) fn new(inner: baton::Result<baton::PermitSemaphore>, name: String) -> Arc<PermitSemaphore> {
        Arc::new(PermitSemaphore { inner, name, _live: Live::new() })
    }

    fn once(&self) -> impl Future<Output = baton::Result<Option<Arc<Permit>>>> + Send + 'static {
        let sem = self.inner.clone();
        async move { Ok(sem?.try_acquire().await?.map(Permit::new)) }
    }
}

#[uniffi::export]
impl PermitSemaphore {
    /// The name.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Waits for a permit: held under the handle's lease, or expiring `lease_ms` after the
    /// grant unless extended; at most `timeout_ms` (not together with `lease_ms`).
    pub async fn acquire(&self, timeout_ms: f64, lease_ms: Option<f64>) -> Result<Arc<Permit>, FfiError> {
        let sem = self.inner.clone();
        call::run(async move {
            let sem = sem?;
            let lease = lease_ms.map(|l| call::millis("lease", l)).transpose()?;
            match (call::timeout(timeout_ms)?, lease) {
                // The core takes both (`acquire_within`); this API refuses the pair until its
                // Kotlin docs and tests say otherwise.
                (Some(_), Some(_)) => Err(invalid("timeout and lease cannot be combined yet")),
                (timeout, lease) => sem.acquire_within(timeout, lease).await,
            }
            .map(Permit::new)
        })
        .await
    }

    /// One attempt: null when no permit is free.
    pub async fn try_acquire(&self) -> Result<Option<Arc<Permit>>, FfiError> {
        call::run(self.once()).await
    }

    /// [`try_acquire`](Self::try_acquire), blocking the calling thread, after checking
    /// `timeout_ms` (`call::attempt`).
    pub fn attempt(&self, timeout_ms: f64) -> Result<Option<Arc<Permit>>, FfiError> {
        call::attempt(timeout_ms, self.once())
    }

    /// Releases the permit `id`, whoever acquired it (`NotHeld` if no live permit has it).
    pub async fn release(&self, id: String) -> Result<(), FfiError> {
        let sem = self.inner.clone();
        call::run(async move { sem?.release(&id).await }).await
    }

    /// Sets permit `id`'s lease to `lease_ms` from now.
    pub async fn update_lease(&self, id: String, lease_ms: f64) -> Result<(), FfiError> {
        let sem = self.inner.clone();
        call::run(async move { sem?.update_lease(&id, call::millis("lease", lease_ms)?).await }).await
    }

    /// Permits free right now.
    pub async fn available(&self) -> Result<u32, FfiError> {
        let sem = self.inner.clone();
        call::run(async move { sem?.available().await }).await
    }

    /// Live permits (ids, lease left) and the last token.
    pub async fn inspect(&self) -> Result<Inspection, FfiError> {
        let sem = self.inner.clone();
        call::run(async move { sem?.inspect().await.map(Inspection::from) }).await
    }
}
