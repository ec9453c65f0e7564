//! `redis://[user[:password]@]host[:port][/db]`: a single Redis server (≥ 6: the
//! subscriber connection speaks RESP3). ACL users log in with `user:password@`.
//! `redis+cluster://h1,h2,h3`: a Redis Cluster (every key of one primitive in the name's
//! slot). `redis+sentinel://s1,s2/master[/db]`: the master the sentinels name, followed
//! across failovers (`?sentinel_user=`/`?sentinel_password=`: the sentinels' own login,
//! `sentinel`). `rediss://`, `rediss+cluster://`, `rediss+sentinel://`: the same over TLS
//! (`tls`: rustls; the system's roots, or the PEM file of `?ca=/path/ca.pem`).
//! `?clock=client`: fair-lock places and permit expiries scored with the client's clock,
//! as Redisson scores them (`clock`; the default is the server's `TIME`).
//!
//! Every primitive keeps Redisson's data layout, so a Java service using Redisson and a
//! baton client contend safely on the same names (docs/redis-layout.md has every key,
//! field, channel and message, and where baton adds to Redisson):
//! - `Lock` / `FairLock` ↔ `RLock` / `RFairLock` / `RFencedLock`,
//! - `RwLock` ↔ `RReadWriteLock` (plus a waiting-writer queue Redisson ignores),
//! - `Semaphore` / `PermitSemaphore` ↔ `RPermitExpirableSemaphore` (leased permits),
//! - `CountDownLatch` ↔ `RCountDownLatch`.
//!
//! `?scheme=simple` puts locks in the `SET name token NX PX ttl` layout of redis-py's
//! `Lock`, redsync and node-redlock instead (`simple`); a fair lock is `Unsupported` there.
//!
//! Each step is one Lua script run by `EVALSHA` (`scripts`), on the server's clock.
//! Commands share one multiplexed connection (a `ConnectionManager`, which reconnects);
//! waiters are woken through one subscriber connection per client (`pubsub`); watchdog
//! renewals go out as one pipeline per batch.

mod clock;
pub(crate) mod driven;
mod keys;
mod pubsub;
mod rsemaphore;
mod scripts;
mod sentinel;
mod simple;
mod tls;

use crate::sync::LockExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::SentinelClient;
use redis::{Cmd, ProtocolVersion, RedisConnectionInfo, RedisError, ServerErrorKind, TlsMode, Value};

use self::clock::Clock;
use self::keys::{LockKeys, RwKeys, SemKeys};
use self::pubsub::{Channels, Hub};
use self::scripts::{Lua, SCRIPTS};
use self::tls::Transport;
#[cfg(feature = "bench")]
use super::Diagnostics;
use super::open::COMMON_OPTIONS;
use super::{AnyOf, Store, Subscription};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::state::{self, Attempt, Hold, HoldMode, KeyState, Mode, Released, Request, Waiter};
use crate::url::StoreUrl;

/// Options of `redis://` besides the common ones.
/// (`sentinel::OPTIONS` are the sentinel schemes' own.)
const OPTIONS: &[&str] = &["timeout", "connect_timeout", "names", "scheme", "ca", "semaphore", "clock"];
/// How long one command may take before it fails with `Connection` (`?timeout=`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting may take (`?connect_timeout=`).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_PORT: u16 = 6379;

/// The command connection, counting the requests sent on it (`Store::round_trips`).
#[derive(Clone)]
struct Conn {
    link: Link,
    trips: Arc<AtomicU64>,
}

/// One server (multiplexed, reconnecting) or a Redis Cluster (routed by each script's
/// first key; every key of one primitive shares its slot).
#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// The link the caller's event loop drives, for commands polled on its thread (`driven`).
    Driven(driven::DrivenLink),
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> redis::RedisFuture<'a, Value> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        match &mut self.link {
            Link::Single(c) => c.req_packed_command(cmd),
            Link::Cluster(c) => c.req_packed_command(cmd),
            Link::Driven(l) => Box::pin(l.request(cmd)),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<Value>> {
        // One pipeline is one request and one answer, whatever it holds.
        self.trips.fetch_add(1, Ordering::Relaxed);
        match &mut self.link {
            Link::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Driven(l) => Box::pin(l.request_many(pipeline, offset, count)),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(c) => c.get_db(),
            Link::Cluster(c) => c.get_db(),
            Link::Driven(l) => l.db(),
        }
    }
}

/// The Redis store of one client.
pub(crate) struct Redis {
    conn: Mutex<Option<Conn>>,
    hub: Arc<Hub>,
    /// `Redis <url>`, password redacted: the prefix of every message.
    store: String,
    /// `?names=bare`: every kind of primitive under its bare name (see `keys::redis_name`).
    bare: bool,
    /// `?scheme=simple`: locks in the `SET NX PX` layout of redis-py, redsync and
    /// node-redlock (`simple`) instead of Redisson's `RLock` hash.
    simple: bool,
    /// `redis+cluster://`: names whose keys would fall in different slots are refused.
    cluster: bool,
    /// `redis+sentinel://`: where to ask for the master again after a failure.
    sentinel: Option<Sentinel>,
    /// The database number (keyspace notification channels name it).
    db: i64,
    /// `?semaphore=rsemaphore`: semaphores on Redisson's bare `RSemaphore` counter.
    rsemaphore: bool,
    /// `redis+cluster://`: how to move the subscriber connection to another node.
    rehome: Option<Rehome>,
    /// `?clock=`: whose clock scores fair-lock places and permit expiries (`clock`).
    clock: Clock,
    /// Requests sent on the command connection (every `Conn` of this store shares it).
    trips: Arc<AtomicU64>,
    /// A plain `redis://` server: how to open a [`driven::DrivenLink`] to it.
    direct: Option<driven::Direct>,
}

/// The cluster's nodes and what a subscriber connection to one of them needs.
struct Rehome {
    nodes: Vec<(String, u16)>,
    transport: Transport,
    settings: RedisConnectionInfo,
    connect_timeout: Duration,
    sub_config: ConnectionManagerConfig,
    /// `host:port` of the node the subscriber connection goes to.
    current: Mutex<String>,
    /// One move at a time.
    moving: tokio::sync::Mutex<()>,
}

/// The Sentinel side of `redis+sentinel://`: after a command fails as a failover makes it
/// fail (connection lost, `READONLY` from a demoted master, `LOADING`), the sentinels are
/// asked for the master again and, when it moved, both connections move to it.
struct Sentinel {
    client: tokio::sync::Mutex<SentinelClient>,
    /// `host:port` of the master the connections go to.
    master: Mutex<String>,
    settings: RedisConnectionInfo,
    transport: Transport,
    config: ConnectionManagerConfig,
    sub_config: ConnectionManagerConfig,
}

