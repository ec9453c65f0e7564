//! `Client`: the entry point, one per store connection, cheap to clone and share.

use std::sync::Arc;

use crate::election::Election;
use crate::engine::Ctx;
use crate::error::Result;
use crate::fence::Fence;
use crate::inspect::Inspection;
use crate::key::Family;
use crate::latch::CountDownLatch;
use crate::lock::{FairLock, Lock, multi::MultiLock, rw::RwLock};
use crate::options::{DEFAULT_LEASE, DEFAULT_RENEW, Lease, LockOptions};
use crate::semaphore::{PermitSemaphore, Semaphore};
use crate::store::{self, Store};
use crate::url::StoreUrl;

/// A connection to one store, chosen by URL scheme. Cheap to clone; clones share the
/// connection, the client id and the background tasks.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use baton::Client;
/// let client = Client::connect("memory://").await?;
/// let guard = client.lock("orders/42").acquire().await?;
/// println!("holding with token {}", guard.token());
/// guard.release().await?;
/// client.close().await;
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    ctx: Arc<Ctx>,
}

impl Client {
    /// Connects to the store `url` names: `memory://`, `sqlite:///path/file.db`, and the
    /// other schemes of this build's features. Options every scheme takes:
    /// `lease` (watchdog lease, default `30s`), `renew` (renewal period, default `10s`),
    /// `prefix` (prepended to every name).
    ///
    /// # Errors
    /// `InvalidUrl` for a malformed URL, an unknown scheme or option; `Unsupported` for a
    /// scheme this build lacks; `InvalidArgument` for bad option values; `Connection` when
    /// the store cannot be reached. Messages never contain the URL's password.
    pub async fn connect(url: &str) -> Result<Client> {
        let url = StoreUrl::parse(url)?;
        let opts = |k: &str| url.option(k).map(crate::duration::parse).transpose();
        let lease = opts("lease")?.unwrap_or(DEFAULT_LEASE);
        let renew = opts("renew")?.unwrap_or(DEFAULT_RENEW.min(lease / 3));
        let defaults = LockOptions::new().lease(lease).renew_every(renew).resolve(Lease::Watchdog { lease, renew })?;
        let prefix = url.option("prefix").unwrap_or("").to_owned();
        if !prefix.is_empty() {
            crate::name::validate(&prefix)?;
        }
        let backend = store::open::open(&url).await?;
        Ok(Client::from_backend(backend, url, defaults, prefix))
    }

    pub(crate) fn from_backend(backend: Arc<dyn Store>, url: StoreUrl, defaults: Lease, prefix: String) -> Client {
        Client { ctx: Arc::new(Ctx::new(backend, url, defaults, prefix)) }
    }

    /// A lock handle with default options (watchdog lease, its own owner id).
    /// A bad name is reported by the handle's first call.
    pub fn lock(&self, name: &str) -> Lock {
        Lock::new(&self.ctx, name, &LockOptions::new())
    }

    /// A lock handle with options (ttl, lease, owner, …).
    pub fn lock_with(&self, name: &str, options: LockOptions) -> Lock {
        Lock::new(&self.ctx, name, &options)
    }

    /// A leader-election handle with default options (watchdog lease). A bad name is
    /// reported by the handle's first call.
    pub fn election(&self, name: &str) -> Election {
        Election::new(&self.ctx, name, LockOptions::new())
    }

    /// A leader-election handle with options (`ttl`/`lease` of the leadership, `owner`).
    pub fn election_with(&self, name: &str, options: LockOptions) -> Election {
        Election::new(&self.ctx, name, options)
    }

    /// A fair lock handle (grants in request order).
    pub fn fair_lock(&self, name: &str) -> FairLock {
        FairLock::new(&self.ctx, name, &LockOptions::new())
    }

    /// A fair lock handle with options.
    pub fn fair_lock_with(&self, name: &str, options: LockOptions) -> FairLock {
        FairLock::new(&self.ctx, name, &options)
    }

    /// A read-write lock handle.
    pub fn rw_lock(&self, name: &str) -> RwLock {
        RwLock::new(&self.ctx, name, &LockOptions::new())
    }

    /// A read-write lock handle with options.
    pub fn rw_lock_with(&self, name: &str, options: LockOptions) -> RwLock {
        RwLock::new(&self.ctx, name, &options)
    }

