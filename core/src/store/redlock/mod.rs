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

mod quorum;

use crate::sync::{LockExt, Registry};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use rand::Rng;
use tokio::sync::oneshot;
use tokio::time::Instant;

#[cfg(feature = "bench")]
use super::Diagnostics;
use super::open::COMMON_OPTIONS;
use super::redis::Redis;
use super::{AnyOf, Store, Subscription};
use crate::error::{Error, ErrorKind, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::state::{Attempt, Hold, KeyState, Mode, Released, Request, Waiter};
use crate::url::StoreUrl;

use self::quorum::{Tally, Verdict};

/// Options of `redlock://` itself.
const OPTIONS: &[&str] = &["retry_count", "retry_delay", "retry_jitter", "node_timeout", "drift_factor"];
/// Options handed to every node's `redis://` store.
const NODE_OPTIONS: &[&str] = &["timeout", "connect_timeout", "names", "scheme"];
const DEFAULT_RETRY_COUNT: u32 = 3;
const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(50);
const DEFAULT_RETRY_JITTER: Duration = Duration::from_millis(50);
const DEFAULT_DRIFT_FACTOR: f64 = 0.01;
/// The node timeout of a step without a lease (release, inspect, subscribe) unless
/// `?node_timeout=` says otherwise.
const STEP_TIMEOUT: Duration = Duration::from_secs(1);
/// Semaphore limits remembered for renewals (a renewal does not carry the limit); past
/// this many names the map starts over, and a renewal of a forgotten name needs every
/// node. Also the size at which the process's gates are swept.
const LIMITS_KEPT: usize = 4096;

/// Per node, the answer `each_until` did not wait for, once it comes.
type Late<T> = Vec<Option<oneshot::Receiver<Result<T>>>>;

/// One node and its address (for messages).
struct Node {
    redis: Redis,
    at: String,
    /// Steps on a key still answering after their caller moved on (`Redlock::each_until`):
    /// a later step on that key waits for them here, so that it never overtakes them on
    /// this node's connection (a release sent before its own acquire would leave a hold).
    behind: Registry<Key, tokio::sync::Mutex<()>>,
}

impl Node {
    /// `step` on this node, after any step on `key` still answering here, the whole
    /// bounded by `limit`.
    async fn step<T>(&self, key: Option<&Key>, limit: Duration, step: impl Future<Output = Result<T>>) -> Result<T> {
        let ahead = key.and_then(|k| self.ahead(k));
        match tokio::time::timeout(limit, after(ahead, step)).await {
            Ok(r) => r,
            Err(_) => Err(Error::connection(format!("Redis node {}: no answer within {limit:?}", self.at))),
        }
    }

    /// `step` on this node in the background, after the steps on `key` still answering
    /// here and before any later one (which waits for it as for a straggler).
    fn step_behind<T: Send + 'static>(
        self: &Arc<Self>,
        key: &Key,
        limit: Duration,
        step: impl Future<Output = Result<T>> + Send + 'static,
    ) {
        // Looked up before this step takes its own turn, which it must not wait for.
        let ahead = self.ahead(key);
        let turn = self.straggling(key);
        tokio::spawn(async move {
            // No answer in time: it may land later, still before any later step (sent after).
            let _ = tokio::time::timeout(limit, after(ahead, step)).await;
            drop(turn);
        });
    }

    /// The turn of the last step on `key` still answering here, if any.
    fn ahead(&self, key: &Key) -> Option<Arc<tokio::sync::Mutex<()>>> {
        self.behind.get(key)
    }

    /// Once every background step here has ended.
    async fn settled(&self) {
        for t in self.behind.live() {
            drop(t.lock().await);
        }
    }

    /// Marks the step on `key` here as answering in the background until the guard drops.
    fn straggling(&self, key: &Key) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        self.behind.replace(key.clone(), tokio::sync::Mutex::new(())).try_lock_owned().ok()
    }
}

/// `step`, once the step holding `ahead` (if any) has ended.
async fn after<T>(ahead: Option<Arc<tokio::sync::Mutex<()>>>, step: impl Future<Output = T>) -> T {
    if let Some(ahead) = ahead {
        drop(ahead.lock().await);
    }
    step.await
}

