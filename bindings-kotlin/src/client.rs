//! `connect()` and `Client`: the handle factory.

use std::sync::Arc;

use baton_bind::convert::{LockDurations, opt_millis};

use crate::call::{self, count};
use crate::errors::FfiError;
use crate::fence::Fence;
use crate::inspect::Inspection;
use crate::latch::CountDownLatch;
use crate::live::Live;
use crate::lock::{FairLock, Lock};
use crate::multi::MultiLock;
use crate::permits::PermitSemaphore;
use crate::rw::RwLock;
use crate::semaphore::Semaphore;

/// Options of a lock-family handle, durations in milliseconds (null: the default).
#[derive(Debug, Default, uniffi::Record)]
pub struct LockOptions {
    /// Explicit lease: the grant expires this long after acquire unless extended.
    #[uniffi(default = None)]
    pub ttl_ms: Option<f64>,
    /// Watchdog lease.
    #[uniffi(default = None)]
    pub lease_ms: Option<f64>,
    /// Watchdog renewal period.
    #[uniffi(default = None)]
    pub renew_ms: Option<f64>,
    /// How long a fair-lock waiter keeps its place without refreshing it.
    #[uniffi(default = None)]
    pub queue_ttl_ms: Option<f64>,
    /// Reentrancy bound to this owner id instead of the handle.
    #[uniffi(default = None)]
    pub owner: Option<String>,
}

impl LockOptions {
    fn core(self) -> baton::Result<baton::LockOptions> {
        Ok(LockDurations {
            ttl: opt_millis("ttl", self.ttl_ms)?,
            lease: opt_millis("lease", self.lease_ms)?,
            renew: opt_millis("renew", self.renew_ms)?,
            queue_ttl: opt_millis("queueTtl", self.queue_ttl_ms)?,
            owner: self.owner,
        }
        .options())
    }
}

/// Connects to the store `url` names (`memory://`, `sqlite:///path.db`, `redis://…`, …).
#[uniffi::export]
pub async fn connect(url: String) -> Result<Arc<Client>, FfiError> {
    call::run(async move { Ok(Arc::new(Client { inner: baton::Client::connect(&url).await?, _live: Live::new() })) })
        .await
}

/// A connection to one store.
#[derive(uniffi::Object)]
pub struct Client {
    inner: baton::Client,
    _live: Live,
}

#[uniffi::export]
impl Client {
    /// A lock handle (bad names or options are reported by its calls).
    pub fn lock(&self, name: String, options: LockOptions) -> Arc<Lock> {
        Lock::new(options.core().map(|o| self.inner.lock_with(&name, o)), name)
    }

    /// A fair lock handle (grants in request order).
    pub fn fair_lock(&self, name: String, options: LockOptions) -> Arc<FairLock> {
        FairLock::new(options.core().map(|o| self.inner.fair_lock_with(&name, o)), name)
    }

    /// A read-write lock handle.
    pub fn rw_lock(&self, name: String, options: LockOptions) -> Arc<RwLock> {
        RwLock::new(options.core().map(|o| self.inner.rw_lock_with(&name, o)), name)
    }

    /// A semaphore of `permits` permits.
    pub fn semaphore(&self, name: String, permits: i64, options: LockOptions) -> Arc<Semaphore> {
        let inner =
            count("permits", permits).and_then(|n| options.core().map(|o| self.inner.semaphore_with(&name, n, o)));
        Semaphore::new(inner, name)
    }

    /// A semaphore whose permits have ids and leases of their own.
    pub fn permit_semaphore(&self, name: String, permits: i64, options: LockOptions) -> Arc<PermitSemaphore> {
        let inner = count("permits", permits)
            .and_then(|n| options.core().map(|o| self.inner.permit_semaphore_with(&name, n, o)));
        PermitSemaphore::new(inner, name)
    }

    /// A count-down latch handle.
    pub fn count_down_latch(&self, name: String) -> Arc<CountDownLatch> {
        CountDownLatch::new(self.inner.count_down_latch(&name))
    }

    /// A multi-lock over `names`.
    pub fn multi_lock(&self, names: Vec<String>) -> Arc<MultiLock> {
        MultiLock::new(self.inner.multi_lock(names))
    }

    /// Fenced writes on this client's store.
    pub fn fence(&self) -> Arc<Fence> {
        Fence::new(self.inner.fence())
    }

    /// Holder, hold count, lease left and last token of the lock `name`.
    pub async fn inspect(&self, name: String) -> Result<Inspection, FfiError> {
        let client = self.inner.clone();
        call::run(async move { client.inspect(&name).await.map(Inspection::from) }).await
    }

    /// Releases everything this client holds and closes the store connection (not
    /// `close`: uniffi's Kotlin objects have `close()` already, which frees the object).
    pub async fn shutdown(&self) -> Result<(), FfiError> {
        let client = self.inner.clone();
        call::run(async move {
            client.close().await;
            Ok(())
        })
        .await
    }

    /// This client's id.
    pub fn id(&self) -> String {
        self.inner.id().to_owned()
    }

    /// The store URL, password redacted.
    pub fn url(&self) -> String {
        self.inner.url()
    }

    /// Whether `close()` was called.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