/// Whether `e` is how a command fails across a failover.
fn failover_error(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(e.code(), Some("READONLY" | "LOADING" | "MASTERDOWN"))
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("store", &self.store).finish_non_exhaustive()
    }
}

/// Maps a driver error: unreachable, dropped or timed-out connections are `Connection`,
/// the rest `Backend`. The message never holds the URL's password (the driver's errors
/// do not carry it, and `store` is redacted).
fn error(store: &str, e: RedisError) -> Error {
    let msg = format!("{store}: {e}");
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
        Error::connection(msg).with_source(e)
    } else if msg.contains("WRONGTYPE") {
        Error::backend(format!(
            "{msg} (the name holds another kind of Redis object: a name must not be used by two kinds of \
             primitive, as in Redisson)"
        ))
        .with_source(e)
    } else {
        Error::backend(msg).with_source(e)
    }
}

/// `host[:port]`, `[v6]:port`, or nothing (127.0.0.1:6379).
fn parse_host(url: &StoreUrl) -> Result<(String, u16)> {
    let hosts = url.host_list();
    match hosts.as_slice() {
        [] => Ok(("127.0.0.1".to_owned(), DEFAULT_PORT)),
        [one] => parse_addr(url, one),
        _ => Err(Error::invalid_url(format!(
            "{url} names several hosts; redis:// takes one server (Redis Cluster and Sentinel are separate schemes)"
        ))),
    }
}

/// Every `host[:port]` of a `redis+cluster://` URL (at least one).
fn parse_hosts(url: &StoreUrl) -> Result<Vec<(String, u16)>> {
    let hosts = url.host_list();
    if hosts.is_empty() {
        return Err(Error::invalid_url(format!("{url} names no host: redis+cluster://host1:port1,host2:port2,…")));
    }
    hosts.iter().map(|h| parse_addr(url, h)).collect()
}

/// One `host[:port]` or `[v6]:port`.
fn parse_addr(url: &StoreUrl, one: &str) -> Result<(String, u16)> {
    let bad = || Error::invalid_url(format!("bad host or port `{one}` in {url}"));
    let (host, port) = if let Some(rest) = one.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or_else(bad)?;
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return Err(bad()),
        }
    } else {
        match one.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (one, None),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?,
        None => DEFAULT_PORT,
    };
    Ok((host.to_owned(), port))
}

