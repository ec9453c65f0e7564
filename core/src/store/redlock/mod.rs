//! `redlock://[user[:password]@]h1:p1,h2:p2,…[/db]`: the Redlock algorithm over N
//! independent Redis masters. Each node is a `redis://` store of its own (the Redis
//! store's scripts and layouts, Redisson's by default, `?scheme=simple` for the
//! `SET NX PX` layout of redsync and node-redlock); every step goes to all nodes at once,
//! each bounded by the node timeout, and the answers are combined by quorum (`quorum`):
//! - acquire: granted only when a quorum granted and time is left of the lease
//!   (`ttl − elapsed − drift`); otherwise whatever was taken is given back on every node,
//!   and a split or an unreachable quorum is tried again after a random delay;
//! - the fencing token: each node's token counter is a max-register; the token of a grant
//!   is above every counter the answering nodes report, and is written back to the
//!   granting nodes that had less (`quorum::fence` says why it only grows, across nodes
//!   restarted empty too);
//! - renew (extend, watchdog): a quorum must renew, else the hold is lost;
//! - release: on every node; waking: a subscription on every node (any node's message
//!   is a hint: the engine re-checks with an attempt).
//!
//! `Lock`, `RwLock`, `Semaphore` and `PermitSemaphore` run on Redlock; a fair lock (each
//! node would keep its own queue, in its own order) and a count-down latch (a quorum of
//! counters cannot count down exactly once) are `Unsupported`. docs/redlock.md has the
//! options and the rule for restarting a node.
//!
//! Here the `Store` dispatch; `config` parses the URL, `quorum` is the arithmetic,
//! `node` one node and the order of its steps, `gate` who goes first, `fanout` a step
//! on every node, `acquire` the rounds of an acquire, `view` the merged `inspect`.

mod acquire;
#[cfg(feature = "bench")]
mod bench;
mod config;
mod fanout;
mod gate;
mod node;
mod quorum;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;

#[cfg(feature = "bench")]
use super::Diagnostics;
use super::redis::Redis;
use super::{AnyOf, Store, Subscription};
use crate::error::{Error, ErrorKind, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::state::{Attempt, Released, Request};
use crate::sync::LockExt;
use crate::url::StoreUrl;

pub(crate) use self::config::RedlockConfig;
use self::config::STEP_TIMEOUT;
use self::gate::gate;
use self::node::Node;

/// Semaphore limits remembered for renewals (a renewal does not carry the limit); past
/// this many names the map starts over, and a renewal of a forgotten name needs every
/// node. Also the size at which the process's gates are swept.
const LIMITS_KEPT: usize = 4096;

/// The Redlock store of one client.
pub(crate) struct Redlock {
    nodes: Vec<Arc<Node>>,
    config: RedlockConfig,
    /// The limit of every semaphore this client took permits of (renewals need its
    /// quorum).
    limits: Mutex<HashMap<Key, u32>>,
}

impl std::fmt::Debug for Redlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redlock").field("store", &self.config.store).finish_non_exhaustive()
    }
}

impl Redlock {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Redlock> {
        let config = RedlockConfig::from_url(url)?;
        let opened = join_all(config.nodes.iter().map(|(at, node_url)| async move {
            let redis = Redis::open_node(node_url).await?;
            Ok::<Arc<Node>, Error>(Arc::new(Node::new(redis, at.clone())))
        }))
        .await;
        let nodes = opened.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(Redlock { nodes, config, limits: Mutex::default() })
    }

    /// How long one node may take with a step of a `lease`-long hold: `?node_timeout=`,
    /// else a tenth of the lease between 100 ms and 1 s — far below the lease, so that a
    /// dead node costs little of it, yet above a loaded machine's hiccups.
    fn per_node(&self, lease: Duration) -> Duration {
        self.config.node_timeout.unwrap_or_else(|| (lease / 10).clamp(Duration::from_millis(100), STEP_TIMEOUT))
    }

