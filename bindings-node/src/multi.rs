//! `MultiLock` and `MultiGuard`: all-or-nothing over several locks.

use std::sync::Arc;

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use baton_bind::Cell;

use crate::call::{self, CancelToken};
use crate::errors::Answer;
use crate::guard::guard_methods;

/// Several locks taken together, in a canonical order.
#[napi]
pub struct MultiLock {
    inner: baton::MultiLock,
}

impl MultiLock {
    pub(crate) fn new(inner: baton::MultiLock) -> MultiLock {
        MultiLock { inner }
    }
}

#[napi]
impl MultiLock {
    /// The names, in acquisition order.
    #[napi(getter, catch_unwind)]
    pub fn names(&self) -> Vec<String> {
        self.inner.locks().iter().map(|l| l.name().to_owned()).collect()
    }

    /// Waits until every lock is held (at most `timeoutMs`, then `Timeout` with none held).
    #[napi(ts_return_type = "Promise<MultiGuard>")]
    pub async fn acquire(
        &self,
        timeout_ms: Option<f64>,
        cancel: Option<&CancelToken>,
    ) -> napi::Result<Answer<MultiGuard>> {
        let (multi, cancel) = (self.inner.clone(), call::token(cancel));
        call::run_cancellable(cancel, async move {
            match crate::convert::timeout(timeout_ms)? {
                Some(t) => multi.acquire_timeout(t).await,
                None => multi.acquire().await,
            }
        })
        .await
        .map(|a| a.map(MultiGuard::new))
    }

    /// One attempt at each: null (and nothing held) if any is busy.
    #[napi(ts_return_type = "Promise<MultiGuard | null>")]
    pub async fn try_acquire(&self) -> napi::Result<Answer<Option<MultiGuard>>> {
        let multi = self.inner.clone();
        call::run(async move { Ok(multi.try_acquire().await?.map(MultiGuard::new)) }).await
    }
}

/// Every lock of a multi-lock, held.
#[napi]
pub struct MultiGuard {
    cell: Arc<Cell<baton::MultiGuard>>,
    tokens: Vec<u64>,
    names: Vec<String>,
}

impl MultiGuard {
    pub(crate) fn new(g: baton::MultiGuard) -> MultiGuard {
        let tokens = g.tokens().iter().map(|t| t.get()).collect();
        let names: Vec<String> = g.guards().iter().map(|g| g.name().to_owned()).collect();
        let what = format!("the multi-lock over {}", names.join(", "));
        MultiGuard { cell: Cell::new(g, what), tokens, names }
    }

    /// Released on napi's runtime (multi-locks take no fast link).
    fn driven(&self) -> Option<&Arc<call::Link>> {
        None
    }
}

#[napi]
impl MultiGuard {
    /// One fencing token per lock, in acquisition order.
    #[napi(getter, catch_unwind)]
    pub fn tokens(&self) -> Vec<BigInt> {
        self.tokens.iter().map(|t| BigInt::from(*t)).collect()
    }

    /// The names held, in acquisition order.
    #[napi(getter, catch_unwind)]
    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }
}

guard_methods!(MultiGuard);