/// The path of `redis+sentinel://hosts/master-name[/db]`: the master's name and the
/// database number.
fn parse_sentinel_path(url: &StoreUrl) -> Result<(String, i64)> {
    let bad = || {
        Error::invalid_url(format!(
            "{url}: redis+sentinel:// needs the master's name as its path: redis+sentinel://host:26379/mymaster[/db]"
        ))
    };
    let mut parts = url.path().trim_start_matches('/').split('/');
    let name = parts.next().filter(|n| !n.is_empty()).ok_or_else(bad)?;
    let db = match parts.next() {
        None | Some("") => 0,
        Some(d) => d.parse::<i64>().ok().filter(|d| *d >= 0).ok_or_else(bad)?,
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok((name.to_owned(), db))
}

/// The first host of `url` that answers PING within `limit` (the cluster's subscriber
/// node), if any.
async fn first_answering(
    nodes: &[(String, u16)],
    settings: &RedisConnectionInfo,
    limit: Duration,
    except: Option<&str>,
    transport: &Transport,
) -> Option<redis::ConnectionInfo> {
    for (host, port) in nodes {
        let Ok(info) = transport.info(host.clone(), *port) else { continue };
        if except.is_some_and(|x| x == info.addr().to_string()) {
            continue;
        }
        let info = info.set_redis_settings(settings.clone());
        let Ok(client) = transport.client(info.clone(), "") else { continue };
        let ping = async {
            let mut c = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async::<String>(&mut c).await
        };
        if let Ok(Ok(_)) = tokio::time::timeout(limit, ping).await {
            return Some(info);
        }
    }
    None
}

/// The database number from the path (`/0`, `/3`; none is 0).
fn parse_db(url: &StoreUrl) -> Result<i64> {
    match url.path().trim_start_matches('/') {
        "" => Ok(0),
        p => p
            .parse::<i64>()
            .ok()
            .filter(|d| *d >= 0)
            .ok_or_else(|| Error::invalid_url(format!("the path of {url} must be a database number such as /0"))),
    }
}

/// Every connection sends each request at once: with Nagle's algorithm a small write
/// behind one not yet acknowledged (a release right after an acquire, a renewal batch
/// next to a script) waits for the peer's delayed ACK.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The count argument of the release scripts (0: every hold).
fn count_arg(count: u32) -> u32 {
    if count == u32::MAX { 0 } else { count }
}

impl Redis {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Redis> {
        Redis::open_with(url, false).await
    }

    /// One node of `redlock://`: connected on first use (a node that is down when the
    /// client starts must not stop it; the quorum decides), scripts loaded on the first
    /// `NOSCRIPT`.
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))]
    pub(crate) async fn open_node(url: &StoreUrl) -> Result<Redis> {
        Redis::open_with(url, true).await
    }

    async fn open_with(url: &StoreUrl, lazy: bool) -> Result<Redis> {
        let (tls, cluster) = match url.scheme() {
            "redis" | "redis+sentinel" => (false, false),
            "rediss" | "rediss+sentinel" => (true, false),
            "redis+cluster" => (false, true),
            "rediss+cluster" => (true, true),
            s => {
                return Err(Error::unsupported(format!(
                    "`{s}://` is not supported yet by baton's Redis store ({url}); use redis:// for a single server"
                )));
            }
        };
        url.check_options(&[COMMON_OPTIONS, OPTIONS, sentinel::OPTIONS].concat())?;
        let transport = Transport::parse(url, tls)?;
        let on_sentinel = url.scheme().ends_with("+sentinel");
        sentinel::check_options(url, on_sentinel)?;
        let timeout = url.duration_option("timeout", DEFAULT_TIMEOUT)?;
        let bare = match url.option("names") {
            None | Some("typed") => false,
            Some("bare") => true,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "option `names` of {url} is `typed` (the default) or `bare`, not `{other}`"
                )));
            }
        };
        let simple = match url.option("scheme") {
            None | Some("redisson") => false,
            Some("simple") => true,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "option `scheme` of {url} is `redisson` (the default) or `simple`, not `{other}`"
                )));
            }
        };
        let rsemaphore = match url.option("semaphore") {
            None | Some("leased") => false,
            Some("rsemaphore") => true,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "option `semaphore` of {url} is `leased` (the default) or `rsemaphore`, not `{other}`"
                )));
            }
        };
        let clock = Clock::parse(url)?;
        let connect_timeout = url.duration_option("connect_timeout", DEFAULT_CONNECT_TIMEOUT)?;
        let sentinel_of = on_sentinel.then(|| parse_sentinel_path(url)).transpose()?;
        let (host, port) =
            if cluster || sentinel_of.is_some() { parse_hosts(url)?.swap_remove(0) } else { parse_host(url)? };
        let db = match &sentinel_of {
            Some((_, db)) => *db,
            None => parse_db(url)?,
        };
        if cluster && db != 0 {
            return Err(Error::invalid_url(format!("{url}: Redis Cluster has database 0 only")));
        }
        let mut settings = RedisConnectionInfo::default().set_db(db);
        if let Some(user) = url.user().filter(|u| !u.is_empty()) {
            settings = settings.set_username(user);
        }
        if let Some(password) = url.password() {
            settings = settings.set_password(password);
        }
        let store = format!("Redis {url}");
        let direct = (!tls && !cluster && !on_sentinel && !lazy).then(|| driven::Direct {
            host: host.clone(),
            port,
            user: url.user().filter(|u| !u.is_empty()).map(str::to_owned),
            password: url.password().map(str::to_owned),
            db,
            connect_timeout,
            timeout,
        });
        let info = transport.info(host, port).map_err(|e| error(&store, e))?;
        let client_of = |info: redis::ConnectionInfo| transport.client(info, &store);
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(timeout))
            .set_connection_timeout(Some(connect_timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(1));

        let cannot = |e: RedisError| Error::connection(format!("cannot connect to {store}: {e}")).with_source(e);
        let mut sentinel = None;
        let mut master_info = None;
        let conn = if let Some((master_name, _)) = &sentinel_of {
            let mut client =
                sentinel::client(url, parse_hosts(url)?, master_name, db, &transport).map_err(|e| error(&store, e))?;
            let master = tokio::time::timeout(connect_timeout * 3, client.async_get_client())
                .await
                .map_err(|_| Error::connection(format!("cannot connect to {store}: no sentinel answered in time")))?
                .map_err(cannot)?;
            let info = master.get_connection_info().clone().set_redis_settings(settings.clone());
            let at = info.addr().to_string();
            let c = ConnectionManager::new_with_config(master, config.clone()).await.map_err(cannot)?;
            sentinel = Some((client, at));
            master_info = Some(info);
            Link::Single(c)
        } else if cluster {
            let nodes = parse_hosts(url)?.into_iter().map(|(h, p)| transport.info(h, p));
            let nodes = nodes.collect::<redis::RedisResult<Vec<_>>>().map_err(|e| error(&store, e))?;
            let mut b = ClusterClientBuilder::new(nodes)
                .connection_timeout(connect_timeout)
                .response_timeout(timeout)
                .retries(3)
                .max_retry_wait(1000)
                .min_retry_wait(50)
                .tcp_settings(tls::tcp());
            if let Some(user) = url.user().filter(|u| !u.is_empty()) {
                b = b.username(user);
            }
            if let Some(password) = url.password() {
                b = b.password(password);
            }
            if let Some(certs) = transport.certs() {
                b = b.tls(TlsMode::Secure).certs(certs);
            }
            let client = b.build().map_err(|e| error(&store, e))?;
            // Bounded: the cluster client's own connect may retry past `connect_timeout`.
            let c = tokio::time::timeout(connect_timeout * 3, client.get_async_connection())
                .await
                .map_err(|_| Error::connection(format!("cannot connect to {store}: timed out")))?
                .map_err(cannot)?;
            Link::Cluster(c)
        } else {
            let client = client_of(info.clone().set_redis_settings(settings.clone()))?;
            if lazy {
                Link::Single(ConnectionManager::new_lazy_with_config(client, config.clone()).map_err(cannot)?)
            } else {
                Link::Single(ConnectionManager::new_with_config(client, config.clone()).await.map_err(cannot)?)
            }
        };
        let trips = Arc::new(AtomicU64::new(0));
        let mut conn = Conn { link: conn, trips: trips.clone() };
        // Loaded once; a server that lost them (restart, SCRIPT FLUSH) gets them again on
        // the first NOSCRIPT.
        if !lazy {
            load_scripts(&mut conn).await.map_err(|e| error(&store, e))?;
        }

        // The subscriber connection: RESP3 push messages, connected on first use. On a
        // cluster, to the first node of the URL that answers now: a PUBLISH reaches every
        // node's subscribers.
        let channels = Arc::new(Channels::default());
        let nodes = if cluster { parse_hosts(url)? } else { Vec::new() };
        let info = if cluster {
            first_answering(&nodes, &settings, connect_timeout, None, &transport).await.unwrap_or(info)
        } else {
            info
        };
        let sub_at = info.addr().to_string();
        let sub_info = master_info.unwrap_or_else(|| info.set_redis_settings(settings.clone()));
        let sub_client = client_of(sub_info.set_redis_settings(settings.clone().set_protocol(ProtocolVersion::RESP3)))?;
        let sub_config = config
            .clone()
            .set_push_sender(pubsub::push_handler(Arc::downgrade(&channels)))
            .set_automatic_resubscription();
        let sub =
            ConnectionManager::new_lazy_with_config(sub_client, sub_config.clone()).map_err(|e| error(&store, e))?;
        let hub = Arc::new(Hub::new(sub, channels, crate::rt::Rt::current(), timeout, store.clone()));
        let rehome = cluster.then(|| Rehome {
            nodes,
            transport: transport.clone(),
            settings: settings.clone(),
            connect_timeout,
            sub_config: sub_config.clone(),
            current: Mutex::new(sub_at),
            moving: tokio::sync::Mutex::new(()),
        });
        let sentinel = sentinel.map(|(client, at)| Sentinel {
            client: tokio::sync::Mutex::new(client),
            master: Mutex::new(at),
            settings,
            transport,
            config,
            sub_config,
        });
        Ok(Redis {
            conn: Mutex::new(Some(conn)),
            hub,
            store,
            bare,
            simple,
            cluster,
            sentinel,
            db,
            rsemaphore,
            rehome,
            clock,
            trips,
            direct,
        })
    }

    /// A link for the caller's event loop to drive (`driven`): on a plain `redis://`
    /// server only (None for TLS, a cluster or sentinels, which keep the usual path).
    pub(crate) async fn driven_link(&self) -> Result<Option<driven::DrivenLink>> {
        match &self.direct {
            Some(d) if cfg!(unix) => driven::DrivenLink::open(d, self.trips.clone(), &self.store).await.map(Some),
            _ => Ok(None),
        }
    }

    /// The Redis name of `key` (see `keys::redis_name`).
    fn name(&self, key: &Key) -> String {
        keys::redis_name(key, self.bare)
    }

    /// On a cluster, refuses a name whose keys would not share one slot (a `{` or `}`
    /// without a non-empty `{tag}`), before any script runs into `CROSSSLOT`.
    fn check_slot(&self, key: &Key) -> Result<()> {
        if self.cluster && !keys::cluster_safe(&self.name(key)) {
            return Err(Error::invalid_argument(format!(
                "{key} cannot be used on Redis Cluster: a name with `{{` or `}}` needs a non-empty `{{tag}}` so that \
                 all its keys share one hash slot"
            )));
        }
        Ok(())
    }

    fn conn(&self) -> Result<Conn> {
        if let Some(l) = driven::here(&self.trips) {
            return Ok(Conn { link: Link::Driven(l), trips: self.trips.clone() });
        }
        self.conn.locked().clone().ok_or_else(Error::closed)
    }

    fn err(&self, e: RedisError) -> Error {
        error(&self.store, e)
    }

    /// After `e`, on `redis+sentinel://`: asks the sentinels where the master is and, if
    /// it moved, moves both connections there. True when the caller should try again.
    async fn recover(&self, e: &RedisError) -> bool {
        failover_error(e) && self.follow_master().await
    }

    /// On `redis+sentinel://`: moves both connections to the master the sentinels name
    /// now, if it moved. True when it did (or someone else just did).
    async fn follow_master(&self) -> bool {
        let Some(s) = &self.sentinel else { return false };
        let before = s.master.locked().clone();
        let mut client = s.client.lock().await;
        // Someone else moved the connections while we waited for the lock.
        if *s.master.locked() != before {
            return true;
        }
        let Ok(Ok(master)) = tokio::time::timeout(Duration::from_secs(5), client.async_get_client()).await else {
            return false;
        };
        let info = master.get_connection_info().clone().set_redis_settings(s.settings.clone());
        let at = info.addr().to_string();
        if at == before {
            return false;
        }
        let Ok(Ok(conn)) =
            tokio::time::timeout(Duration::from_secs(5), ConnectionManager::new_with_config(master, s.config.clone()))
                .await
        else {
            return false;
        };
        let sub_info = info.set_redis_settings(s.settings.clone().set_protocol(ProtocolVersion::RESP3));
        let Ok(sub_client) = s.transport.client(sub_info, &self.store) else { return false };
        let Ok(sub) = ConnectionManager::new_lazy_with_config(sub_client, s.sub_config.clone()) else { return false };
        {
            let mut slot = self.conn.locked();
            if slot.is_none() {
                return false; // closed meanwhile
            }
            *slot = Some(Conn { link: Link::Single(conn), trips: self.trips.clone() });
        }
        *s.master.locked() = at;
        self.hub.replace(sub);
        true
    }

    /// Subscribes through the hub; when its connection fails, moves it first (a cluster:
    /// to another node that answers; Sentinel: to the current master) and tries once more.
    async fn listen(&self, channel: String, wake_one: bool) -> Result<Box<dyn Subscription>> {
        match self.hub.subscribe(channel.clone(), wake_one).await {
            Err(e)
                if e.kind() == crate::ErrorKind::Connection && (self.rehome().await || self.follow_master().await) =>
            {
                self.hub.subscribe(channel, wake_one).await
            }
            r => r,
        }
    }

    /// On `redis+cluster://`: moves the subscriber connection to the first other node of
    /// the URL that answers. True when it moved (or someone else just did).
    async fn rehome(&self) -> bool {
        let Some(r) = &self.rehome else { return false };
        let before = r.current.locked().clone();
        let _moving = r.moving.lock().await;
        if *r.current.locked() != before {
            return true;
        }
        let Some(info) = first_answering(&r.nodes, &r.settings, r.connect_timeout, Some(&before), &r.transport).await
        else {
            return false;
        };
        let at = info.addr().to_string();
        let sub_info = info.set_redis_settings(r.settings.clone().set_protocol(ProtocolVersion::RESP3));
        let Ok(client) = r.transport.client(sub_info, &self.store) else { return false };
        let Ok(sub) = ConnectionManager::new_lazy_with_config(client, r.sub_config.clone()) else { return false };
        *r.current.locked() = at;
        self.hub.replace(sub);
        true
    }

    /// Runs `lua` by SHA, loading it again if the server lost it; on `redis+sentinel://`
    /// once more on the new master after a failover.
    async fn eval(&self, lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        match eval_on(self.conn()?, lua, keys, args).await {
            Err(e) if self.recover(&e).await => eval_on(self.conn()?, lua, keys, args).await.map_err(|e| self.err(e)),
            r => r.map_err(|e| self.err(e)),
        }
    }

    fn reply_err(&self, what: &str, v: &Value) -> Error {
        Error::backend(format!("{}: unexpected reply to {what}: {v:?}", self.store))
    }

    /// The renew call of one item (for single renewals and pipelined batches).
    fn renew_call(&self, key: &Key, holder: &str, lease: Duration) -> Result<Cmd> {
        if self.simple && key.family == Family::Lock {
            return Ok(self.simple_renew_call(key, holder, lease));
        }
        if self.bare_counter(key, holder) {
            return Ok(self.rsem_renew_call(key, holder, lease));
        }
        let lease = ms(lease).to_string();
        let n = &self.name(key);
        Ok(match key.family {
            Family::Lock => {
                let k = LockKeys::new(n);
                evalsha(
                    &SCRIPTS.lock_renew,
                    &[k.hash.as_bytes(), k.meta.as_bytes()],
                    &[holder.as_bytes(), lease.as_bytes()],
                )
            }
            Family::RwLock => {
                let k = RwKeys::new(n);
                evalsha(
                    &SCRIPTS.rw_renew,
                    &[k.hash.as_bytes(), k.meta.as_bytes()],
                    &[holder.as_bytes(), lease.as_bytes(), k.base.as_bytes()],
                )
            }
            Family::Semaphore => {
                let k = SemKeys::new(n);
                let holder = keys::canonical_holder(holder);
                evalsha(
                    &SCRIPTS.sem_renew,
                    &[k.count.as_bytes(), k.permits.as_bytes(), k.meta.as_bytes()],
                    &[
                        holder.as_bytes(),
                        &keys::first_member(&holder),
                        lease.as_bytes(),
                        k.channel.as_bytes(),
                        self.clock.arg().as_bytes(),
                    ],
                )
            }
            Family::Latch => return Err(Error::unsupported("a count-down latch has no lease to renew")),
        })
    }

    /// Renewals as one pipeline (one round trip).
    async fn renew_pipeline(&self, cmds: Vec<Cmd>) -> Result<Vec<bool>> {
        let mut pipe = redis::pipe();
        for cmd in cmds {
            pipe.add_command(cmd);
        }
        pipe.ignore_errors();
        let mut out = pipeline_on(self.conn()?, &pipe).await;
        // A failover answers the whole pipeline or each item (`READONLY`): move and retry.
        let failed = match &out {
            Err(e) => Some(e),
            Ok(items) => items.iter().find_map(|r| r.as_ref().err().filter(|e| failover_error(e))),
        };
        if let Some(e) = failed
            && self.recover(e).await
        {
            out = pipeline_on(self.conn()?, &pipe).await;
        }
        let out = out.map_err(|e| self.err(e))?;
        // An item refused as a failover refuses it (`READONLY`, `LOADING`: the new master
        // is not ready yet) says nothing about the lease: the whole batch failed, and the
        // watchdog tries again within the lease.
        if let Some(e) = out.iter().find_map(|r| r.as_ref().err().filter(|e| failover_error(e))) {
            return Err(Error::connection(format!("{}: {e}", self.store)));
        }
        // An item the server refused otherwise (a name reused by another kind of object)
        // is lost; the others stand.
        Ok(out.into_iter().map(|r| matches!(r, Ok(1))).collect())
    }

    async fn run_renew(&self, cmd: Cmd) -> Result<bool> {
        let out = match renew_on(self.conn()?, &cmd).await {
            Err(e) if self.recover(&e).await => renew_on(self.conn()?, &cmd).await,
            r => r,
        };
        out.map(|v| v == 1).map_err(|e| self.err(e))
    }

    async fn inspect_lock(&self, key: &Key) -> Result<(KeyState, u64)> {
        let k = LockKeys::new(&self.name(key));
        let v = self
            .eval(
                &SCRIPTS.lock_inspect,
                &[
                    k.hash.as_bytes(),
                    k.queue.as_bytes(),
                    k.timeouts.as_bytes(),
                    k.counter.as_bytes(),
                    k.meta.as_bytes(),
                ],
                &[self.clock.arg().as_bytes()],
            )
            .await?;
        let bad = || self.reply_err("inspect", &v);
        let [now, pttl, hash, queue, zset, counter, meta] = items(&v).ok_or_else(bad)? else {
            return Err(bad());
        };
        let now = uint(now).ok_or_else(bad)?;
        let pttl = int(pttl).ok_or_else(bad)?;
        let tokens = pairs(meta);
        let fence = uint(counter).unwrap_or(0);
        let holds = pairs(hash)
            .into_iter()
            .filter_map(|(field, count)| {
                let holder = String::from_utf8_lossy(field).into_owned();
                // Recorded only where a Redlock node's counter passed it; else the counter.
                let token = tokens
                    .iter()
                    .find(|(f, _)| f.strip_prefix(b"t:") == Some(field))
                    .and_then(|(_, t)| bytes_u64(t))
                    .unwrap_or(fence);
                Some(Hold {
                    holder,
                    mode: HoldMode::Exclusive,
                    count: u32::try_from(bytes_u64(count)?).unwrap_or(u32::MAX),
                    token,
                    expires_ms: expiry(now, pttl),
                })
            })
            .collect();
        Ok((KeyState { fence, holds, queue: waiters(now, queue, zset), count: 0 }, now))
    }

    async fn inspect_rw(&self, key: &Key) -> Result<(KeyState, u64)> {
        let k = RwKeys::new(&self.name(key));
        let v = self
            .eval(
                &SCRIPTS.rw_inspect,
                &[
                    k.hash.as_bytes(),
                    k.queue.as_bytes(),
                    k.timeouts.as_bytes(),
                    k.counter.as_bytes(),
                    k.meta.as_bytes(),
                ],
                &[k.base.as_bytes()],
            )
            .await?;
        let bad = || self.reply_err("inspect", &v);
        let [now, counter, holds, queue, zset] = items(&v).ok_or_else(bad)? else {
            return Err(bad());
        };
        let now = uint(now).ok_or_else(bad)?;
        let mut out = Vec::new();
        for h in items(holds).ok_or_else(bad)? {
            let [field, count, left, token] = items(h).ok_or_else(bad)? else {
                return Err(bad());
            };
            let holder = String::from_utf8_lossy(bytes(field).ok_or_else(bad)?).into_owned();
            let mode = if holder.ends_with(":write") { HoldMode::Write } else { HoldMode::Read };
            out.push(Hold {
                holder,
                mode,
                count: u32::try_from(uint(count).ok_or_else(bad)?).unwrap_or(u32::MAX),
                token: uint(token).unwrap_or(0),
                expires_ms: expiry(now, int(left).ok_or_else(bad)?),
            });
        }
        let queue = waiters(now, queue, zset).into_iter().map(|w| Waiter { mode: HoldMode::Write, ..w }).collect();
        Ok((KeyState { fence: uint(counter).unwrap_or(0), holds: out, queue, count: 0 }, now))
    }

    async fn inspect_sem(&self, key: &Key) -> Result<(KeyState, u64)> {
        let k = SemKeys::new(&self.name(key));
        let v = self
            .eval(
                &SCRIPTS.sem_inspect,
                &[k.permits.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
                &[self.clock.arg().as_bytes()],
            )
            .await?;
        let bad = || self.reply_err("inspect", &v);
        let [now, zset, counter, meta] = items(&v).ok_or_else(bad)? else {
            return Err(bad());
        };
        let now = uint(now).ok_or_else(bad)?;
        let tokens = pairs(meta);
        let mut holds: Vec<Hold> = Vec::new();
        for (member, score) in pairs(zset) {
            let Some(score) = bytes_f64(score) else { continue };
            if score <= now as f64 {
                continue;
            }
            let holder = keys::member_holder(member);
            match holds.iter_mut().find(|h| h.holder == holder) {
                Some(h) => h.count += 1,
                None => {
                    let field = format!("t:{holder}");
                    let token = tokens
                        .iter()
                        .find(|(f, _)| *f == field.as_bytes())
                        .and_then(|(_, t)| bytes_u64(t))
                        .unwrap_or(0);
                    holds.push(Hold {
                        holder,
                        mode: HoldMode::Permits,
                        count: 1,
                        token,
                        expires_ms: score.min(u64::MAX as f64) as u64,
                    });
                }
            }
        }
        Ok((KeyState { fence: uint(counter).unwrap_or(0), holds, queue: Vec::new(), count: 0 }, now))
    }

    fn attempt(&self, what: &str, v: &Value) -> Result<Attempt> {
        let bad = || self.reply_err(what, v);
        if let Value::Int(token) = v {
            // The lock's uncontended grant: the token alone.
            return Ok(Attempt::Granted { token: u64::try_from(*token).map_err(|_| bad())?, count: 1, fresh: true });
        }
        let r = items(v).ok_or_else(bad)?;
        match r.first().and_then(int) {
            Some(1) => {
                let [_, token, count, fresh] = r else { return Err(bad()) };
                Ok(Attempt::Granted {
                    token: uint(token).ok_or_else(bad)?,
                    count: u32::try_from(uint(count).ok_or_else(bad)?).unwrap_or(u32::MAX),
                    fresh: int(fresh) == Some(1),
                })
            }
            Some(0) => {
                let retry = r.get(1).and_then(int).ok_or_else(bad)?;
                Ok(Attempt::Busy { retry_ms: u64::try_from(retry).ok().map(|ms| ms.max(1)) })
            }
            Some(4) => Err(Error::invalid_argument(
                "cannot upgrade a read hold to a write hold (it would wait on itself); release the read lock first",
            )),
            Some(5) => Err(Error::backend(format!(
                "{}: this name holds a Redis hash that is not a read-write lock (a lock of the same name?); a name \
                 must not be used by two kinds of primitive",
                self.store
            ))),
            _ => Err(bad()),
        }
    }

    fn released(&self, v: &Value, count: u32) -> Result<Released> {
        let bad = || self.reply_err("release", v);
        if *v == Value::Int(1) {
            return Ok(Released::Freed);
        }
        let r = items(v).ok_or_else(bad)?;
        match r.first().and_then(int) {
            Some(0) => Ok(Released::NotHeld),
            Some(1) => Ok(Released::Freed),
            Some(2) => {
                Ok(Released::StillHeld(u32::try_from(r.get(1).and_then(uint).ok_or_else(bad)?).unwrap_or(u32::MAX)))
            }
            Some(3) => {
                let held = r.get(1).and_then(uint).ok_or_else(bad)?;
                Err(Error::invalid_argument(format!("cannot release {count} permits: this holder holds {held}")))
            }
            _ => Err(bad()),
        }
    }
}

