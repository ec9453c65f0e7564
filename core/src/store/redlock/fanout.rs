//! One step on every node at once: all answers, or only until they settle the step.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use tokio::sync::oneshot;

use super::Redlock;
use super::node::Node;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::store::redis::Redis;

/// Per node, the answer `each_until` did not wait for, once it comes.
pub(super) type Late<T> = Vec<Option<oneshot::Receiver<Result<T>>>>;

impl Redlock {
    /// Runs `step` on every node at once, each bounded by `limit`; one answer per node.
    pub(super) async fn each<'a, T, F, Fut>(&'a self, key: Option<&Key>, limit: Duration, step: F) -> Vec<Result<T>>
    where
        F: Fn(&'a Redis) -> Fut,
        Fut: Future<Output = Result<T>> + 'a,
    {
        join_all(self.nodes.iter().map(|n| n.step(key, limit, step(&n.redis)))).await
    }

    /// As `each`, but returns as soon as `decided` says the answers so far settle the
    /// step (a quorum granted, renewed or released): on a loaded host the slowest nodes
    /// then cost nothing. The others finish in a task of their own; their commands went
    /// out first on their node's connection, so a later step of this client reaches each
    /// node after them. An answer not waited for reads as `Connection` (it may land); it
    /// comes later on that node's receiver (`Late`). With `land`, each node's step goes
    /// out even after `limit` (`Node::step_landing`: a release).
    pub(super) async fn each_until<T, F, Fut>(
        &self,
        key: &Key,
        limit: Duration,
        land: bool,
        step: F,
        decided: impl Fn(&[&Result<T>]) -> bool,
    ) -> (Vec<Result<T>>, Late<T>)
    where
        T: Send + 'static,
        F: Fn(Arc<Node>) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        let mut running: FuturesUnordered<_> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (n, key, fut) = (n.clone(), key.clone(), step(n.clone()));
                // The step ahead is looked up here, before any answer, not on the step's
                // first poll: this stream may poll it late (`FuturesUnordered` yields once
                // two of its futures yield, as tokio's cooperative budget makes them),
                // after the decision below took this node's turn for it, which it would
                // then wait for to its own timeout (seen: `update_lease` held 3 s on two
                // nodes of five). A landing step makes no such turn.
                let ahead = n.behind.ahead(&key);
                async move {
                    let r = match land {
                        true => n.step_landing(&key, limit, fut).await,
                        false => n.step_after(ahead, limit, fut).await,
                    };
                    (i, r)
                }
            })
            .collect();
        let mut answered: Vec<(usize, Result<T>)> = Vec::with_capacity(self.nodes.len());
        let mut late: Late<T> = (0..self.nodes.len()).map(|_| None).collect();
        while let Some(a) = running.next().await {
            answered.push(a);
            let so_far: Vec<&Result<T>> = answered.iter().map(|(_, r)| r).collect();
            if !running.is_empty() && decided(&so_far) {
                let mut behind: Vec<_> = self
                    .nodes
                    .iter()
                    .enumerate()
                    // A landing step holds its node's turn itself, to its end.
                    .map(|(i, n)| {
                        let behind = !land && answered.iter().all(|(a, _)| *a != i);
                        behind.then(|| n.behind.straggling(key)).flatten()
                    })
                    .collect();
                let mut tell: Vec<_> = (0..self.nodes.len())
                    .map(|i| {
                        behind[i].is_some().then(|| {
                            let (tx, rx) = oneshot::channel();
                            late[i] = Some(rx);
                            tx
                        })
                    })
                    .collect();
                tokio::spawn(async move {
                    while let Some((i, r)) = running.next().await {
                        // Told before the node's turn ends: a step behind it reads it then.
                        if let Some(tx) = tell[i].take() {
                            let _ = tx.send(r);
                        }
                        behind[i] = None;
                    }
                });
                break;
            }
        }
        let mut out: Vec<Option<Result<T>>> = (0..self.nodes.len()).map(|_| None).collect();
        for (i, r) in answered {
            out[i] = Some(r);
        }
        let out = out
            .into_iter()
            .zip(&self.nodes)
            .map(|(r, n)| r.unwrap_or_else(|| Err(Error::connection(format!("Redis node {}: still answering", n.at)))))
            .collect();
        (out, late)
    }
}