/// The Redlock store of one client.
pub(crate) struct Redlock {
    nodes: Vec<Arc<Node>>,
    /// `Redlock <url>`, password redacted: the prefix of its own messages.
    store: String,
    retry_count: u32,
    retry_delay: Duration,
    retry_jitter: Duration,
    node_timeout: Option<Duration>,
    drift_factor: f64,
    /// The limit of every semaphore this client took permits of (renewals need its
    /// quorum).
    limits: Mutex<HashMap<Key, u32>>,
}

impl std::fmt::Debug for Redlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redlock").field("store", &self.store).finish_non_exhaustive()
    }
}

fn bad_option(url: &StoreUrl, name: &str, want: &str, got: &str) -> Error {
    Error::invalid_argument(format!("option `{name}` of {url} must be {want}, not `{got}`"))
}

/// A duration option of at most an hour; `0` (any unit) too when `zero_ok`.
fn duration_option(url: &StoreUrl, name: &str, default: Duration, zero_ok: bool) -> Result<Duration> {
    let Some(v) = url.option(name) else { return Ok(default) };
    let want =
        if zero_ok { "a duration from 0 to 1h (such as 50ms)" } else { "a duration above 0, up to 1h (such as 50ms)" };
    // `duration::parse` refuses 0 (no timeout or lease may be zero); a pause may.
    let t = v.trim();
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let zero = num.trim().parse::<f64>() == Ok(0.0) && matches!(unit, "" | "ms" | "s" | "m" | "min" | "h");
    match crate::duration::parse(v) {
        _ if zero && zero_ok => Ok(Duration::ZERO),
        Ok(d) if d <= Duration::from_secs(3600) => Ok(d),
        _ => Err(bad_option(url, name, want, v)),
    }
}

/// One gate per store and key in this process: the attempts of its clients on one key
/// take turns, so that they never split the nodes between themselves (a split costs
/// every side a release and a random pause); the others learn `Busy` from a quorum.
///
/// With `holder`, one gate per holder of the key: its acquires and releases take turns,
/// so that every node sees them in the same order. A release of a cancelled attempt's
/// grant running beside the next attempt of the same handle would otherwise land before
/// it on some nodes (a fresh grant there) and after it on others (a re-entry there), and
/// the undo of that split round could not give back the same hold everywhere.
fn gate(store: &str, key: &Key, holder: Option<&str>) -> Arc<tokio::sync::Mutex<()>> {
    type Gates = Registry<(String, Key, Option<String>), tokio::sync::Mutex<()>>;
    static GATES: LazyLock<Gates> = LazyLock::new(Gates::default);
    let id = (store.to_owned(), key.clone(), holder.map(str::to_owned));
    GATES.get_or_insert_with(id, || tokio::sync::Mutex::new(()))
}

