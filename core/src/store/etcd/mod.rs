//! `etcd://h1:2379,h2:2379` (gRPC) and `etcd+http://h1:2379` (the JSON gateway): one
//! store over either transport (docs/etcd-layout.md lists every key).
//!
//! - `Lock` and `FairLock` are etcd's own `clientv3/concurrency.Mutex` queue (`lock`):
//!   `NAME/<lease hex>` keys, the lowest create revision holds, each waiter watches its
//!   predecessor, the token is the create revision, leases are etcd leases (the server's
//!   clock). `etcdctl lock NAME` and Go services contend on the same locks.
//! - `RwLock` is the etcd recipes' read/write prefixes (`rwlock`): `NAME/read/<holder>` and
//!   `NAME/write/<holder>` keys; `Semaphore` and `PermitSemaphore` are leased permit keys
//!   `NAME/permits/<holder or permit id>` (`semaphore`); both over the per-holder keys of
//!   `keyed`, each hold under an etcd lease (the client's session lease for watchdog holds).
//! - `CountDownLatch` is a counter value `baton/latch/<name>` (the state machine of
//!   `crate::state` as JSON), rewritten by a txn guarded on its mod revision and retried on
//!   conflict; waiters watch that key.

mod keyed;
mod lock;
mod proto;
mod rwlock;
mod semaphore;
mod session;
mod txnlock;
mod v3lock;

#[cfg(feature = "etcd")]
mod grpc;
#[cfg(feature = "etcd-http")]
mod http;

use crate::sync::{LockExt, Registry};
use std::any::Any;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use tokio::sync::oneshot;
use tokio::time::Instant;

use self::keyed::WaitSub;
use self::lock::LockKeys;
use self::proto::{Compare, Range, Transport, Txn, TxnOp, WatchStream};
use self::rwlock::{RwBlocker, RwKeys};
use self::semaphore::{SemBlocker, SemKeys};
use self::txnlock::TxnKeys;
#[cfg(feature = "bench")]
use super::Diagnostics;
use super::open::COMMON_OPTIONS;
use super::stateful::{Op, StateStore};
use super::{Store, Subscription};
use crate::FencingToken;
use crate::error::{Error, Result};
use crate::inspect::{Holder, Inspection};
use crate::key::{Family, Key};
use crate::state::{Attempt, KeyState, Released, Request};
use crate::url::StoreUrl;

/// Options of the etcd schemes besides the common ones.
const OPTIONS: &[&str] = &["timeout", "connect_timeout", "scheme", "ca"];
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_PORT: u16 = 2379;
/// How many times a state update re-reads after a conflicting write before giving up.
const STATE_RACES: u32 = 64;

/// The etcd store of one client.
pub(crate) struct Etcd {
    t: Arc<dyn Transport>,
    /// How locks are taken (`?scheme=`).
    scheme: Scheme,
    /// `?scheme=v3lock`: the holds this process took through the lock service.
    v3: v3lock::Holds,
    local: Arc<lock::Local>,
    state: EtcdState,
    steps: Steps,
}

/// One step at a time per name (per holder of a lock) in this process, over every client of one etcd: steps
/// are optimistic (a txn guarded on revisions, retried when another writer got in
/// between), and contenders of one process would otherwise mostly race each other.
#[derive(Debug, Clone)]
struct Steps {
    store: String,
}

/// A state update waiting for its turn; whoever gets the turn runs every waiting update
/// of the name in one read-modify-write (group commit).
type AnyOp = Box<dyn Fn(&mut KeyState, u64) -> Box<dyn Any + Send> + Send + Sync>;

struct Pending {
    op: AnyOp,
    tx: oneshot::Sender<Result<Box<dyn Any + Send>>>,
}

/// The turn of one name, and the updates waiting for it.
#[derive(Default)]
struct Turn {
    step: Arc<tokio::sync::Mutex<()>>,
    pending: Mutex<Vec<Pending>>,
}

impl Steps {
    fn turn(&self, key: &[u8]) -> Arc<Turn> {
        static REG: OnceLock<Registry<(String, Vec<u8>), Turn>> = OnceLock::new();
        REG.get_or_init(Registry::default).get_or_insert_with((self.store.clone(), key.to_vec()), Turn::default)
    }

