//! One Redlock node: its `redis://` store and the order of the steps sent to it.

use std::sync::Arc;
use std::time::Duration;

use super::gate::{Turns, after};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::store::redis::Redis;

/// One node and its address (for messages).
pub(super) struct Node {
    pub(super) redis: Redis,
    pub(super) at: String,
    /// Steps on a key still answering after their caller moved on (`Redlock::each_until`).
    pub(super) behind: Turns,
}

impl Node {
    pub(super) fn new(redis: Redis, at: String) -> Node {
        Node { redis, at, behind: Turns::default() }
    }

    /// `step` on this node, after any step on `key` still answering here, the whole
    /// bounded by `limit`.
    pub(super) async fn step<T>(
        &self,
        key: Option<&Key>,
        limit: Duration,
        step: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let ahead = key.and_then(|k| self.behind.ahead(k));
        match tokio::time::timeout(limit, after(ahead, step)).await {
            Ok(r) => r,
            Err(_) => Err(Error::connection(format!("Redis node {}: no answer within {limit:?}", self.at))),
        }
    }

    /// `step` on this node in the background, after the steps on `key` still answering
    /// here and before any later one (which waits for it as for a straggler).
    pub(super) fn step_behind<T: Send + 'static>(
        self: &Arc<Self>,
        key: &Key,
        limit: Duration,
        step: impl Future<Output = Result<T>> + Send + 'static,
    ) {
        // Looked up before this step takes its own turn, which it must not wait for.
        let ahead = self.behind.ahead(key);
        let turn = self.behind.straggling(key);
        tokio::spawn(async move {
            // No answer in time: it may land later, still before any later step (sent after).
            let _ = tokio::time::timeout(limit, after(ahead, step)).await;
            drop(turn);
        });
    }
}
