//! `connect()` and `Client`: the handle factory.

use std::sync::Arc;

use napi_derive::napi;

use crate::call;
use crate::convert::{LockOptions, count, lock_options};
use crate::errors::Answer;
use crate::inspect::Inspection;
use crate::latch::CountDownLatch;
use crate::lock::{FairLock, Lock};
use crate::multi::MultiLock;
use crate::permits::PermitSemaphore;
use crate::rw::RwLock;
use crate::semaphore::Semaphore;

/// Connects to the store `url` names (`memory://`, `sqlite:///path.db`, …).
#[napi(ts_return_type = "Promise<Client>")]
pub async fn connect(url: String) -> napi::Result<Answer<Client>> {
    call::run(async move {
        let inner = baton::Client::connect(&url).await?;
        // A plain `redis://` server: a second connection for the hot calls, driven from the
        // JavaScript thread (`fast`). Without it (other stores, refused, turned off, or a
        // build without the fast path) they take napi's runtime as every other call does.
        #[cfg(feature = "fast")]
        let link = call::Link::open(&inner).await;
        #[cfg(not(feature = "fast"))]
        let link = None;
        Ok(Client { inner, link })
    })
    .await
}

/// A connection to one store.
#[napi]
pub struct Client {
    inner: baton::Client,
    link: Option<Arc<call::Link>>,
}

#[napi]
impl Client {
    /// A lock handle (bad names or options are reported by its calls).
    #[napi(catch_unwind)]
    pub fn lock(&self, name: String, options: Option<LockOptions>) -> Lock {
        let inner = lock_options(options).map(|o| self.inner.lock_with(&name, o));
        Lock::new(inner, name, self.link.clone())
    }

    /// A fair lock handle (grants in request order).
    #[napi(catch_unwind)]
    pub fn fair_lock(&self, name: String, options: Option<LockOptions>) -> FairLock {
        let inner = lock_options(options).map(|o| self.inner.fair_lock_with(&name, o));
        FairLock::new(inner, name, self.link.clone())
    }

    /// A read-write lock handle.
    #[napi(catch_unwind)]
    pub fn rw_lock(&self, name: String, options: Option<LockOptions>) -> RwLock {
        let inner = lock_options(options).map(|o| self.inner.rw_lock_with(&name, o));
        RwLock::new(inner, name)
    }

    /// A semaphore of `permits` permits.
    #[napi(catch_unwind)]
    pub fn semaphore(&self, name: String, permits: f64, options: Option<LockOptions>) -> Semaphore {
        let inner = count("permits", permits)
            .and_then(|n| lock_options(options).map(|o| self.inner.semaphore_with(&name, n, o)));
        Semaphore::new(inner, name)
    }

    /// A semaphore whose permits have ids and leases of their own.
    #[napi(catch_unwind)]
    pub fn permit_semaphore(&self, name: String, permits: f64, options: Option<LockOptions>) -> PermitSemaphore {
        let inner = count("permits", permits)
            .and_then(|n| lock_options(options).map(|o| self.inner.permit_semaphore_with(&name, n, o)));
        PermitSemaphore::new(inner, name)
    }

    /// A count-down latch handle.
    #[napi(catch_unwind)]
    pub fn count_down_latch(&self, name: String) -> CountDownLatch {
        CountDownLatch::new(self.inner.count_down_latch(&name))
    }

    /// Fenced writes on this client's store.
    #[napi(catch_unwind)]
    pub fn fence(&self) -> crate::fence::Fence {
        crate::fence::Fence::new(self.inner.fence())
    }

    /// A multi-lock over `names`.
    #[napi(catch_unwind)]
    pub fn multi_lock(&self, names: Vec<String>) -> MultiLock {
        MultiLock::new(self.inner.multi_lock(names))
    }

    /// Holder, hold count, lease left and last token of the lock `name`.
    #[napi(ts_return_type = "Promise<Inspection>")]
    pub async fn inspect(&self, name: String) -> napi::Result<Answer<Inspection>> {
        let client = self.inner.clone();
        call::run(async move { client.inspect(&name).await.map(Inspection::from) }).await
    }

    /// Releases everything this client holds and closes the store connection.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close(&self, env: napi::Env) -> napi::Result<call::Promise> {
        #[cfg(feature = "fast")]
        if let Some(link) = &self.link {
            link.close();
        }
        let client = self.inner.clone();
        let closed = call::run(async move {
            client.close().await;
            Ok(())
        });
        // Not over the link: it was just closed.
        call::hot(&env, None, closed)
    }

    /// This client's id.
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> String {
        self.inner.id().to_owned()
    }

    /// The store URL, password redacted.
    #[napi(getter, catch_unwind)]
    pub fn url(&self) -> String {
        self.inner.url()
    }

    /// Whether `close()` was called.
    #[napi(getter, catch_unwind)]
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }
}