    /// Waits for the turn of `key`; the turn lasts as long as the returned guard (which
    /// also keeps the registry entry, and so the mutex, alive).
    async fn lock(&self, key: &[u8]) -> (tokio::sync::OwnedMutexGuard<()>, Arc<Turn>) {
        let turn = self.turn(key);
        (turn.step.clone().lock_owned().await, turn)
    }
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd").field("transport", &self.t).finish_non_exhaustive()
    }
}

/// `host[:port]` or `[v6]:port` entries (default 127.0.0.1:2379), checked.
fn parse_endpoints(url: &StoreUrl) -> Result<Vec<String>> {
    let hosts = url.host_list();
    if hosts.is_empty() {
        return Ok(vec![format!("127.0.0.1:{DEFAULT_PORT}")]);
    }
    hosts
        .into_iter()
        .map(|h| {
            let bad = || Error::invalid_url(format!("`{h}` in {url} is not host:port"));
            let (host, port) = if let Some(rest) = h.strip_prefix('[') {
                let (v6, after) = rest.split_once(']').ok_or_else(bad)?;
                let port = match after.strip_prefix(':') {
                    Some(p) => Some(p),
                    None if after.is_empty() => None,
                    None => return Err(bad()),
                };
                (format!("[{v6}]"), port)
            } else {
                match h.rsplit_once(':') {
                    Some((host, port)) => (host.to_owned(), Some(port)),
                    None => (h.to_owned(), None),
                }
            };
            if host.is_empty() || host.contains(['/', '@', ' ']) {
                return Err(bad());
            }
            let port = match port {
                None => DEFAULT_PORT,
                Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?,
            };
            Ok(format!("{host}:{port}"))
        })
        .collect()
}

impl Etcd {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Etcd> {
        let mut known = COMMON_OPTIONS.to_vec();
        known.extend_from_slice(OPTIONS);
        url.check_options(&known)?;
        if !url.path().is_empty() && url.path() != "/" {
            return Err(Error::invalid_url(format!("etcd URLs take no path: {url}")));
        }
        let scheme = match url.option("scheme") {
            None | Some("queue") => Scheme::Queue,
            Some("txn") => Scheme::Txn,
            Some("v3lock") => Scheme::V3Lock,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "option `scheme` of {url}: `{other}` is not an etcd lock scheme (queue: etcd's concurrency.Mutex, \
                     the default; txn: the bare-key try-lock; v3lock: etcd's lock service)"
                )));
            }
        };
        let endpoints = parse_endpoints(url)?;
        let timeout = url.duration_option("timeout", DEFAULT_TIMEOUT)?;
        let connect_timeout = url.duration_option("connect_timeout", DEFAULT_CONNECT_TIMEOUT)?;
        let auth =
            url.user().filter(|u| !u.is_empty()).map(|u| (u.to_owned(), url.password().unwrap_or("").to_owned()));
        let store = format!("etcd {url}");
        let tls = matches!(url.scheme(), "etcds" | "etcd+https");
        let tls = Tls { on: tls, ca: url.ca_pem(tls, "etcds:// or etcd+https://")? };
        let t: Arc<dyn Transport> = match url.scheme() {
            #[cfg(feature = "etcd-http")]
            "etcd+http" | "etcd+https" => {
                Arc::new(http::Http::connect(endpoints, store, timeout, connect_timeout, auth, tls).await?)
            }
            #[cfg(feature = "etcd")]
            "etcd" | "etcds" => {
                Arc::new(grpc::Grpc::connect(endpoints, store, timeout, connect_timeout, auth, tls).await?)
            }
            s => {
                let _ = (endpoints, store, timeout, connect_timeout, auth, tls);
                return Err(Error::unsupported(format!("`{s}://` is not available in this build of baton")));
            }
        };
        let steps = Steps { store: parse_endpoints(url)?.join(",") };
        Ok(Etcd {
            local: Arc::new(lock::Local::new(t.clone())),
            state: EtcdState { t: t.clone(), steps: steps.clone() },
            t,
            scheme,
            v3: v3lock::Holds::default(),
            steps,
        })
    }

    /// A waiter's subscription on a RwLock or semaphore: one key watched at a time.
    fn wait_sub(&self, key: &Key, req: Option<Request>) -> Box<dyn Subscription> {
        let t = self.t.clone();
        match key.family {
            Family::Semaphore => Box::new(WaitSub::new(t, SemBlocker { keys: SemKeys::new(&key.name), req })),
            _ => Box::new(WaitSub::new(t, RwBlocker { keys: RwKeys::new(&key.name), req })),
        }
    }

    async fn txn_inspect(&self, key: &Key) -> Result<Inspection> {
        let (holder, fence) = txnlock::read(&*self.t, &TxnKeys::new(&key.name)).await?;
        let holders: Vec<Holder> = holder
            .map(|(owner, count, token)| Holder {
                owner,
                mode: "exclusive",
                count,
                token: FencingToken::new(token),
                lease_left: None,
            })
            .into_iter()
            .collect();
        Ok(lock_inspection(key, holders, Vec::new(), fence))
    }

    async fn lock_inspect(&self, key: &Key) -> Result<Inspection> {
        let (es, fence) = lock::read(&*self.t, &LockKeys::new(&key.name)).await?;
        // The lowest key holds, as for etcd's own clients: a waiter granted on the watch
        // event (`lock::handoff`) is the holder while its key still says "waiting".
        let head = es.first();
        // The lock service writes no holder: this process's own holds are known here.
        let own = |e: &lock::Entry| self.v3.describe(&e.kv.key);
        let holders: Vec<Holder> = head
            .map(|e| Holder {
                owner: own(e).map_or_else(|| e.owner(), |(h, _)| h),
                mode: "exclusive",
                count: own(e).map_or_else(|| e.count().max(1), |(_, n)| n),
                token: FencingToken::new(u64::try_from(e.kv.create_revision).unwrap_or(0)),
                // etcd reports whole seconds: the engine's own deadline is more precise.
                lease_left: None,
            })
            .into_iter()
            .collect();
        let waiters = es.iter().skip(holders.len()).map(|e| e.owner()).collect();
        Ok(lock_inspection(key, holders, waiters, fence))
    }
}

