//! The store side of fenced writes (`crate::fence`): a store that can compare a token and
//! write in one atomic step returns its `FenceOps` from `Store::fence`.

use async_trait::async_trait;

use crate::error::{Error, Result};

/// What a store does for `Fence` (`crate::fence`). `key` is the full store key (prefix included).
#[async_trait]
pub(crate) trait FenceOps: Send + Sync {
    /// Writes `value` under `key` unless a token above `token` was written there;
    /// `true` when written.
    async fn write(&self, key: &str, value: &str, token: u64) -> Result<bool>;

    /// The value and the token of its last write.
    async fn read(&self, key: &str) -> Result<Option<(String, u64)>>;

    /// Runs `statement` (already fenced by `fence::fenced_update`); the rows it changed.
    async fn execute(&self, statement: &str) -> Result<u64> {
        let _ = statement;
        Err(Error::unsupported("fenced SQL statements need a SQL store (sqlite://, postgres://, mysql://)"))
    }
}