impl Redlock {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Redlock> {
        url.check_options(&[COMMON_OPTIONS, OPTIONS, NODE_OPTIONS].concat())?;
        let hosts = url.host_list();
        if hosts.is_empty() {
            return Err(Error::invalid_url(format!(
                "{url} names no node: redlock://host1:port1,host2:port2,host3:port3 (an odd number of independent \
                 Redis masters, 5 in the usual setup)"
            )));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = hosts.iter().find(|h| !seen.insert(h.to_ascii_lowercase())) {
            return Err(Error::invalid_url(format!(
                "{url} names the node `{twice}` twice: each node counts once toward the quorum"
            )));
        }
        let retry_count = match url.option("retry_count") {
            None => DEFAULT_RETRY_COUNT,
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|n| *n <= 1000)
                .ok_or_else(|| bad_option(url, "retry_count", "a whole number from 0 to 1000", v))?,
        };
        let retry_delay = duration_option(url, "retry_delay", DEFAULT_RETRY_DELAY, true)?;
        let retry_jitter = duration_option(url, "retry_jitter", DEFAULT_RETRY_JITTER, true)?;
        let node_timeout = url
            .option("node_timeout")
            .map(|_| duration_option(url, "node_timeout", STEP_TIMEOUT, false))
            .transpose()?;
        let drift_factor = match url.option("drift_factor") {
            None => DEFAULT_DRIFT_FACTOR,
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && (0.0..0.5).contains(f))
                .ok_or_else(|| bad_option(url, "drift_factor", "a number from 0 up to (not including) 0.5", v))?,
        };
        let node_options: Vec<(String, String)> =
            url.options().iter().filter(|(k, _)| NODE_OPTIONS.contains(&k.as_str())).cloned().collect();
        let node_options = &node_options;
        let opened = join_all(hosts.iter().map(|h| async move {
            let node_url = url.with_host("redis", h, node_options)?;
            let redis = Redis::open_node(&node_url).await?;
            Ok::<Arc<Node>, Error>(Arc::new(Node { redis, at: (*h).to_owned(), behind: Registry::default() }))
        }))
        .await;
        let nodes = opened.into_iter().collect::<Result<Vec<_>>>()?;
        Ok(Redlock {
            nodes,
            store: format!("Redlock {url}"),
            retry_count,
            retry_delay,
            retry_jitter,
            node_timeout,
            drift_factor,
            limits: Mutex::default(),
        })
    }

    /// How long one node may take with a step of a `lease`-long hold: `?node_timeout=`,
    /// else a tenth of the lease between 100 ms and 1 s — far below the lease, so that a
    /// dead node costs little of it, yet above a loaded machine's hiccups.
    fn per_node(&self, lease: Duration) -> Duration {
        self.node_timeout.unwrap_or_else(|| (lease / 10).clamp(Duration::from_millis(100), STEP_TIMEOUT))
    }

    /// How long one node may take with a step that has no lease (release, inspect,
    /// subscribe): `?node_timeout=`, else 1 s.
    fn step_limit(&self) -> Duration {
        self.node_timeout.unwrap_or(STEP_TIMEOUT)
    }

    /// Runs `step` on every node at once, each bounded by `limit`; one answer per node.
    async fn each<'a, T, F, Fut>(&'a self, key: Option<&Key>, limit: Duration, step: F) -> Vec<Result<T>>
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
    /// comes later on that node's receiver (`Late`).
    async fn each_until<T, F, Fut>(
        &self,
        key: &Key,
        limit: Duration,
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
                async move { (i, n.step(Some(&key), limit, fut).await) }
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
                    .map(|(i, n)| answered.iter().all(|(a, _)| *a != i).then(|| n.straggling(key)).flatten())
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

    /// The quorum of a step on `key` (a semaphore's depends on its limit).
    fn need(&self, key: &Key) -> usize {
        let limit = match key.family {
            Family::Semaphore => self.limits.locked().get(key).copied(),
            _ => Some(1),
        };
        limit.map_or(self.nodes.len(), |l| quorum::quorum(self.nodes.len(), l))
    }

    fn no_quorum(&self, what: &str, answered: usize, need: usize, first: Option<Error>) -> Error {
        let cause = first.map(|e| format!(": {}", e.message())).unwrap_or_default();
        Error::connection(format!(
            "{}: no quorum to {what}: {answered} of {} nodes answered, {need} needed{cause}",
            self.store,
            self.nodes.len()
        ))
    }

    /// Gives back what one failed round took: one re-entry on the nodes that counted one
    /// more, or the whole fresh hold on the nodes that granted and on those whose answer
    /// never came (it may have landed).
    async fn undo(&self, key: &Key, holder: &str, answers: &[Result<(Attempt, u64)>], reentry: bool) {
        let limit = self.step_limit();
        let count = if reentry { 1 } else { u32::MAX };
        join_all(self.nodes.iter().zip(answers).filter_map(|(n, a)| {
            let took = matches!(a, Ok((Attempt::Granted { .. }, _))) || (!reentry && a.is_err());
            took.then(|| n.step(Some(key), limit, n.redis.release(key, holder, count)))
        }))
        .await;
    }

    /// Writes `token` back to the granting nodes whose counter is below it; how many
    /// granting nodes hold it afterwards. The refusing nodes below it, and the nodes whose
    /// answer was not waited for (`each_until`, after that answer), get it in the
    /// background: the token then sits on every node that answered, and any later quorum
    /// meets it even when nodes restart empty (a node that did not grant only has its
    /// counter raised; the script leaves holds it does not know alone).
    async fn write_back(
        &self,
        key: &Key,
        req: &Request,
        answers: &[Result<(Attempt, u64)>],
        mut late: Late<(Attempt, u64)>,
        token: u64,
    ) -> usize {
        let limit = self.per_node(Duration::from_millis(req.lease_ms));
        let mut at_token = 0;
        let mut raise = Vec::new();
        for ((n, a), late) in self.nodes.iter().zip(answers).zip(late.iter_mut()) {
            let late = match a {
                Ok((Attempt::Granted { .. }, t)) if *t >= token => {
                    at_token += 1;
                    continue;
                }
                Ok((Attempt::Granted { .. }, _)) => {
                    raise.push(tokio::time::timeout(limit, n.redis.raise_fence(key, &req.holder, token)));
                    continue;
                }
                Ok((Attempt::Busy { .. }, counter)) if *counter >= token => continue,
                Ok((Attempt::Busy { .. }, _)) => None,
                Err(e) if e.kind() == ErrorKind::Connection => late.take(),
                Err(_) => continue,
            };
            // A late answer that already meets the token (the usual case: the nodes agree
            // on the counter) needs nothing more.
            let (n2, key2, holder) = (n.clone(), key.clone(), req.holder.clone());
            n.step_behind(key, limit, async move {
                let known = match late {
                    Some(rx) => rx.await.ok().and_then(Result::ok),
                    None => None,
                };
                match known {
                    Some((Attempt::Granted { .. }, t)) if t == token => Ok(()),
                    Some((Attempt::Busy { .. }, counter)) if counter >= token => Ok(()),
                    _ => n2.redis.raise_fence(&key2, &holder, token).await,
                }
            });
        }
        at_token + join_all(raise).await.into_iter().filter(|r| matches!(r, Ok(Ok(())))).count()
    }

    /// A random pause before the next round: `retry_delay` plus up to `retry_jitter`, so
    /// that clients that split the nodes between them do not collide again.
    async fn pause(&self) {
        let jitter = u64::try_from(self.retry_jitter.as_millis()).unwrap_or(u64::MAX);
        let extra = Duration::from_millis(rand::rng().random_range(0..=jitter));
        tokio::time::sleep(self.retry_delay + extra).await;
    }
}

