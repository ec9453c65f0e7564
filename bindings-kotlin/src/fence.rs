//! `Fence` (fenced writes at the resource) and `fenced_update`. Tokens cross as the JVM's
//! `Long` (what `LockGuard.token` gives); a negative one is `InvalidArgument`.

use std::sync::Arc;

use baton_bind::convert::token as fencing_token;

use crate::call;
use crate::errors::FfiError;
use crate::live::Live;

/// A value written through a fence, with the token of its writer.
#[derive(Debug, uniffi::Record)]
pub struct Fenced {
    pub value: String,
    pub token: u64,
}

/// Fenced writes on a client's store.
#[derive(uniffi::Object)]
pub struct Fence {
    inner: baton::Fence,
    _live: Live,
}

impl Fence {
    pub(crate) fn new(inner: baton::Fence) -> Arc<Fence> {
        Arc::new(Fence { inner, _live: Live::new() })
    }
}

#[uniffi::export]
impl Fence {
    /// Writes `value` under `key` unless the store has seen a larger token for it; false
    /// when refused (a later holder has written).
    pub async fn write(&self, key: String, value: String, token: i64) -> Result<bool, FfiError> {
        let fence = self.inner.clone();
        call::run(async move { fence.write(&key, &value, fencing_token(token.into())?).await }).await
    }

    /// The value under `key` and the token of the write that put it there, or null.
    pub async fn read(&self, key: String) -> Result<Option<Fenced>, FfiError> {
        let fence = self.inner.clone();
        call::run(async move { Ok(fence.read(&key).await?.map(|f| Fenced { value: f.value, token: f.token.get() })) })
            .await
    }

    /// Runs a SQL `UPDATE` guarded by `token` (SQL stores only); the rows it changed.
    pub async fn execute(&self, statement: String, token: i64) -> Result<u64, FfiError> {
        let fence = self.inner.clone();
        call::run(async move { fence.execute(&statement, fencing_token(token.into())?).await }).await
    }
}

/// `statement` (one SQL `UPDATE`) with the fencing guard added, for the caller's own driver.
#[uniffi::export]
pub fn fenced_update(statement: String, token: i64) -> Result<String, FfiError> {
    fencing_token(token.into()).and_then(|t| baton::fenced_update(&statement, t)).map_err(FfiError::from)
}