#[async_trait]
impl Store for Etcd {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        match key.family {
            Family::Lock if self.scheme == Scheme::V3Lock => v3lock::acquire(&*self.t, &self.v3, &key.name, req).await,
            _ if self.scheme == Scheme::V3Lock => Err(v3lock_only(key)),
            Family::Lock if self.scheme == Scheme::Txn => {
                let keys = TxnKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(&req.holder)).await;
                txnlock::acquire(&*self.t, &keys, req).await
            }
            Family::Lock => {
                let keys = LockKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(&req.holder)).await;
                lock::acquire(&*self.t, &self.local, &keys, req).await
            }
            Family::RwLock => rwlock::acquire(&*self.t, &self.local, &RwKeys::new(&key.name), req).await,
            Family::Semaphore => semaphore::acquire(&*self.t, &self.local, &SemKeys::new(&key.name), req).await,
            Family::Latch => Store::acquire(&self.state, key, req).await,
        }
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        match key.family {
            _ if self.scheme == Scheme::V3Lock => {
                let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
                v3lock::renew(&*self.t, &self.v3, &key.name, holder, ms).await
            }
            Family::Lock if self.scheme == Scheme::Txn => {
                let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
                let keys = TxnKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(holder)).await;
                txnlock::renew(&*self.t, &keys, holder, ms).await
            }
            Family::Lock => {
                let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
                let keys = LockKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(holder)).await;
                lock::renew(&*self.t, &self.local, &keys, holder, ms).await
            }
            Family::RwLock | Family::Semaphore => {
                let ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
                for k in own_keys(key, holder) {
                    if keyed::renew(&*self.t, &self.local, &k, holder, ms).await? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Family::Latch => Store::renew(&self.state, key, holder, lease).await,
        }
    }

    /// Every renewal of the batch at once (keep-alives are independent calls), so a batch
    /// costs about one round trip, not one per lease.
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let all = futures_util::future::join_all(items.iter().map(|(k, h)| self.renew(k, h, lease))).await;
        all.into_iter().collect()
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        match key.family {
            _ if self.scheme == Scheme::V3Lock => {
                let fence = LockKeys::new(&key.name).fence;
                v3lock::release(&*self.t, &self.v3, &key.name, &fence, holder, count).await
            }
            Family::Lock if self.scheme == Scheme::Txn => {
                txnlock::release(&*self.t, &TxnKeys::new(&key.name), holder, count).await
            }
            Family::Lock => {
                let keys = LockKeys::new(&key.name);
                let _one = self.steps.lock(&keys.own(holder)).await;
                lock::release(&*self.t, &self.local, &keys, holder, count).await
            }
            Family::RwLock | Family::Semaphore => {
                for k in own_keys(key, holder) {
                    match keyed::release(&*self.t, &k, &fence_key(key), holder, count).await? {
                        Released::NotHeld => {}
                        done => return Ok(done),
                    }
                }
                Ok(Released::NotHeld)
            }
            Family::Latch => Store::release(&self.state, key, holder, count).await,
        }
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        match key.family {
            // No queue places in the txn and v3lock schemes.
            Family::Lock if self.scheme != Scheme::Queue => Ok(()),
            // Not one step at a time: it only revokes the waiter's own leases.
            Family::Lock => {
                let keys = LockKeys::new(&key.name);
                let _ = &self.steps;
                lock::leave_queue(&*self.t, &self.local, &keys, holder).await
            }
            // Only writers wait with a key.
            Family::RwLock => keyed::leave_queue(&*self.t, &self.local, &RwKeys::new(&key.name).write, holder).await,
            Family::Semaphore => Ok(()),
            Family::Latch => Store::leave_queue(&self.state, key, holder).await,
        }
    }

    fn queues_locks(&self) -> bool {
        self.scheme == Scheme::Queue
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        match key.family {
            _ if self.scheme == Scheme::V3Lock && key.family != Family::Lock => Err(v3lock_only(key)),
            Family::Lock if self.scheme == Scheme::Txn => {
                Ok(Box::new(KeySub::start(self.t.clone(), &TxnKeys::new(&key.name).key, true).await?))
            }
            Family::Lock => Ok(Box::new(LockSub {
                t: self.t.clone(),
                keys: LockKeys::new(&key.name),
                holder: None,
                local: self.local.clone(),
                watch: None,
            })),
            Family::RwLock | Family::Semaphore => Ok(self.wait_sub(key, None)),
            Family::Latch => StateStore::subscribe(&self.state, key).await,
        }
    }

    async fn subscribe_for(&self, key: &Key, req: &Request) -> Result<Box<dyn Subscription>> {
        match key.family {
            Family::Lock if self.scheme != Scheme::Queue => Store::subscribe(self, key).await,
            Family::Lock => Ok(Box::new(LockSub {
                t: self.t.clone(),
                keys: LockKeys::new(&key.name),
                holder: Some(req.holder.clone()),
                local: self.local.clone(),
                watch: None,
            })),
            Family::RwLock | Family::Semaphore => Ok(self.wait_sub(key, Some(req.clone()))),
            Family::Latch => StateStore::subscribe(&self.state, key).await,
        }
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        match key.family {
            _ if self.scheme == Scheme::V3Lock && key.family != Family::Lock => Err(v3lock_only(key)),
            Family::Lock if self.scheme == Scheme::Txn => self.txn_inspect(key).await,
            Family::Lock => self.lock_inspect(key).await,
            Family::RwLock => {
                let v = rwlock::view(&*self.t, &RwKeys::new(&key.name)).await?;
                let (holders, waiters) = rwlock::describe(&*self.t, &v).await?;
                Ok(lock_inspection(key, holders, waiters, v.fence))
            }
            Family::Semaphore => {
                let keys = SemKeys::new(&key.name);
                let (mut all, fence, _) = keyed::read(&*self.t, &[&keys.permits], &keys.fence).await?;
                let hs = all.pop().unwrap_or_default();
                let holders = keyed::holders(&*self.t, hs.iter().map(|h| (h, "permits"))).await?;
                Ok(lock_inspection(key, holders, Vec::new(), fence))
            }
            Family::Latch => Store::inspect(&self.state, key).await,
        }
    }

    async fn latch_try_set(&self, key: &Key, count: u64) -> Result<bool> {
        if self.scheme == Scheme::V3Lock {
            return Err(v3lock_only(key));
        }
        Store::latch_try_set(&self.state, key, count).await
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        if self.scheme == Scheme::V3Lock {
            return Err(v3lock_only(key));
        }
        Store::latch_count_down(&self.state, key).await
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        if self.scheme == Scheme::V3Lock {
            return Err(v3lock_only(key));
        }
        Store::latch_count(&self.state, key).await
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn Diagnostics> {
        Some(self)
    }

    async fn close(&self) {
        self.local.sessions.close().await;
        self.t.close().await;
    }
}