/// The fencing token and hold count of a granting round: a re-entry keeps the hold's
/// token (the largest the nodes recorded); a fresh grant gets one above every counter.
fn granted(answers: &[Result<(Attempt, u64)>]) -> (u64, u32, bool) {
    let mut reentry = None::<(u64, u32)>;
    let (mut tokens, mut busy, mut count) = (Vec::new(), Vec::new(), 1);
    for a in answers.iter().flatten() {
        match a {
            (Attempt::Granted { token, count: c, fresh: false }, _) => {
                let (t, k) = reentry.get_or_insert((0, 0));
                (*t, *k) = ((*t).max(*token), (*k).max(*c));
            }
            (Attempt::Granted { token, count: c, fresh: true }, _) => {
                tokens.push(*token);
                count = *c;
            }
            (Attempt::Busy { .. }, counter) => busy.push(*counter),
        }
    }
    match reentry {
        Some((token, count)) => (token, count, false),
        None => (quorum::fence(tokens, busy), count, true),
    }
}

/// Merges the nodes' views of a key: the holds and waiters a quorum of nodes agrees on
/// (each with the least lease left), and the largest counter a quorum has reached. Times
/// are made relative to each node's own clock (the result's `now` is 0).
///
/// Why not the largest counter: a node counts up in a round that is then undone, or
/// answers a grant after the quorum did, so it may stand above the last token granted;
/// a grant leaves its token on a quorum and fewer than a quorum of nodes (those outside
/// its granting quorum) can stand above it, so the quorum-th largest is that token.
fn merge(views: Vec<(KeyState, u64)>, need: usize) -> KeyState {
    let mut holds: Vec<(Hold, usize)> = Vec::new();
    let mut queue: Vec<(Waiter, usize)> = Vec::new();
    let fence = quorum_th(views.iter().map(|(s, _)| s.fence).collect(), need);
    for (s, now) in views {
        for mut h in s.holds {
            h.expires_ms = h.expires_ms.saturating_sub(now);
            match holds.iter_mut().find(|(x, _)| x.holder == h.holder) {
                Some((x, seen)) => {
                    *seen += 1;
                    x.expires_ms = x.expires_ms.min(h.expires_ms);
                    x.token = x.token.max(h.token);
                    x.count = x.count.min(h.count);
                }
                None => holds.push((h, 1)),
            }
        }
        for mut w in s.queue {
            w.expires_ms = w.expires_ms.saturating_sub(now);
            match queue.iter_mut().find(|(x, _)| x.holder == w.holder) {
                Some((x, seen)) => {
                    *seen += 1;
                    x.expires_ms = x.expires_ms.min(w.expires_ms);
                }
                None => queue.push((w, 1)),
            }
        }
    }
    KeyState {
        fence,
        holds: holds.into_iter().filter(|(_, seen)| *seen >= need).map(|(h, _)| h).collect(),
        queue: queue.into_iter().filter(|(_, seen)| *seen >= need).map(|(w, _)| w).collect(),
        count: 0,
    }
}

