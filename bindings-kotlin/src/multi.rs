//! `MultiLock` and `MultiGuard`: all-or-nothing over several locks.

use std::sync::Arc;

use baton_bind::Cell;

use crate::call;
use crate::errors::FfiError;
use crate::guard::guard_methods;
use crate::live::Live;

/// Several locks taken together, in a canonical order.
#[derive(uniffi::Object)]
pub struct MultiLock {
    inner: baton::MultiLock,
    _live: Live,
}

impl MultiLock {
    pub(crate) fn new(inner: baton::MultiLock) -> Arc<MultiLock> {
        Arc::new(MultiLock { inner, _live: Live::new() })
    }

    fn once(&self) -> impl Future<Output = baton::Result<Option<Arc<MultiGuard>>>> + Send + 'static {
        let multi = self.inner.clone();
        async move { Ok(multi.try_acquire().await?.map(MultiGuard::new)) }
    }
}

#[uniffi::export]
impl MultiLock {
    /// The names, in acquisition order.
    pub fn names(&self) -> Vec<String> {
        self.inner.locks().iter().map(|l| l.name().to_owned()).collect()
    }

    /// Waits until every lock is held (at most `timeout_ms`, then `Timeout` with none held).
    pub async fn acquire(&self, timeout_ms: f64) -> Result<Arc<MultiGuard>, FfiError> {
        let multi = self.inner.clone();
        call::run(async move {
            match call::timeout(timeout_ms)? {
                Some(t) => multi.acquire_timeout(t).await,
                None => multi.acquire().await,
            }
            .map(MultiGuard::new)
        })
        .await
    }

    /// One attempt at each: null (and nothing held) if any is busy.
    pub async fn try_acquire(&self) -> Result<Option<Arc<MultiGuard>>, FfiError> {
        call::run(self.once()).await
    }

    /// [`try_acquire`](Self::try_acquire), blocking the calling thread, after checking
    /// `timeout_ms` (`call::attempt`).
    pub fn attempt(&self, timeout_ms: f64) -> Result<Option<Arc<MultiGuard>>, FfiError> {
        call::attempt(timeout_ms, self.once())
    }
}

/// Every lock of a multi-lock, held.
#[derive(uniffi::Object)]
pub struct MultiGuard {
    cell: Arc<Cell<baton::MultiGuard>>,
    tokens: Vec<u64>,
    names: Vec<String>,
    _live: Live,
}

impl MultiGuard {
    pub(crate) fn new(g: baton::MultiGuard) -> Arc<MultiGuard> {
        let tokens = g.tokens().iter().map(|t| t.get()).collect();
        let names: Vec<String> = g.guards().iter().map(|g| g.name().to_owned()).collect();
        let what = format!("the multi-lock over {}", names.join(", "));
        Arc::new(MultiGuard { cell: Cell::new(g, what), tokens, names, _live: Live::new() })
    }
}

#[uniffi::export]
impl MultiGuard {
    /// One fencing token per lock, in acquisition order.
    pub fn tokens(&self) -> Vec<u64> {
        self.tokens.clone()
    }

    /// The names held, in acquisition order.
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }
}

guard_methods!(MultiGuard);