#[cfg(feature = "bench")]
#[async_trait]
impl Diagnostics for Etcd {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        vec![
            ("lock_waits_woken", self.local.wakes.load(Relaxed)),
            ("lock_wake_watch_events", self.local.wake_events.load(Relaxed)),
        ]
    }

    /// One txn as an uncontended grant writes it (create-if-absent under the session
    /// lease), then one delete, with the client's transport and session.
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let s = self.local.sessions.get(lock::secs(30_000)).await?;
        let key = format!("{name}/yardstick").into_bytes();
        let t0 = Instant::now();
        let txn = Txn {
            compare: vec![Compare::create(&key, 0)],
            success: vec![TxnOp::Put { key: key.clone(), value: Vec::new(), lease: Some(s.lease) }],
            failure: vec![],
        };
        self.t.txn(txn).await?;
        let txn_took = t0.elapsed();
        let t1 = Instant::now();
        let del = Txn { compare: vec![], success: vec![TxnOp::Delete { key }], failure: vec![] };
        self.t.txn(del).await?;
        Ok(vec![("txn", txn_took), ("delete", t1.elapsed())])
    }
}

/// An inspection from keys: the last token is the largest of the holders' and the recorded one.
fn lock_inspection(key: &Key, holders: Vec<Holder>, waiters: Vec<String>, fence: u64) -> Inspection {
    let last = holders.iter().map(|h| h.token.get()).max().unwrap_or(0).max(fence);
    Inspection {
        name: key.name.clone(),
        kind: key.family.as_str(),
        holders,
        waiters,
        last_token: (last > 0).then_some(FencingToken::new(last)),
        count: 0,
    }
}

