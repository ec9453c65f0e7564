//! One Redlock node: its `redis://` store and the order of the steps sent to it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::error::Elapsed;

use super::config::BEHIND_TIMEOUT;
use super::gate::{Turn, Turns, after};
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
        self.step_after(key.and_then(|k| self.behind.ahead(k)), limit, step).await
    }

    /// `step` on this node once the step holding `ahead` (looked up by the caller) has
    /// ended, the whole bounded by `limit`.
    pub(super) async fn step_after<T>(
        &self,
        ahead: Option<Turn>,
        limit: Duration,
        step: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        match tokio::time::timeout(limit, after(ahead, step)).await {
            Ok(r) => r,
            Err(_) => Err(self.no_answer(limit)),
        }
    }

    /// As `step`, for a step that must reach the node even when the steps ahead of it on
    /// `key` outlast `limit` (a release: a hold it misses stays until its lease ends). It
    /// takes its turn on `key` at once, so later steps wait for it; past `limit` the
    /// caller reads `Connection`, and the step still goes out after the steps ahead of it,
    /// in the background, bounded by `BEHIND_TIMEOUT`.
    pub(super) async fn step_landing<T: Send + 'static>(
        self: &Arc<Self>,
        key: &Key,
        limit: Duration,
        step: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        let answer = self.in_turn(key, limit.max(BEHIND_TIMEOUT), step);
        match tokio::time::timeout(limit, answer).await {
            Ok(Ok(Ok(r))) => r,
            _ => Err(self.no_answer(limit)),
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
        drop(self.in_turn(key, limit, step));
    }

    /// Runs `step` in a task of its own once the steps ahead of it on `key` have ended,
    /// holding `key`'s turn until it ends (bounded by `bound`); its answer, if it came.
    fn in_turn<T: Send + 'static>(
        self: &Arc<Self>,
        key: &Key,
        bound: Duration,
        step: impl Future<Output = Result<T>> + Send + 'static,
    ) -> oneshot::Receiver<std::result::Result<Result<T>, Elapsed>> {
        // Looked up before this step takes its own turn, which it must not wait for.
        let ahead = self.behind.ahead(key);
        let turn = self.behind.straggling(key);
        let (tx, rx) = oneshot::channel();
        tokio::spawn(async move {
            // No answer in time: it may land later, still before any later step (sent after).
            let r = tokio::time::timeout(bound, after(ahead, step)).await;
            drop(turn);
            let _ = tx.send(r);
        });
        rx
    }

    fn no_answer(&self, limit: Duration) -> Error {
        Error::connection(format!("Redis node {}: no answer within {limit:?}", self.at))
    }
}