/// The largest value at least `need` of `values` reach (the smallest of them all when
/// fewer answered).
fn quorum_th(mut values: Vec<u64>, need: usize) -> u64 {
    values.sort_unstable_by(|a, b| b.cmp(a));
    values.get(need.saturating_sub(1)).or(values.last()).copied().unwrap_or(0)
}

#[async_trait]
impl Store for Redlock {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        let limit = match req.mode {
            Mode::Fair => {
                return Err(Error::unsupported(format!(
                    "{}: fair locks are not available on redlock:// (each node would keep its own queue, in its own \
                     order); use a plain lock here, or a fair lock on redis://",
                    self.store
                )));
            }
            Mode::Permits { limit, .. } => {
                let mut limits = self.limits.locked();
                if limits.len() >= LIMITS_KEPT && !limits.contains_key(key) {
                    limits.clear();
                }
                limits.insert(key.clone(), limit);
                limit
            }
            _ => 1,
        };
        let n = self.nodes.len();
        let need = quorum::quorum(n, limit);
        let ttl = Duration::from_millis(req.lease_ms);
        let drift = quorum::drift(ttl, self.drift_factor);
        // The holder's turn first, always in this order (a release takes only that one).
        let mine = gate(&self.store, key, Some(&req.holder));
        let _my_turn = mine.lock().await;
        let gate = gate(&self.store, key, None);
        let _turn = gate.lock().await;
        let mut round = 0;
        loop {
            let start = Instant::now();
            let step = |n: Arc<Node>| {
                let (key, req) = (key.clone(), req.clone());
                async move { n.redis.acquire_counted(&key, &req).await }
            };
            let granted_by = |a: &[&Result<(Attempt, u64)>]| {
                a.iter().filter(|a| matches!(a, Ok((Attempt::Granted { .. }, _)))).count() >= need
            };
            let (answers, late) = self.each_until(key, self.per_node(ttl), step, granted_by).await;
            let reentry = answers.iter().any(|a| matches!(a, Ok((Attempt::Granted { fresh: false, .. }, _))));
            let mut tally = Tally { nodes: n, granted: 0, busy: 0 };
            let (mut retry_ms, mut first_err) = (None::<u64>, None::<Error>);
            for a in &answers {
                match a {
                    Ok((Attempt::Granted { .. }, _)) => tally.granted += 1,
                    Ok((Attempt::Busy { retry_ms: r }, _)) => {
                        tally.busy += 1;
                        retry_ms = match (retry_ms, r) {
                            (Some(a), Some(b)) => Some(a.min(*b)),
                            (a, b) => a.or(*b),
                        };
                    }
                    // The same refusal comes from every node (a name used by another kind
                    // of primitive, an upgrade, a bad count): no quorum changes it.
                    Err(e) if e.kind() != ErrorKind::Connection => {
                        let e = e.clone();
                        self.undo(key, &req.holder, &answers, reentry).await;
                        return Err(e);
                    }
                    Err(e) => {
                        first_err.get_or_insert_with(|| e.clone());
                    }
                }
            }
            let mut valid = quorum::validity(ttl, start.elapsed(), drift).is_some();
            let verdict = quorum::verdict(tally, need, valid);
            if verdict == Verdict::Grant {
                let (token, count, fresh) = granted(&answers);
                if self.write_back(key, req, &answers, late, token).await >= need {
                    valid = quorum::validity(ttl, start.elapsed(), drift).is_some();
                    if valid {
                        return Ok(Attempt::Granted { token, count, fresh });
                    }
                }
            }
            self.undo(key, &req.holder, &answers, reentry).await;
            round += 1;
            match verdict {
                Verdict::Busy => return Ok(Attempt::Busy { retry_ms }),
                _ if round <= self.retry_count => self.pause().await,
                Verdict::Unreachable => {
                    return Err(self.no_quorum("acquire", tally.granted + tally.busy, need, first_err));
                }
                Verdict::Grant | Verdict::Retry => return Ok(Attempt::Busy { retry_ms }),
            }
        }
    }

    /// The drift of the validity (`ttl − elapsed − drift`): the engine already counts the
    /// elapsed time from before the request.
    fn lease_margin(&self, lease: Duration) -> Duration {
        quorum::drift(lease, self.drift_factor)
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        let need = self.need(key);
        let step = |n: Arc<Node>| {
            let (key, holder) = (key.clone(), holder.to_owned());
            async move { n.redis.renew(&key, &holder, lease).await }
        };
        let renewed_by = |a: &[&Result<bool>]| a.iter().filter(|a| matches!(a, Ok(true))).count() >= need;
        let (answers, _) = self.each_until(key, self.per_node(lease), step, renewed_by).await;
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
        let mine = gate(&self.store, key, Some(holder));
        let _my_turn = mine.lock().await;
        let step = |n: Arc<Node>| {
            let (key, holder) = (key.clone(), holder.to_owned());
            async move { n.redis.release(&key, &holder, count).await }
        };
        let settled = |a: &[&Result<Released>]| {
            a.iter().filter(|a| a.is_ok()).count() >= need
                && a.iter().any(|a| matches!(a, Ok(r) if *r != Released::NotHeld))
        };
        let (answers, _) = self.each_until(key, self.step_limit(), step, settled).await;
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
            return Err(latch_unsupported(&self.store));
        }
        let views = self.each(Some(key), self.step_limit(), |r| r.state(key)).await;
        let need = quorum::quorum(self.nodes.len(), 1);
        let (ok, errs): (Vec<_>, Vec<_>) = views.into_iter().partition(|v| v.is_ok());
        if ok.len() < need {
            return Err(self.no_quorum("inspect", ok.len(), need, errs.into_iter().find_map(|e| e.err())));
        }
        Ok(Inspection::from_state(key, &merge(ok.into_iter().flatten().collect(), need), 0))
    }

    async fn latch_try_set(&self, _key: &Key, _count: u64) -> Result<bool> {
        Err(latch_unsupported(&self.store))
    }

    async fn latch_count_down(&self, _key: &Key) -> Result<u64> {
        Err(latch_unsupported(&self.store))
    }

    async fn latch_count(&self, _key: &Key) -> Result<u64> {
        Err(latch_unsupported(&self.store))
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn Diagnostics> {
        Some(self)
    }

    async fn close(&self) {
        // The steps still answering in the background first (a release's late nodes, a
        // token write-back): closing the connections under them would drop them, leaving
        // holds there until their lease ends. Each is bounded by its own node limit.
        join_all(self.nodes.iter().map(|n| n.settled())).await;
        join_all(self.nodes.iter().map(|n| n.redis.close())).await;
    }
}