/// How a transport reaches etcd: plain, or TLS (`etcds://`, `etcd+https://`) trusting the
/// system's roots or the PEM roots of `?ca=`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tls {
    pub(crate) on: bool,
    pub(crate) ca: Option<Vec<u8>>,
}

impl Tls {
    /// The endpoints' URL scheme.
    pub(crate) fn url_scheme(&self) -> &'static str {
        if self.on { "https" } else { "http" }
    }
}

/// How an etcd store takes locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    /// etcd's `concurrency.Mutex` queue (the default).
    Queue,
    /// The seeds' bare-key try-lock.
    Txn,
    /// etcd's lock service (`v3lockpb`).
    V3Lock,
}

fn v3lock_only(key: &Key) -> Error {
    Error::unsupported(format!(
        "{} `{}`: etcd's lock service (`?scheme=v3lock`) has locks only; use the default scheme for other kinds",
        key.family.as_str(),
        key.name
    ))
}

/// Sleeps a little after a failed watch (the engine re-checks on return anyway).
async fn pause(until: Instant) {
    tokio::time::sleep_until(until.min(Instant::now() + Duration::from_millis(100))).await;
}

/// A lock waiter's subscription: each wait reads the queue and watches the deletion of
/// the waiter's immediate predecessor only (no herd), from the revision it read.
struct LockSub {
    t: Arc<dyn Transport>,
    keys: LockKeys,
    /// The waiter; `None`: any deletion under the prefix.
    holder: Option<String>,
    local: Arc<lock::Local>,
    /// The watch of the last wait and what it watches: kept while the predecessor stays
    /// the same (a re-check after a quiet second reuses it instead of opening another).
    watch: Option<(Vec<u8>, Box<dyn WatchStream>)>,
}

impl LockSub {
    /// The predecessor went (seen on the watch, or gone at the first read): counted, and
    /// when it was the head, this waiter is the head now.
    fn woken(&self, head: bool, by_event: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        self.local.wakes.fetch_add(1, Relaxed);
        if by_event {
            self.local.wake_events.fetch_add(1, Relaxed);
        }
        if let (true, Some(h)) = (head, &self.holder) {
            self.local.hint(&self.keys.prefix, h);
        }
    }