    /// How long one node may take with a step that has no lease (release, inspect,
    /// subscribe): `?node_timeout=`, else 1 s.
    fn step_limit(&self) -> Duration {
        self.config.node_timeout.unwrap_or(STEP_TIMEOUT)
    }

    /// The quorum of a step on `key` (a semaphore's depends on its limit).
    fn need(&self, key: &Key) -> usize {
        let limit = match key.family {
            Family::Semaphore => self.limits.locked().get(key).copied(),
            _ => Some(1),
        };
        limit.map_or(self.nodes.len(), |l| quorum::quorum(self.nodes.len(), l))
    }

    fn no_quorum(&self, what: &str, answered: usize, need: usize, first: Option<Error>) -> Error {
        // A node's message starts with its own `Redis redis://…` (the node's URL): `node
        // host:port` says the same in the Redlock URL's terms, shorter.
        let cause = first.map_or_else(String::new, |e| {
            let m = e.message();
            let node = self.config.nodes.iter().find_map(|(at, url)| {
                m.strip_prefix(&format!("Redis {url}: ")).map(|rest| format!(": node {at}: {rest}"))
            });
            node.unwrap_or_else(|| format!(": {m}"))
        });
        Error::connection(format!(
            "{}: no quorum to {what}: {answered} of {} nodes answered, {need} needed{cause}",
            self.config.store,
            self.nodes.len()
        ))
    }
}