/// `lua` by SHA on `conn`; if the server lost it, by its source (`EVAL`, which also caches
/// it again: a `SCRIPT LOAD` then `EVALSHA` could meet another `SCRIPT FLUSH` between
/// the two).
async fn eval_on(mut conn: Conn, lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> redis::RedisResult<Value> {
    let cmd = evalsha(lua, keys, args);
    match cmd.query_async::<Value>(&mut conn).await {
        Err(e) if is_noscript(&e) => {
            let mut eval = redis::cmd("EVAL");
            eval.arg(lua.code).arg(keys.len()).arg(keys).arg(args);
            eval.query_async(&mut conn).await
        }
        r => r,
    }
}

/// One renewal on `conn`, scripts loaded again first if the server lost them.
async fn renew_on(mut conn: Conn, cmd: &Cmd) -> redis::RedisResult<i64> {
    match cmd.query_async::<i64>(&mut conn).await {
        Err(e) if is_noscript(&e) => {
            load_scripts(&mut conn).await?;
            cmd.query_async::<i64>(&mut conn).await
        }
        r => r,
    }
}

/// A pipeline of renewals on `conn` (one answer per item), scripts loaded again first if
/// the server lost them.
async fn pipeline_on(mut conn: Conn, pipe: &redis::Pipeline) -> redis::RedisResult<Vec<redis::RedisResult<i64>>> {
    let out: Vec<redis::RedisResult<i64>> = pipe.query_async(&mut conn).await?;
    if out.iter().any(|r| r.as_ref().is_err_and(is_noscript)) {
        load_scripts(&mut conn).await?;
        return pipe.query_async(&mut conn).await;
    }
    Ok(out)
}

/// `EVALSHA sha nkeys keys… args…`.
fn evalsha(lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(lua.script.get_hash()).arg(keys.len());
    for k in keys {
        cmd.arg(*k);
    }
    for a in args {
        cmd.arg(*a);
    }
    cmd
}

fn is_noscript(e: &RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(ServerErrorKind::NoScript)
}

/// Loads every script: one pipeline on a single server; on a cluster one `SCRIPT LOAD`
/// per script, each of which the cluster client sends to every master (a pipeline would
/// go to one node only).
async fn load_scripts(conn: &mut Conn) -> redis::RedisResult<()> {
    match conn.link {
        Link::Single(_) | Link::Driven(_) => {
            let mut load = redis::pipe();
            for s in SCRIPTS.all() {
                load.cmd("SCRIPT").arg("LOAD").arg(s.code).ignore();
            }
            load.exec_async(conn).await
        }
        Link::Cluster(_) => {
            for s in SCRIPTS.all() {
                redis::cmd("SCRIPT").arg("LOAD").arg(s.code).exec_async(conn).await?;
            }
            Ok(())
        }
    }
}

/// The absolute expiry of a hold with `left` ms to go (`left` -1: no ttl).
fn expiry(now: u64, left: i64) -> u64 {
    match u64::try_from(left) {
        Ok(l) => now.saturating_add(l),
        Err(_) if left == -1 => u64::MAX,
        Err(_) => now,
    }
}

fn items(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) => Some(a),
        _ => None,
    }
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => std::str::from_utf8(bytes(other)?).ok()?.parse().ok(),
    }
}