    async fn wait(&mut self, until: Instant) -> Result<()> {
        let mut head = false;
        let (range, after) = match &self.holder {
            // The engine's attempt just before this wait read the queue: watching from
            // that read's revision misses nothing, and saves a read.
            Some(h) => match self.local.last_seen(&self.keys.prefix, h) {
                Some((key, rev, is_head)) => {
                    head = is_head;
                    (Range::key(&key), rev)
                }
                None => match lock::predecessor(&*self.t, &self.keys, h).await? {
                    None => return Ok(()),
                    Some((key, rev, is_head)) => {
                        head = is_head;
                        (Range::key(&key), rev)
                    }
                },
            },
            None => {
                let mut range = Range::prefix(&self.keys.prefix);
                range.by_create = false;
                (range, 0)
            }
        };
        // A watch of the same key opened earlier holds every event since it was opened; a
        // key never comes back once deleted (lease ids are unique), so its deletion cannot
        // be older than that. A new watch starts from now (etcd serves a watch that must
        // catch up on history from a loop that runs every 100 ms, which would delay the
        // hand-off), and a read after it is confirmed covers what happened since `after`.
        let mut w = match self.watch.take() {
            Some((k, w)) if k == range.key && range.range_end.is_none() => w,
            _ => {
                let w = self.t.watch(range.clone(), None).await?;
                let now = self.t.range(range.clone()).await?;
                let gone = match &range.range_end {
                    // The predecessor, read at `after`, is gone.
                    None => now.kvs.is_empty(),
                    // Any contender: wait only while there is one.
                    Some(_) => lock::entries(&self.keys, &now).is_empty(),
                };
                let _ = after;
                if gone {
                    self.woken(head, false);
                    return Ok(());
                }
                w
            }
        };
        // Bounded by `until`; each turn is one batch of events.
        loop {
            match w.next(until).await? {
                None => {
                    if range.range_end.is_none() {
                        self.watch = Some((range.key, w));
                    }
                    return Ok(());
                }
                Some(evs) if evs.iter().any(|e| e.delete) => {
                    self.woken(head, true);
                    return Ok(());
                }
                Some(_) => {}
            }
        }
    }
}

#[async_trait]
impl Subscription for LockSub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        if self.wait(until).await.is_err() {
            pause(until).await;
        }
        Ok(())
    }
}

/// Watches one key, one watch kept across waits: `?scheme=txn`'s lock key (a deletion
/// wakes) and a latch's counter (any write wakes).
struct KeySub {
    t: Arc<dyn Transport>,
    key: Vec<u8>,
    /// Only a deletion wakes.
    deletes: bool,
    /// `None` after a failure: the next wait opens another (and returns at once, so that
    /// the engine reads again).
    stream: Option<Box<dyn WatchStream>>,
}

impl KeySub {
    /// Opened (and confirmed) before the engine's next attempt, from now: that attempt
    /// reads, and every later change is on the watch.
    async fn start(t: Arc<dyn Transport>, key: &[u8], deletes: bool) -> Result<KeySub> {
        let stream = t.watch(Range::key(key), None).await?;
        Ok(KeySub { t, key: key.to_vec(), deletes, stream: Some(stream) })
    }
}

#[async_trait]
impl Subscription for KeySub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        let Some(stream) = self.stream.as_mut() else {
            match self.t.watch(Range::key(&self.key), None).await {
                Ok(s) => self.stream = Some(s),
                Err(_) => pause(until).await,
            }
            return Ok(());
        };
        // Bounded by `until`: one batch of events per turn.
        loop {
            match stream.next(until).await {
                Ok(Some(evs)) if self.deletes && !evs.iter().any(|e| e.delete) => {}
                Ok(_) => return Ok(()),
                Err(_) => {
                    self.stream = None;
                    pause(until).await;
                    return Ok(());
                }
            }
        }
    }
}

/// The latch: one JSON counter value per name (the state machine of `crate::state`).
#[derive(Debug)]
pub(crate) struct EtcdState {
    t: Arc<dyn Transport>,
    steps: Steps,
}

/// Where a RwLock or semaphore holder's key may be, likeliest first: a writer's id ends in
/// `:write` (as `crate::state::read_holder_of` pairs them), but an owner given by the caller
/// may too, so a RwLock holder not found there is looked for on the other side.
fn own_keys(key: &Key, holder: &str) -> Vec<Vec<u8>> {
    match key.family {
        Family::Semaphore => vec![SemKeys::new(&key.name).own(holder)],
        _ => {
            let (keys, write) = (RwKeys::new(&key.name), holder.ends_with(":write"));
            vec![keys.own(holder, write), keys.own(holder, !write)]
        }
    }
}

/// Where a RwLock or semaphore records the last token released.
fn fence_key(key: &Key) -> Vec<u8> {
    match key.family {
        Family::Semaphore => SemKeys::new(&key.name).fence,
        _ => RwKeys::new(&key.name).fence,
    }
}