#[cfg(feature = "bench")]
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
        join_all(self.nodes.iter().map(|n| n.settled())).await;
    }
}

fn latch_unsupported(store: &str) -> Error {
    Error::unsupported(format!(
        "{store}: count-down latches are not available on redlock:// (a quorum of counters cannot count down exactly \
         once); use redis:// or another store for latches"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::HoldMode;

    fn hold(holder: &str, token: u64, expires_ms: u64) -> Hold {
        Hold { holder: holder.into(), mode: HoldMode::Exclusive, count: 1, token, expires_ms }
    }

    #[test]
    fn a_fresh_grant_is_above_every_counter_and_a_reentry_keeps_its_token() {
        let g = |token, fresh| Ok((Attempt::Granted { token, count: 1, fresh }, token));
        let busy = |c| Ok((Attempt::Busy { retry_ms: None }, c));
        let down = || Err(Error::connection("down"));
        assert_eq!(granted(&[g(3, true), g(1, true), g(3, true), busy(5), down()]), (6, 1, true));
        assert_eq!(granted(&[g(4, false), g(4, false), g(1, true)]), (4, 1, false));
    }

    #[test]
    fn merge_keeps_what_a_quorum_agrees_on() {
        let views = vec![
            (KeyState { fence: 4, holds: vec![hold("a", 4, 1_500)], ..KeyState::default() }, 1_000),
            (KeyState { fence: 9, holds: vec![hold("a", 4, 10_400)], ..KeyState::default() }, 10_000),
            (KeyState { fence: 1, holds: vec![hold("b", 1, 900)], ..KeyState::default() }, 0),
        ];
        let s = merge(views, 2);
        // 9 on one node alone (a round undone there): 4 is what a quorum reached.
        assert_eq!(s.fence, 4);
        assert_eq!(s.holds, vec![hold("a", 4, 400)]);
    }
}