fn uint(v: &Value) -> Option<u64> {
    int(v).and_then(|i| u64::try_from(i).ok())
}

fn bytes_u64(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn bytes_f64(b: &[u8]) -> Option<f64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// A flat `[k1, v1, k2, v2, …]` reply (HGETALL, ZRANGE WITHSCORES) as byte pairs.
fn pairs(v: &Value) -> Vec<(&[u8], &[u8])> {
    items(v).unwrap_or_default().chunks_exact(2).filter_map(|p| Some((bytes(&p[0])?, bytes(&p[1])?))).collect()
}

/// The live places of a queue (list + expiry zset), in order.
fn waiters(now: u64, queue: &Value, zset: &Value) -> Vec<Waiter> {
    let scores = pairs(zset);
    items(queue)
        .unwrap_or_default()
        .iter()
        .filter_map(|w| {
            let w = bytes(w)?;
            let score = scores.iter().find(|(m, _)| *m == w).and_then(|(_, s)| bytes_f64(s))?;
            (score > now as f64).then(|| Waiter {
                holder: String::from_utf8_lossy(w).into_owned(),
                mode: HoldMode::Exclusive,
                expires_ms: score as u64,
            })
        })
        .collect()
}

/// The hooks of `redlock://`, which runs every step on each of its nodes through these.
impl Redis {
    /// One acquire attempt, with the node's token counter: the token of a grant, or the
    /// counter as the busy node has it (`redlock://` reads the max-register from every
    /// node that answers).
    pub(crate) async fn acquire_counted(&self, key: &Key, req: &Request) -> Result<(Attempt, u64)> {
        self.check_slot(key)?;
        if self.bare_counter(key, &req.holder) {
            return Ok((self.rsem_acquire(key, req).await?, 0));
        }
        let v = self.acquire_reply(key, req).await?;
        let attempt = self.attempt("acquire", &v)?;
        let counter = match attempt {
            Attempt::Granted { token, .. } => token,
            Attempt::Busy { .. } => items(&v).and_then(|r| r.get(2)).and_then(uint).unwrap_or(0),
        };
        Ok((attempt, counter))
    }

    /// The raw reply of the acquire script of `key`'s layout.
    async fn acquire_reply(&self, key: &Key, req: &Request) -> Result<Value> {
        if self.simple && key.family == Family::Lock {
            return self.simple_acquire(key, req).await;
        }
        let n = &self.name(key);
        let lease = req.lease_ms.to_string();
        let enqueue = if req.enqueue { "1" } else { "0" };
        let qttl = req.queue_ttl_ms.to_string();
        Ok(match (&key.family, &req.mode) {
            (Family::Lock, Mode::Exclusive | Mode::Fair) => {
                let k = LockKeys::new(n);
                let fair = if matches!(req.mode, Mode::Fair) { "1" } else { "0" };
                // What only the contended paths read, as one argument (the script's `ARGV[3]`).
                let rest = [fair, enqueue, ":", &qttl, ":", &self.clock.arg(), ":", &k.channel].concat();
                self.eval(
                    &SCRIPTS.lock_acquire,
                    &[
                        k.hash.as_bytes(),
                        k.queue.as_bytes(),
                        k.timeouts.as_bytes(),
                        k.counter.as_bytes(),
                        k.meta.as_bytes(),
                    ],
                    &[req.holder.as_bytes(), lease.as_bytes(), rest.as_bytes()],
                )
                .await?
            }
            (Family::RwLock, Mode::Read { .. } | Mode::Write) => {
                let k = RwKeys::new(n);
                let (side, other) = match &req.mode {
                    Mode::Read { writer } => ("r", writer.as_str()),
                    _ => ("w", state::read_holder_of(&req.holder)),
                };
                self.eval(
                    &SCRIPTS.rw_acquire,
                    &[
                        k.hash.as_bytes(),
                        k.queue.as_bytes(),
                        k.timeouts.as_bytes(),
                        k.counter.as_bytes(),
                        k.meta.as_bytes(),
                    ],
                    &[
                        req.holder.as_bytes(),
                        lease.as_bytes(),
                        side.as_bytes(),
                        other.as_bytes(),
                        enqueue.as_bytes(),
                        qttl.as_bytes(),
                        k.base.as_bytes(),
                        k.channel.as_bytes(),
                    ],
                )
                .await?
            }
            (Family::Semaphore, Mode::Permits { count, limit }) => {
                let k = SemKeys::new(n);
                let holder = keys::canonical_holder(&req.holder);
                self.eval(
                    &SCRIPTS.sem_acquire,
                    &[k.count.as_bytes(), k.permits.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
                    &[
                        holder.as_bytes(),
                        &keys::first_member(&holder),
                        count.to_string().as_bytes(),
                        limit.to_string().as_bytes(),
                        lease.as_bytes(),
                        k.channel.as_bytes(),
                        self.clock.arg().as_bytes(),
                    ],
                )
                .await?
            }
            (family, mode) => {
                return Err(Error::backend(format!("internal error: {mode:?} on a {} key", family.as_str())));
            }
        })
    }

    /// Raises the name's token counter to `token` (a max-register: never lowered) and
    /// records `token` as `holder`'s, if it holds.
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))]
    pub(crate) async fn raise_fence(&self, key: &Key, holder: &str, token: u64) -> Result<()> {
        let n = self.name(key);
        let holder = if key.family == Family::Semaphore { keys::canonical_holder(holder) } else { holder.to_owned() };
        let field = format!("t:{holder}");
        let (counter, meta) = (keys::token_counter(&n), keys::meta(&n));
        let token = token.to_string();
        let (keys, args): (&[&[u8]], &[&[u8]]) = if key.family == Family::Lock && !self.simple {
            // A `Lock` (hash `n`) records its holder's token only when it differs from the counter.
            (
                &[counter.as_bytes(), meta.as_bytes(), n.as_bytes()],
                &[token.as_bytes(), field.as_bytes(), holder.as_bytes()],
            )
        } else {
            (&[counter.as_bytes(), meta.as_bytes()], &[token.as_bytes(), field.as_bytes()])
        };
        self.eval(&SCRIPTS.fence_raise, keys, args).await?;
        Ok(())
    }

    /// One PING on the command connection (Redlock's fan-out yardstick).
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))]
    pub(crate) async fn ping(&self) -> Result<()> {
        let mut conn = self.conn()?;
        redis::cmd("PING").query_async::<String>(&mut conn).await.map(drop).map_err(|e| self.err(e))
    }

    /// The live state of `key` and the server's clock (ms).
    pub(crate) async fn state(&self, key: &Key) -> Result<(KeyState, u64)> {
        self.check_slot(key)?;
        // Leases are absolute times on the server's clock.
        match key.family {
            Family::Lock if self.simple => self.simple_inspect(key).await,
            Family::Lock => self.inspect_lock(key).await,
            Family::RwLock => self.inspect_rw(key).await,
            Family::Semaphore if self.rsemaphore => self.inspect_rsem(key).await,
            Family::Semaphore => self.inspect_sem(key).await,
            Family::Latch => Ok((KeyState { count: self.latch_count(key).await?, ..KeyState::default() }, 0)),
        }
    }
}

