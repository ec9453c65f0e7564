//! The command path of one store: a multiplexed, reconnecting connection (one server, a
//! Cluster, or the master the sentinels name), every request counted (`round_trips`);
//! scripts run by SHA and sent again on `NOSCRIPT`; on `redis+sentinel://` a command that
//! fails as a failover makes it fail is tried once more on the new master. Wake-ups come
//! through the subscriber connection of `pubsub`.

mod cluster;
// Without `driven-link` only the tasks' link is used: the event loop's and the threads'
// API is not exported (the clippy pass with every feature checks it).
#[cfg_attr(not(feature = "driven-link"), allow(dead_code, unreachable_pub))]
pub(crate) mod driven;
mod pubsub;
mod sentinel;
mod single;
mod tls;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ConnectionInfo, ProtocolVersion, RedisConnectionInfo, RedisError, ServerErrorKind, Value};

use self::pubsub::{Channels, Hub};
use self::tls::Transport;
use super::config::{RedisConfig, Topology};
use super::script::{Lua, Scripts};
use crate::error::{Error, Result};
use crate::store::Subscription;
use crate::sync::LockExt;

/// The command connection, counting the requests sent on it (`Diagnostics::round_trips`).
#[derive(Clone)]
struct Counted {
    link: Link,
    trips: Arc<AtomicU64>,
}

/// One server (multiplexed, reconnecting) or a Redis Cluster (routed by each script's
/// first key; every key of one primitive shares its slot).
#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// A link its caller drives: an event loop's, a blocked thread's own, or the
    /// store's tasks' (`driven`).
    Driven(driven::DrivenLink),
}

impl redis::aio::ConnectionLike for Counted {
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

/// How this store opens connections (commands, subscriber, a node or master it moves
/// to): one transport, one login, one set of manager settings.
struct Dial {
    transport: Transport,
    settings: RedisConnectionInfo,
    config: ConnectionManagerConfig,
    sub_config: ConnectionManagerConfig,
    connect_timeout: Duration,
    store: String,
}

impl Dial {
    fn client(&self, info: ConnectionInfo) -> Result<redis::Client> {
        self.transport.client(info, &self.store)
    }

    /// A subscriber connection to `info`'s server (RESP3 push messages), connected on
    /// first use.
    fn subscriber(&self, info: ConnectionInfo) -> Result<ConnectionManager> {
        let client =
            self.client(info.set_redis_settings(self.settings.clone().set_protocol(ProtocolVersion::RESP3)))?;
        ConnectionManager::new_lazy_with_config(client, self.sub_config.clone()).map_err(|e| error(&self.store, e))
    }

    fn cannot(&self, e: RedisError) -> Error {
        if let Some(refused) = refused_login(&self.store, &e) {
            return refused.with_source(e);
        }
        Error::connection(format!("cannot connect to {}: {e}", self.store)).with_source(e)
    }
}

/// What the topology adds: how to move after a failure.
enum Topo {
    Single,
    Cluster(cluster::Rehome),
    Sentinel(Box<sentinel::Sentinel>),
}

/// The connections of one store and the command path over them.
pub(crate) struct Conn {
    slot: Mutex<Option<Counted>>,
    hub: Arc<Hub>,
    dial: Dial,
    topo: Topo,
    /// Requests sent on the command connection (every `Counted` of this store shares it).
    trips: Arc<AtomicU64>,
    /// What to load again when the server lost its scripts.
    scripts: Scripts,
    driven: driven::Home,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("store", &self.dial.store).finish_non_exhaustive()
    }
}

impl Conn {
    /// Connects as `cfg` says. `lazy`: the command connection connects on first use and
    /// the scripts load on the first `NOSCRIPT` (a `redlock://` node that is down when the
    /// client starts must not stop it).
    pub(crate) async fn open(cfg: &RedisConfig, lazy: bool, scripts: Scripts) -> Result<Conn> {
        let mut settings = RedisConnectionInfo::default().set_db(cfg.db);
        if let Some(user) = &cfg.user {
            settings = settings.set_username(user);
        }
        if let Some(password) = &cfg.password {
            settings = settings.set_password(password);
        }
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(cfg.timeout))
            .set_connection_timeout(Some(cfg.connect_timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(1));
        let channels = Arc::new(Channels::default());
        let sub_config = config
            .clone()
            .set_push_sender(pubsub::push_handler(Arc::downgrade(&channels)))
            .set_automatic_resubscription();
        let dial = Dial {
            transport: Transport::new(cfg.tls, cfg.ca.clone()),
            settings,
            config,
            sub_config,
            connect_timeout: cfg.connect_timeout,
            store: cfg.store.clone(),
        };
        let (link, sub_at, topo) = match &cfg.topology {
            Topology::Single { host, port } => single::connect(&dial, host, *port, lazy).await?,
            Topology::Cluster { nodes } => cluster::connect(&dial, cfg, nodes).await?,
            Topology::Sentinel { sentinels, master, user, password } => {
                sentinel::connect(&dial, cfg, sentinels, master, (user.as_deref(), password.as_deref())).await?
            }
        };
        let trips = Arc::new(AtomicU64::new(0));
        let mut counted = Counted { link, trips: trips.clone() };
        // Loaded once; a server that lost them (restart, SCRIPT FLUSH) gets them again on
        // the first NOSCRIPT.
        if !lazy {
            load_scripts(&mut counted, scripts).await.map_err(|e| error(&dial.store, e))?;
        }
        let sub = dial.subscriber(sub_at)?;
        let hub = Arc::new(Hub::new(sub, channels, crate::rt::Rt::current(), cfg.timeout, dial.store.clone()));
        Ok(Conn {
            slot: Mutex::new(Some(counted)),
            hub,
            dial,
            topo,
            trips,
            scripts,
            driven: driven::Home::new(cfg, lazy),
        })
    }