fn state_key(key: &Key) -> Vec<u8> {
    format!("baton/{}/{}", key.family.as_str(), key.name).into_bytes()
}

/// The clients' wall clock in milliseconds (etcd has no clock to read; the latch has no
/// leases, so nothing depends on it).
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[async_trait]
impl StateStore for EtcdState {
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let turn = self.steps.turn(&state_key(key));
        let (tx, rx) = oneshot::channel();
        let op = Box::new(move |s: &mut KeyState, now: u64| Box::new(f(s, now)) as Box<dyn Any + Send>);
        turn.pending.locked().push(Pending { op, tx });
        let guard = turn.step.clone().lock_owned().await;
        let batch = std::mem::take(&mut *turn.pending.locked());
        if batch.is_empty() {
            // An earlier turn ran this update with its own.
            drop(guard);
        } else {
            // In a task of its own: a caller that goes away must not strand the updates
            // of the others in its batch.
            let (t, key) = (self.t.clone(), key.clone());
            tokio::spawn(async move {
                let out = run_batch(&*t, &key, &batch).await;
                drop(guard);
                drop(turn);
                match out {
                    Ok(outs) => {
                        for (p, o) in batch.into_iter().zip(outs) {
                            let _ = p.tx.send(Ok(o));
                        }
                    }
                    Err(e) => {
                        for p in batch {
                            let _ = p.tx.send(Err(e.clone()));
                        }
                    }
                }
            });
        }
        let out = rx.await.map_err(|_| Error::backend("etcd: internal error: a state update was dropped"))??;
        out.downcast::<R>().map(|b| *b).map_err(|_| Error::backend("etcd: internal error: wrong update result"))
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        Ok((load(&*self.t, key).await?.0, now_ms()))
    }

    /// Opened (and confirmed) before the engine's next attempt, from now: that attempt
    /// reads the state, and every later change is on the watch.
    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(KeySub::start(self.t.clone(), &state_key(key), false).await?))
    }

    async fn close(&self) {}
}

/// Runs `batch` in order on one read of the state and writes the result back in one txn
/// guarded on the state's mod revision; on a conflicting write, reads and runs again.
async fn run_batch(t: &dyn Transport, key: &Key, batch: &[Pending]) -> Result<Vec<Box<dyn Any + Send>>> {
    let skey = state_key(key);
    for attempt in 0..STATE_RACES {
        let (mut s, rev) = load(t, key).await?;
        let before = s.clone();
        let now = now_ms();
        let outs: Vec<_> = batch.iter().map(|p| (p.op)(&mut s, now)).collect();
        if s == before {
            return Ok(outs);
        }
        let value = serde_json::to_vec(&s).map_err(|e| Error::backend(format!("etcd: {e}")))?;
        let success = vec![TxnOp::Put { key: skey.clone(), value, lease: Some(0) }];
        let txn = Txn { compare: vec![Compare::modified(&skey, rev)], success, failure: vec![] };
        if t.txn(txn).await?.succeeded {
            return Ok(outs);
        }
        // Another process wrote in between: read again after a short, jittered pause.
        let ms = rand::random_range(0..=u64::from(attempt.min(20)) + 1);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    Err(Error::backend(format!("etcd: too many conflicting updates of {key} in a row")))
}

/// The state of `key`, and the mod revision it was read at (0: none yet).
async fn load(t: &dyn Transport, key: &Key) -> Result<(KeyState, i64)> {
    let r = t.range(Range::key(&state_key(key))).await?;
    match r.kvs.first() {
        None => Ok((KeyState::default(), 0)),
        Some(kv) => {
            let s = serde_json::from_slice(&kv.value)
                .map_err(|e| Error::backend(format!("etcd: the state of {key} is not baton's: {e}")))?;
            Ok((s, kv.mod_revision))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let p = |u: &str| parse_endpoints(&StoreUrl::parse(u).unwrap());
        assert_eq!(p("etcd://").unwrap(), vec!["127.0.0.1:2379"]);
        assert_eq!(p("etcd://a:1,b,[::1]:3").unwrap(), vec!["a:1", "b:2379", "[::1]:3"]);
        for bad in ["etcd://a:0", "etcd://a:x", "etcd://[::1", "etcd://[::1]x", "etcd://:5"] {
            assert_eq!(p(bad).unwrap_err().kind(), crate::ErrorKind::InvalidUrl, "{bad}");
        }
    }
}