#[async_trait]
impl Store for Redis {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        Ok(self.acquire_counted(key, req).await?.0)
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        self.run_renew(self.renew_call(key, holder, lease)?).await
    }

    /// One pipeline per batch: a round trip for up to `renewer::BATCH` leases.
    /// On a cluster, one pipeline per hash slot (a pipeline cannot span slots), all sent
    /// at once.
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let mut cmds = Vec::with_capacity(items.len());
        for (key, holder) in items {
            cmds.push(self.renew_call(key, holder, lease)?);
        }
        if !self.cluster {
            return self.renew_pipeline(cmds).await;
        }
        let mut by_slot: std::collections::BTreeMap<u16, Vec<usize>> = Default::default();
        for (i, (key, _)) in items.iter().enumerate() {
            by_slot.entry(keys::slot(self.name(key).as_bytes())).or_default().push(i);
        }
        let groups: Vec<Vec<usize>> = by_slot.into_values().collect();
        let runs = groups.iter().map(|g| self.renew_pipeline(g.iter().map(|i| cmds[*i].clone()).collect()));
        let answers = futures_util::future::join_all(runs).await;
        let mut out = vec![false; items.len()];
        for (g, answer) in groups.iter().zip(answers) {
            for (i, ok) in g.iter().zip(answer?) {
                out[*i] = ok;
            }
        }
        Ok(out)
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        let n = &self.name(key);
        let c = count_arg(count).to_string();
        let v = match key.family {
            Family::Lock if self.simple => return self.simple_release(key, holder, count).await,
            Family::Semaphore if self.bare_counter(key, holder) => return self.rsem_release(key, holder, count).await,
            Family::Lock => {
                let k = LockKeys::new(n);
                self.eval(
                    &SCRIPTS.lock_release,
                    &[k.hash.as_bytes(), k.queue.as_bytes(), k.timeouts.as_bytes(), k.meta.as_bytes()],
                    &[holder.as_bytes(), c.as_bytes(), k.channel.as_bytes(), self.clock.arg().as_bytes()],
                )
                .await?
            }
            Family::RwLock => {
                let k = RwKeys::new(n);
                self.eval(
                    &SCRIPTS.rw_release,
                    &[k.hash.as_bytes(), k.meta.as_bytes()],
                    &[holder.as_bytes(), c.as_bytes(), k.base.as_bytes(), k.channel.as_bytes()],
                )
                .await?
            }
            Family::Semaphore => {
                let k = SemKeys::new(n);
                let holder = keys::canonical_holder(holder);
                self.eval(
                    &SCRIPTS.sem_release,
                    &[k.count.as_bytes(), k.permits.as_bytes(), k.meta.as_bytes()],
                    &[
                        holder.as_bytes(),
                        &keys::first_member(&holder),
                        c.as_bytes(),
                        k.channel.as_bytes(),
                        self.clock.arg().as_bytes(),
                    ],
                )
                .await?
            }
            Family::Latch => return Err(Error::unsupported("a count-down latch has no holds to release")),
        };
        self.released(&v, count)
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        let n = &self.name(key);
        match key.family {
            // No queue in the simple layout.
            Family::Lock if self.simple => {}
            Family::Lock => {
                let k = LockKeys::new(n);
                self.eval(
                    &SCRIPTS.lock_leave,
                    &[k.queue.as_bytes(), k.timeouts.as_bytes(), k.hash.as_bytes()],
                    &[holder.as_bytes(), k.channel.as_bytes()],
                )
                .await?;
            }
            Family::RwLock => {
                let k = RwKeys::new(n);
                self.eval(
                    &SCRIPTS.rw_leave,
                    &[k.queue.as_bytes(), k.timeouts.as_bytes()],
                    &[holder.as_bytes(), k.channel.as_bytes()],
                )
                .await?;
            }
            // No queues: permits and latches are taken by whoever comes first.
            Family::Semaphore | Family::Latch => {}
        }
        Ok(())
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        // An unlock message `0` on a lock channel wakes one local waiter (one grant is
        // possible); the other channels wake every waiter.
        let n = self.name(key);
        if self.simple && key.family == Family::Lock {
            // baton's own releases publish; the simple clients' releases and expiries are
            // heard through keyspace notifications where the server sends them
            // (`notify-keyspace-events` with `K` and `g`/`x`), else by the re-check.
            let own = self.listen(keys::simple_channel(&n), true).await?;
            let space = self.listen(format!("__keyspace@{}__:{n}", self.db), false).await?;
            return Ok(Box::new(AnyOf(vec![own, space])));
        }
        self.listen(keys::channel(key.family, &n), key.family == Family::Lock).await
    }

    /// A fair-lock waiter listens on its own channel, as `RFairLock` waiters do: a release
    /// wakes the head of the queue only.
    async fn subscribe_for(&self, key: &Key, req: &Request) -> Result<Box<dyn Subscription>> {
        match (&key.family, &req.mode) {
            (Family::Lock, Mode::Fair) if !self.simple => {
                let channel = format!("{}:{}", keys::channel(key.family, &self.name(key)), req.holder);
                self.listen(channel, false).await
            }
            _ => self.subscribe(key).await,
        }
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        // `from_state` reports what is left of each lease at the server's `now`.
        let (s, now) = self.state(key).await?;
        Ok(Inspection::from_state(key, &s, now))
    }

    async fn latch_try_set(&self, key: &Key, count: u64) -> Result<bool> {
        self.check_slot(key)?;
        if i64::try_from(count).is_err() {
            return Err(Error::invalid_argument(format!(
                "latch count {count} is too large for Redis (max {})",
                i64::MAX
            )));
        }
        let n = self.name(key);
        let channel = keys::latch_channel(&n);
        let v =
            self.eval(&SCRIPTS.latch_set, &[n.as_bytes()], &[count.to_string().as_bytes(), channel.as_bytes()]).await?;
        Ok(int(&v) == Some(1))
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        self.check_slot(key)?;
        let n = self.name(key);
        let channel = keys::latch_channel(&n);
        let v = self.eval(&SCRIPTS.latch_down, &[n.as_bytes()], &[channel.as_bytes()]).await?;
        uint(&v).ok_or_else(|| self.reply_err("count_down", &v))
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        let get = redis::cmd("GET").arg(self.name(key)).clone();
        let v: Option<i64> = match get.query_async(&mut self.conn()?).await {
            Err(e) if self.recover(&e).await => get.query_async(&mut self.conn()?).await,
            r => r,
        }
        .map_err(|e| self.err(e))?;
        Ok(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0))
    }

    #[cfg(feature = "driven-link")]
    async fn driven_link(&self) -> Result<Option<driven::DrivenLink>> {
        Redis::driven_link(self).await
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn Diagnostics> {
        Some(self)
    }

    async fn close(&self) {
        self.hub.close();
        self.conn.locked().take();
    }
}

#[cfg(feature = "bench")]
impl Diagnostics for Redis {
    fn round_trips(&self) -> Option<u64> {
        Some(self.trips.load(Ordering::Relaxed))
    }
}