    /// `Redis <url>`, redacted: the prefix of every message.
    pub(crate) fn store(&self) -> &str {
        &self.dial.store
    }

    /// Requests sent so far.
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) fn round_trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    fn counted(&self) -> Result<Counted> {
        if let Some(l) = self.driven.here(&self.dial.store) {
            return Ok(Counted { link: Link::Driven(l), trips: self.trips.clone() });
        }
        self.slot.locked().clone().ok_or_else(Error::closed)
    }

    pub(crate) fn err(&self, e: RedisError) -> Error {
        error(&self.dial.store, e)
    }

    /// A reply no script of this version gives.
    pub(crate) fn unexpected(&self, what: &str, v: &Value) -> Error {
        super::reply::unexpected(&self.dial.store, what, v)
    }

    /// After `e`, on `redis+sentinel://`: asks the sentinels where the master is and, if
    /// it moved, moves both connections there. True when the caller should try again.
    async fn recover(&self, e: &RedisError) -> bool {
        failover_error(e) && self.follow_master().await
    }

    /// Subscribes through the hub; when its connection fails, moves it first (a cluster:
    /// to another node that answers; Sentinel: to the current master) and tries once more.
    pub(crate) async fn listen(&self, channel: String, wake_one: bool) -> Result<Box<dyn Subscription>> {
        match self.hub.subscribe(channel.clone(), wake_one).await {
            Err(e)
                if e.kind() == crate::error::ErrorKind::Connection
                    && (self.rehome().await || self.follow_master().await) =>
            {
                self.hub.subscribe(channel, wake_one).await
            }
            r => r,
        }
    }

    /// Runs `lua` by SHA, loading it again if the server lost it; on `redis+sentinel://`
    /// once more on the new master after a failover.
    pub(crate) async fn eval(&self, lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        match eval_on(self.counted()?, lua, keys, args).await {
            Err(e) if self.recover(&e).await => {
                eval_on(self.counted()?, lua, keys, args).await.map_err(|e| self.err(e))
            }
            r => r.map_err(|e| self.err(e)),
        }
    }

    /// One plain command, tried once more after a failover.
    pub(crate) async fn query<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> Result<T> {
        match cmd.query_async(&mut self.counted()?).await {
            Err(e) if self.recover(&e).await => cmd.query_async(&mut self.counted()?).await,
            r => r,
        }
        .map_err(|e| self.err(e))
    }

    /// One PING on the command connection (Redlock's fan-out yardstick).
    #[cfg_attr(not(all(feature = "redlock", feature = "bench")), allow(dead_code))]
    pub(crate) async fn ping(&self) -> Result<()> {
        redis::cmd("PING").query_async::<String>(&mut self.counted()?).await.map(drop).map_err(|e| self.err(e))
    }

    /// One renewal (a script call answering 1 or 0).
    pub(crate) async fn renew(&self, cmd: Cmd) -> Result<bool> {
        let out = match renew_on(self.counted()?, &cmd, self.scripts).await {
            Err(e) if self.recover(&e).await => renew_on(self.counted()?, &cmd, self.scripts).await,
            r => r,
        };
        out.map(|v| v == 1).map_err(|e| self.err(e))
    }

    /// Renewals as one pipeline (one round trip).
    async fn renew_pipeline(&self, cmds: Vec<Cmd>) -> Result<Vec<bool>> {
        let mut pipe = redis::pipe();
        for cmd in cmds {
            pipe.add_command(cmd);
        }
        pipe.ignore_errors();
        let mut out = pipeline_on(self.counted()?, &pipe, self.scripts).await;
        // A failover answers the whole pipeline or each item (`READONLY`): move and retry.
        let failed = match &out {
            Err(e) => Some(e),
            Ok(items) => items.iter().find_map(|r| r.as_ref().err().filter(|e| failover_error(e))),
        };
        if let Some(e) = failed
            && self.recover(e).await
        {
            out = pipeline_on(self.counted()?, &pipe, self.scripts).await;
        }
        let out = out.map_err(|e| self.err(e))?;
        // An item refused as a failover refuses it (`READONLY`, `LOADING`: the new master
        // is not ready yet) says nothing about the lease: the whole batch failed, and the
        // watchdog tries again within the lease.
        if let Some(e) = out.iter().find_map(|r| r.as_ref().err().filter(|e| failover_error(e))) {
            return Err(Error::connection(format!("{}: {e}", self.dial.store)));
        }
        // An item the server refused otherwise (a name reused by another kind of object)
        // is lost; the others stand.
        Ok(out.into_iter().map(|r| matches!(r, Ok(1))).collect())
    }

    /// A link for the caller's event loop to drive (`driven`): on a plain `redis://`
    /// server only (None for TLS, a cluster or sentinels, which keep the usual path).
    #[cfg(feature = "driven-link")]
    pub(crate) async fn driven_link(&self) -> Result<Option<driven::DrivenLink>> {
        self.driven.open(&self.dial.store).await
    }

    /// Wakes every waiter and drops both connections.
    pub(crate) fn close(&self) {
        self.hub.close();
        self.slot.locked().take();
        self.driven.close();
    }
}

