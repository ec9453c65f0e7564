//! `Semaphore` and the `Permit` guard (shared with `PermitSemaphore`).

use std::sync::Arc;

use baton_bind::HeldPermit;

use crate::call::{self, count};
use crate::errors::FfiError;
use crate::guard::guard_methods;
use crate::inspect::Inspection;
use crate::live::Live;

/// A semaphore of N permits.
#[derive(uniffi::Object)]
pub struct Semaphore {
    inner: baton::Result<baton::Semaphore>,
    name: String,
    _live: Live,
}

impl Semaphore {
    pub(crate) fn new(inner: baton::Result<baton::Semaphore>, name: String) -> Arc<Semaphore> {
        Arc::new(Semaphore { inner, name, _live: Live::new() })
    }

    fn once(&self, n: i64) -> impl Future<Output = baton::Result<Option<Arc<Permit>>>> + Send + 'static {
        let sem = self.inner.clone();
        async move {
            let n = count("count", n)?;
            Ok(sem?.try_acquire_many(n).await?.map(Permit::new))
        }
    }
}

#[uniffi::export]
impl Semaphore {
    /// The name.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The total number of permits (0 for a bad handle).
    pub fn permits(&self) -> u32 {
        self.inner.as_ref().map_or(0, baton::Semaphore::permits)
    }

    /// Waits for `n` permits at once.
    pub async fn acquire(&self, n: i64, timeout_ms: f64) -> Result<Arc<Permit>, FfiError> {
        let sem = self.inner.clone();
        call::run(async move {
            let sem = sem?;
            let n = count("count", n)?;
            sem.acquire_many_within(n, call::timeout(timeout_ms)?).await.map(Permit::new)
        })
        .await
    }

    /// One attempt at `n` permits: null when not enough are free.
    pub async fn try_acquire(&self, n: i64) -> Result<Option<Arc<Permit>>, FfiError> {
        call::run(self.once(n)).await
    }

    /// [`try_acquire`](Self::try_acquire), blocking the calling thread, after checking
    /// `timeout_ms` (`call::attempt`).
    pub fn attempt(&self, n: i64, timeout_ms: f64) -> Result<Option<Arc<Permit>>, FfiError> {
        call::attempt(timeout_ms, self.once(n))
    }

    /// Permits free right now.
    pub async fn available(&self) -> Result<u32, FfiError> {
        let sem = self.inner.clone();
        call::run(async move { sem?.available().await }).await
    }

    /// Current permit holders and the last token.
    pub async fn inspect(&self) -> Result<Inspection, FfiError> {
        let sem = self.inner.clone();
        call::run(async move { sem?.inspect().await.map(Inspection::from) }).await
    }
}

/// Permits held from a semaphore.
#[derive(uniffi::Object)]
pub struct Permit {
    held: HeldPermit,
    _live: Live,
}

impl Permit {
    pub(crate) fn new(p: baton::Permit) -> Arc<Permit> {
        Arc::new(Permit { held: HeldPermit::permit(p), _live: Live::new() })
    }
}

#[uniffi::export]
impl Permit {
    /// The fencing token of this grant.
    pub fn token(&self) -> u64 {
        self.held.data.token
    }

    /// The permit id (what a permit semaphore releases it by).
    pub fn id(&self) -> String {
        self.held.data.id.clone()
    }

    /// The semaphore's name.
    pub fn name(&self) -> String {
        self.held.data.name.clone()
    }

    /// How many permits this still holds.
    pub fn count(&self) -> u32 {
        self.held.count()
    }

    /// Gives `n` permits back and keeps the rest.
    pub async fn release_many(&self, n: i64) -> Result<(), FfiError> {
        call::run(self.held.release_many(count("count", n))).await
    }

    /// Sets the lease to `lease_ms` from now.
    pub async fn extend(&self, lease_ms: f64) -> Result<(), FfiError> {
        let cell = self.held.cell.clone();
        call::run(async move { cell.extend(call::millis("lease", lease_ms)?).await }).await
    }
}

guard_methods!(Permit, held.cell);