    /// A semaphore of `permits` permits (every client using the name must agree on it).
    pub fn semaphore(&self, name: &str, permits: u32) -> Semaphore {
        Semaphore::new(&self.ctx, name, permits, &LockOptions::new())
    }

    /// A semaphore with options (lease, ttl).
    pub fn semaphore_with(&self, name: &str, permits: u32, options: LockOptions) -> Semaphore {
        Semaphore::new(&self.ctx, name, permits, &options)
    }

    /// A semaphore whose permits have ids and leases of their own.
    pub fn permit_semaphore(&self, name: &str, permits: u32) -> PermitSemaphore {
        PermitSemaphore::new(&self.ctx, name, permits, &LockOptions::new())
    }

    /// A permit semaphore with options (lease, ttl).
    pub fn permit_semaphore_with(&self, name: &str, permits: u32, options: LockOptions) -> PermitSemaphore {
        PermitSemaphore::new(&self.ctx, name, permits, &options)
    }

    /// Fenced writes on this client's store: writes the store refuses once it has seen a
    /// larger fencing token for the key (see [`Fence`]).
    pub fn fence(&self) -> Fence {
        Fence::new(self.ctx.clone())
    }

    /// A count-down latch handle.
    pub fn count_down_latch(&self, name: &str) -> CountDownLatch {
        CountDownLatch::new(&self.ctx, name)
    }

    /// A multi-lock over `names` on this store (see [`MultiLock::new`] for several stores).
    pub fn multi_lock<I, S>(&self, names: I) -> MultiLock
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        MultiLock::new(names.into_iter().map(|n| self.lock(n.as_ref())))
    }

    /// Holder, hold count, lease left and last token of the lock `name`.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name; `Closed`; store errors.
    pub async fn inspect(&self, name: &str) -> Result<Inspection> {
        let key = self.ctx.key(Family::Lock, name)?;
        self.ctx.inspect(&key).await
    }

    /// This client's id (the first part of every owner id it makes).
    pub fn id(&self) -> &str {
        self.ctx.id.uuid()
    }

    /// The store URL, password redacted.
    pub fn url(&self) -> String {
        self.ctx.url.to_string()
    }

    /// Releases everything this client holds, stops renewals and closes the store
    /// connection. Later calls on this client or its handles fail with `Closed`.
    /// Idempotent.
    pub async fn close(&self) {
        self.ctx.close().await;
    }

    /// Whether [`Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.ctx.is_closed()
    }
}

/// Benchmark and test hooks (feature `bench`): not part of the stable API.
#[cfg(feature = "bench")]
impl Client {
    /// For the benches (`benches/`): one round of the store's own operations that a lock's speed is
    /// measured against, each timed (etcd: one txn, then one delete; Redlock: PING on the
    /// first node, then PING on every node until a quorum answered), on key `name`.
    ///
    /// # Errors
    /// `Closed`; `InvalidArgument` for a bad name; store errors.
    pub async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, std::time::Duration)>> {
        self.ctx.check_open()?;
        let key = self.ctx.key(Family::Lock, name)?;
        match self.ctx.store.diagnostics() {
            Some(d) => d.yardsticks(&key.name).await,
            None => Ok(Vec::new()),
        }
    }

    /// Counters of the store's own machinery, by name (etcd: `lock_waits_woken`, lock
    /// waits ended by their predecessor's deletion, and `lock_wake_watch_events`, those
    /// of them seen as a watch event).
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        self.ctx.store.diagnostics().map(|d| d.counters()).unwrap_or_default()
    }

    /// Requests this client has sent to its store so far, a pipeline counting one (what
    /// the watchdog's batching saves shows here), where the store counts them: Redis
    /// (its command connection; the subscriber connection's SUBSCRIBE / UNSUBSCRIBE are
    /// not counted). `None` for the other stores.
    pub fn store_round_trips(&self) -> Option<u64> {
        self.ctx.store.diagnostics().and_then(|d| d.round_trips())
    }

    /// Returns once the store steps that earlier calls left running in the background
    /// have ended (Redlock's nodes that answered after the quorum; nothing elsewhere), so
    /// that a benchmark does not time them into the next call.
    pub async fn settled(&self) {
        if let Some(d) = self.ctx.store.diagnostics() {
            d.settled().await;
        }
    }
}

impl Client {
    /// The store behind this client, for `baton::ffi`.
    #[cfg(feature = "driven-link")]
    pub(crate) fn store(&self) -> &dyn Store {
        &*self.ctx.store
    }
}