/// Whether `e` is how a command fails across a failover.
fn failover_error(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || matches!(e.code(), Some("READONLY" | "LOADING" | "MASTERDOWN"))
}

/// Maps a driver error: unreachable, dropped or timed-out connections are `Connection`,
/// the rest `Backend`. The message never holds the URL's password (the driver's errors
/// do not carry it, and `store` is redacted).
fn error(store: &str, e: RedisError) -> Error {
    // A refused password is `Connection` on every store (one exit code for it in `baton run`).
    if let Some(refused) = refused_login(store, &e) {
        return refused.with_source(e);
    }
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

/// A refused login, on whichever path met it (the driver's `AUTH` at connect, a command
/// or a pipeline of them on a connection that never logged in, a sentinel): the one short
/// `Connection` error of it, never the driver's whole answer (a pipeline of script loads
/// refused with `NOAUTH` prints every item). `None` for any other error.
pub(crate) fn refused_login(store: &str, e: &RedisError) -> Option<Error> {
    let failed = e.kind() == redis::ErrorKind::AuthenticationFailed;
    refused_login_said(store, &e.to_string(), failed)
}

/// As [`refused_login`], from the server's words (`said`: `WRONGPASS …`, `NOAUTH …`, or a
/// driver's message about them); `failed`: the driver already knows it is a refused login.
pub(crate) fn refused_login_said(store: &str, said: &str, failed: bool) -> Option<Error> {
    // `Protocol error: unauthenticated multibulk length`: a server with a password drops a
    // connection that never logged in and sends a long command (a script call).
    let no_password =
        said.contains("NOAUTH") || said.contains("Authentication required") || said.contains("unauthenticated");
    let wrong = said.contains("WRONGPASS")
        || said.contains("invalid username-password pair")
        || said.contains("Password authentication failed");
    if no_password && !wrong {
        let sentinel = if store.contains("+sentinel://") { " (the sentinels': ?sentinel_password=)" } else { "" };
        Some(Error::connection(format!("{store}: Redis requires a password (NOAUTH); the URL gives none{sentinel}")))
    } else if wrong || failed {
        Some(Error::connection(format!("{store}: Redis refused the credentials (WRONGPASS: wrong password or user)")))
    } else {
        None
    }
}

/// `lua` by SHA on `conn`; if the server lost it, by its source (`EVAL`, which also caches
/// it again: a `SCRIPT LOAD` then `EVALSHA` could meet another `SCRIPT FLUSH` between
/// the two).
async fn eval_on(mut conn: Counted, lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> redis::RedisResult<Value> {
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
async fn renew_on(mut conn: Counted, cmd: &Cmd, scripts: Scripts) -> redis::RedisResult<i64> {
    match cmd.query_async::<i64>(&mut conn).await {
        Err(e) if is_noscript(&e) => {
            load_scripts(&mut conn, scripts).await?;
            cmd.query_async::<i64>(&mut conn).await
        }
        r => r,
    }
}

/// A pipeline of renewals on `conn` (one answer per item), scripts loaded again first if
/// the server lost them.
async fn pipeline_on(
    mut conn: Counted,
    pipe: &redis::Pipeline,
    scripts: Scripts,
) -> redis::RedisResult<Vec<redis::RedisResult<i64>>> {
    let out: Vec<redis::RedisResult<i64>> = pipe.query_async(&mut conn).await?;
    if out.iter().any(|r| r.as_ref().is_err_and(is_noscript)) {
        load_scripts(&mut conn, scripts).await?;
        return pipe.query_async(&mut conn).await;
    }
    Ok(out)
}

/// `EVALSHA sha nkeys keys… args…`.
pub(crate) fn evalsha(lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(lua.sha()).arg(keys.len());
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
async fn load_scripts(conn: &mut Counted, scripts: Scripts) -> redis::RedisResult<()> {
    if let Link::Cluster(_) = conn.link {
        for s in scripts {
            redis::cmd("SCRIPT").arg("LOAD").arg(s.code).exec_async(conn).await?;
        }
        return Ok(());
    }
    let mut load = redis::pipe();
    for s in scripts {
        load.cmd("SCRIPT").arg("LOAD").arg(s.code).ignore();
    }
    load.exec_async(conn).await
}