#[async_trait]
impl Store for Redlock {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        self.acquire_by_quorum(key, req).await
    }

    /// elapsed time from before the request.
    fn lease_margin(&self, lease: Duration) -> Duration {
        quorum::drift(lease, self.config.drift_factor)
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        let need = self.need(key);
        let step = |n: Arc<Node>| {
            let (key, holder) = (key.clone(), holder.to_owned());
            async move { n.redis.renew(&key, &holder, lease).await }
        };
        let renewed_by = |a: &[&Result<bool>]| a.iter().filter(|a| matches!(a, Ok(true))).count() >= need;
        let (answers, _) = self.each_until(key, self.per_node(lease), false, step, renewed_by).await;
        let renewed = answers.iter().filter(|a| matches!(a, Ok(true))).count();
        let gone = answers.iter().filter(|a| matches!(a, Ok(false))).count();
        if renewed >= need {
            Ok(true)
        } else if gone > self.nodes.len() - need {
            // A quorum no longer holds it: lost, whatever the rest would say.
            Ok(false)
        } else {
            let first = answers.into_iter().find_map(|a| a.err());
            Err(self.no_quorum("renew", renewed + gone, need, first))
        }
    }

    /// One pipelined batch per node, all nodes at once.
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let answers = self.each(None, self.per_node(lease), |r| r.renew_many(items, lease)).await;
        let mut out = Vec::with_capacity(items.len());
        for (i, (key, _)) in items.iter().enumerate() {
            let need = self.need(key);
            let (mut renewed, mut gone) = (0, 0);
            for a in answers.iter().flatten() {
                match a.get(i) {
                    Some(true) => renewed += 1,
                    Some(false) => gone += 1,
                    None => {}
                }
            }
            if renewed >= need {
                out.push(true);
            } else if gone > self.nodes.len() - need {
                out.push(false);
            } else {
                let first = answers.into_iter().find_map(|a| a.err());
                return Err(self.no_quorum("renew", renewed + gone, need, first));
            }
        }
        Ok(out)
    }

    /// On every node. Freed where any node freed it (the others had lost it already);
    /// still held where a re-entry remains.
    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        // Settled once a majority answered and one of them held it: the rest can only
        // agree (they free it too, or lost it already).
        let need = quorum::quorum(self.nodes.len(), 1);
        let mine = gate(&self.config.store, key, Some(holder));
        let _my_turn = mine.lock().await;
        let step = |n: Arc<Node>| {
            let (key, holder) = (key.clone(), holder.to_owned());
            async move { n.redis.release(&key, &holder, count).await }
        };
        let settled = |a: &[&Result<Released>]| {
            a.iter().filter(|a| a.is_ok()).count() >= need
                && a.iter().any(|a| matches!(a, Ok(r) if *r != Released::NotHeld))
        };
        let (answers, _) = self.each_until(key, self.step_limit(), true, step, settled).await;
        let mut out: Option<Released> = None;
        let mut first_err = None;
        for a in answers {
            out = match (a, out) {
                (Err(e), o) => {
                    if e.kind() != ErrorKind::Connection {
                        return Err(e);
                    }
                    first_err.get_or_insert(e);
                    o
                }
                (Ok(Released::StillHeld(c)), Some(Released::StillHeld(d))) => Some(Released::StillHeld(c.max(d))),
                (Ok(Released::StillHeld(c)), _) => Some(Released::StillHeld(c)),
                (Ok(_), Some(Released::StillHeld(d))) => Some(Released::StillHeld(d)),
                (Ok(Released::Freed), _) | (Ok(Released::NotHeld), Some(Released::Freed)) => Some(Released::Freed),
                (Ok(Released::NotHeld), _) => Some(Released::NotHeld),
            };
        }
        out.ok_or_else(|| self.no_quorum("release", 0, 1, first_err))
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        let answers = self.each(Some(key), self.step_limit(), |r| r.leave_queue(key, holder)).await;
        match answers.iter().any(|a| a.is_ok()) {
            true => Ok(()),
            false => Err(self.no_quorum("leave the queue", 0, 1, answers.into_iter().find_map(|a| a.err()))),
        }
    }

    /// A subscription on every node that answers: any node's message wakes.
    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        let subs = self.each(None, self.step_limit(), |r| r.subscribe(key)).await;
        let (ok, errs): (Vec<_>, Vec<_>) = subs.into_iter().partition(|s| s.is_ok());
        if ok.is_empty() {
            return Err(self.no_quorum("subscribe", 0, 1, errs.into_iter().find_map(|e| e.err())));
        }
        Ok(Box::new(AnyOf(ok.into_iter().flatten().collect())))
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        if key.family == Family::Latch {
            return Err(latch_unsupported(&self.config.store));
        }
        let views = self.each(Some(key), self.step_limit(), |r| r.state(key)).await;
        let need = quorum::quorum(self.nodes.len(), 1);
        let (ok, errs): (Vec<_>, Vec<_>) = views.into_iter().partition(|v| v.is_ok());
        if ok.len() < need {
            return Err(self.no_quorum("inspect", ok.len(), need, errs.into_iter().find_map(|e| e.err())));
        }
        Ok(Inspection::from_state(key, &view::merge(ok.into_iter().flatten().collect(), need), 0))
    }

    async fn latch_try_set(&self, _key: &Key, _count: u64) -> Result<bool> {
        Err(latch_unsupported(&self.config.store))
    }

    async fn latch_count_down(&self, _key: &Key) -> Result<u64> {
        Err(latch_unsupported(&self.config.store))
    }

    async fn latch_count(&self, _key: &Key) -> Result<u64> {
        Err(latch_unsupported(&self.config.store))
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn Diagnostics> {
        Some(self)
    }

    async fn close(&self) {
        // The steps still answering in the background first (a release's late nodes, a
        // token write-back): closing the connections under them would drop them, leaving
        // holds there until their lease ends. Each is bounded by its own node limit (a
        // token write-back by `BEHIND_TIMEOUT`).
        join_all(self.nodes.iter().map(|n| n.behind.settled())).await;
        join_all(self.nodes.iter().map(|n| n.redis.close())).await;
    }
}

fn latch_unsupported(store: &str) -> Error {
    Error::unsupported(format!(
        "{store}: count-down latches are not available on redlock:// (a quorum of counters cannot count down exactly \
         once); use redis:// or another store for latches"
    ))
}
