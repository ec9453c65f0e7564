//! The Redlock store's benchmark hooks (feature `bench`).

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;

use super::{Redlock, quorum};
use crate::error::Result;
use crate::store::Diagnostics;

#[async_trait]
impl Diagnostics for Redlock {
    /// The machine's fan-out floor, free of any lock logic: one PING on the first node,
    /// then one PING on every node at once until a quorum (of a lock) answered. On a
    /// host with fewer cores than nodes the second is well above the first, and a
    /// Redlock round cannot beat it.
    async fn yardsticks(&self, _name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let limit = self.step_limit();
        let t0 = Instant::now();
        self.nodes[0].step(None, limit, self.nodes[0].redis.ping()).await?;
        let one = t0.elapsed();
        let need = quorum::quorum(self.nodes.len(), 1);
        let t1 = Instant::now();
        let mut pings: FuturesUnordered<_> = self.nodes.iter().map(|n| n.step(None, limit, n.redis.ping())).collect();
        let mut answered = 0;
        while answered < need {
            match pings.next().await {
                Some(Ok(())) => answered += 1,
                Some(Err(_)) => {}
                None => return Err(self.no_quorum("PING", answered, need, None)),
            }
        }
        let quorum = t1.elapsed();
        // The rest answer after the timing, before the next call.
        while pings.next().await.is_some() {}
        Ok(vec![("ping first node", one), ("ping quorum", quorum)])
    }

    async fn settled(&self) {
        join_all(self.nodes.iter().map(|n| n.behind.settled())).await;
    }

    /// Requests sent to every node together.
    fn round_trips(&self) -> Option<u64> {
        self.nodes.iter().map(|n| n.redis.round_trips()).sum()
    }
}
