//! The store URL of the Redis schemes, parsed once into typed values (as sqlx's
//! `PgConnectOptions::parse_from_url`): every later step reads these, never the URL.
//! Bad input fails here, with messages that show the URL redacted.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::url::COMMON_OPTIONS;
use crate::url::StoreUrl;

/// Options of every Redis scheme besides the common ones.
const OPTIONS: &[&str] = &[
    "timeout",
    "connect_timeout",
    "names",
    "scheme",
    "ca",
    "semaphore",
    "clock",
    "wait_replicas",
    "wait_timeout",
    "free",
];
/// Options of the sentinel schemes only.
const SENTINEL_OPTIONS: &[&str] = &["sentinel_user", "sentinel_password"];
/// How long one command may take before it fails with `Connection` (`?timeout=`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting may take (`?connect_timeout=`).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_PORT: u16 = 6379;
/// How long a grant waits for its replicas (`?wait_timeout=`): Redisson's default for its
/// synced-replicas check.
const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(1);

/// Where the servers are.
#[derive(Clone, Debug)]
pub(crate) enum Topology {
    /// `redis://host:port`: one server.
    Single { host: String, port: u16 },
    /// `redis+cluster://h1,h2,…`: the nodes of a Redis Cluster to start from.
    Cluster { nodes: Vec<(String, u16)> },
    /// `redis+sentinel://s1,s2/master`: the sentinels, the master's name, and the
    /// sentinels' own login (`?sentinel_user=`, `?sentinel_password=`).
    Sentinel { sentinels: Vec<(String, u16)>, master: String, user: Option<String>, password: Option<String> },
}

/// `?scheme=`: the data layout of `Lock` and `FairLock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockLayout {
    /// Redisson's `RLock` / `RFairLock` hash (the default).
    Redisson,
    /// `SET name token NX PX ttl`: redis-py's `Lock`, redsync and node-redlock.
    Simple,
}

/// `?semaphore=`: the data layout of `Semaphore`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SemLayout {
    /// `RPermitExpirableSemaphore`'s leased permits (`leased`, the default).
    Leased,
    /// `RSemaphore`'s bare counter (`rsemaphore`).
    Bare,
}

/// `?names=`: whether each kind of primitive gets a prefix (`keys::redis_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Names {
    Typed,
    Bare,
}

/// `?clock=`: whose clock scores fair-lock queue places (`redisson_lock_timeout:{N}`) and
/// permit expiries (`{N}:timeout`). `Server` (the default): the server's `TIME`, one clock
/// for every client, so leases and queue places mean the same to every client whatever
/// their clocks say. `Client`: the caller's wall clock in ms — Redisson's exact form
/// (`RFairLock` and `RPermitExpirableSemaphore` score with `System.currentTimeMillis()`),
/// for deployments that mix in Redisson clients whose clocks disagree with the server's.
/// The gap: a client whose clock runs ahead purges other clients' places and permits
/// early, one running behind keeps them late.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    Server,
    Client,
}

impl Clock {
    /// The scripts' clock argument: empty for the server's `TIME`, else this machine's
    /// wall clock in ms since the epoch (what Redisson's `System.currentTimeMillis()`
    /// sends).
    pub(crate) fn arg(self) -> String {
        match self {
            Clock::Server => String::new(),
            // A clock before 1970 is no clock: 0 purges nothing and scores from 0.
            Clock::Client => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()).to_string(),
        }
    }
}

/// `?free=`: what a name keeps once nothing holds it. `Drop` (the default): nothing — the
/// release that frees it removes its fencing counter (`redisson_lock_token:{N}`) when the
/// counter stands below the server's clock in µs (every later token is at least that
/// clock), and a semaphore's count and side hash once every permit is back, so names used
/// once leave no keys behind. `Keep`: they stay, for deployments that share names with
/// Redisson's `RFencedLock` (its `INCR` would start again at 1, below baton's tokens) or
/// with `RSemaphore`/`RPermitExpirableSemaphore` clients that expect the count to be there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Free {
    Drop,
    Keep,
}

/// `?wait_replicas=N&wait_timeout=D`: every grant is followed by `WAIT N D` on the
/// connection that wrote it, so a failover to a replica cannot lose an acknowledged grant
/// silently (Redisson's synced-replicas check); fewer than `replicas` confirming within
/// `timeout` gives the grant back and fails it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitReplicas {
    pub(crate) replicas: u32,
    pub(crate) timeout: Duration,
}

/// A Redis store URL, parsed.
#[derive(Clone)]
pub(crate) struct RedisConfig {
    pub(crate) topology: Topology,
    /// `rediss…`: TLS, trusting the system's roots or `ca`.
    pub(crate) tls: bool,
    /// `?ca=`: the PEM roots to trust instead of the system's.
    pub(crate) ca: Option<Vec<u8>>,
    pub(crate) db: i64,
    pub(crate) user: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) names: Names,
    pub(crate) lock: LockLayout,
    pub(crate) semaphore: SemLayout,
    pub(crate) clock: Clock,
    pub(crate) free: Free,
    pub(crate) wait: Option<WaitReplicas>,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    /// `Redis <url>`, password redacted: the prefix of every message.
    pub(crate) store: String,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig").field("store", &self.store).finish_non_exhaustive()
    }
}

impl RedisConfig {
    /// Parses every part of `url`, in the order the messages of bad input expect.
    pub(crate) fn from_url(url: &StoreUrl) -> Result<RedisConfig> {
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
        url.check_options(&[COMMON_OPTIONS, OPTIONS, SENTINEL_OPTIONS].concat())?;
        let ca = url.ca_pem(tls, "rediss://, rediss+cluster:// or rediss+sentinel://")?;
        let on_sentinel = url.scheme().ends_with("+sentinel");
        if let Some(o) = SENTINEL_OPTIONS.iter().find(|o| url.option(o).is_some())
            && !on_sentinel
        {
            return Err(Error::invalid_argument(format!(
                "option `{o}` of {url} applies to Redis Sentinel only: use redis+sentinel:// or rediss+sentinel://"
            )));
        }
        let timeout = url.duration_option("timeout", DEFAULT_TIMEOUT)?;
        let names =
            choice(url, "names", "`typed` (the default) or `bare`", &[("typed", Names::Typed), ("bare", Names::Bare)])?;
        let lock = choice(
            url,
            "scheme",
            "`redisson` (the default) or `simple`",
            &[("redisson", LockLayout::Redisson), ("simple", LockLayout::Simple)],
        )?;
        let semaphore = choice(
            url,
            "semaphore",
            "`leased` (the default) or `rsemaphore`",
            &[("leased", SemLayout::Leased), ("rsemaphore", SemLayout::Bare)],
        )?;
        let clock = choice(
            url,
            "clock",
            "`server` (the default: the server's TIME) or `client` (Redisson's client-clock scores)",
            &[("server", Clock::Server), ("client", Clock::Client)],
        )?;
        let free = choice(
            url,
            "free",
            "`drop` (the default: a free name's keys go) or `keep` (its fencing counter and semaphore count stay)",
            &[("drop", Free::Drop), ("keep", Free::Keep)],
        )?;
        let connect_timeout = url.duration_option("connect_timeout", DEFAULT_CONNECT_TIMEOUT)?;
        let wait = parse_wait(url)?;
        if let Some(w) = wait
            && w.timeout >= timeout
        {
            // WAIT holds the connection that long; the command timeout must outlast it.
            return Err(Error::invalid_argument(format!(
                "option `wait_timeout` of {url} must be shorter than `timeout` ({timeout:?}): WAIT holds the \
                 connection until replicas confirm"
            )));
        }
        let sentinel_of = on_sentinel.then(|| parse_sentinel_path(url)).transpose()?;
        let topology = if cluster || sentinel_of.is_some() {
            let hosts = parse_hosts(url)?;
            match sentinel_of.as_ref() {
                None => Topology::Cluster { nodes: hosts },
                Some((master, _)) => Topology::Sentinel {
                    sentinels: hosts,
                    master: master.clone(),
                    user: url.option("sentinel_user").filter(|u| !u.is_empty()).map(str::to_owned),
                    password: url.option("sentinel_password").map(str::to_owned),
                },
            }
        } else {
            let (host, port) = parse_host(url)?;
            Topology::Single { host, port }
        };
        let db = match &sentinel_of {
            Some((_, db)) => *db,
            None => parse_db(url)?,
        };
        if cluster && db != 0 {
            return Err(Error::invalid_url(format!("{url}: Redis Cluster has database 0 only")));
        }
        Ok(RedisConfig {
            topology,
            tls,
            ca,
            db,
            user: url.user().filter(|u| !u.is_empty()).map(str::to_owned),
            password: url.password().map(str::to_owned),
            names,
            lock,
            semaphore,
            clock,
            free,
            wait,
            timeout,
            connect_timeout,
            store: format!("Redis {url}"),
        })
    }
}

/// `?wait_replicas=` (a whole number ≥ 1) and `?wait_timeout=` (only with it).
fn parse_wait(url: &StoreUrl) -> Result<Option<WaitReplicas>> {
    let Some(n) = url.option("wait_replicas") else {
        if url.option("wait_timeout").is_some() {
            return Err(Error::invalid_argument(format!(
                "option `wait_timeout` of {url} goes with `wait_replicas` (how many replicas a grant waits for)"
            )));
        }
        return Ok(None);
    };
    let replicas = n.parse::<u32>().ok().filter(|n| (1..=1000).contains(n)).ok_or_else(|| {
        Error::invalid_argument(format!(
            "option `wait_replicas` of {url}: `{n}` is not a number of replicas from 1 to 1000"
        ))
    })?;
    // WAIT's 0 means "block forever": the duration check refuses zero.
    let timeout = url.duration_option("wait_timeout", DEFAULT_WAIT_TIMEOUT)?;
    Ok(Some(WaitReplicas { replicas, timeout }))
}

/// The value of option `name` among `values` (the first one when absent).
fn choice<T: Copy>(url: &StoreUrl, name: &str, expected: &str, values: &[(&str, T)]) -> Result<T> {
    match url.option(name) {
        None => Ok(values[0].1),
        Some(v) => values
            .iter()
            .find(|(s, _)| *s == v)
            .map(|(_, t)| *t)
            .ok_or_else(|| Error::invalid_argument(format!("option `{name}` of {url} is {expected}, not `{v}`"))),
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

/// Every `host[:port]` of a `redis+cluster://` or `redis+sentinel://` URL (at least one).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RedisConfig> {
        RedisConfig::from_url(&StoreUrl::parse(s)?)
    }

    #[test]
    fn options_become_typed_values() {
        let c = parse("redis://u:pw@h:7000/2?scheme=simple&semaphore=rsemaphore&clock=client&names=bare").unwrap();
        assert!(matches!(c.topology, Topology::Single { ref host, port: 7000 } if host == "h"));
        assert_eq!((c.db, c.user.as_deref(), c.password.as_deref()), (2, Some("u"), Some("pw")));
        assert_eq!(
            (c.lock, c.semaphore, c.clock, c.names),
            (LockLayout::Simple, SemLayout::Bare, Clock::Client, Names::Bare)
        );
        assert!(!c.store.contains("pw"));
        let c = parse("rediss+sentinel://s1,s2:26380/mymaster/3?sentinel_user=su&sentinel_password=sp").unwrap();
        assert!(c.tls);
        assert_eq!(c.db, 3);
        let Topology::Sentinel { sentinels, master, user, password } = c.topology else { panic!("not sentinel") };
        assert_eq!(sentinels, [("s1".to_owned(), 6379), ("s2".to_owned(), 26380)]);
        assert_eq!((master.as_str(), user.as_deref(), password.as_deref()), ("mymaster", Some("su"), Some("sp")));
        let c = parse("redis+cluster://a:1,[::1]:2").unwrap();
        assert!(matches!(c.topology, Topology::Cluster { ref nodes } if nodes.len() == 2 && nodes[1].0 == "::1"));
    }

    #[test]
    fn bad_input_names_the_option_and_hides_the_password() {
        let msg = |s: &str| parse(s).unwrap_err().to_string();
        assert!(msg("redis://:secret@h?scheme=odd").contains("option `scheme`"));
        assert!(!msg("redis://:secret@h?scheme=odd").contains("secret"));
        assert!(msg("redis://h?sentinel_user=x").contains("applies to Redis Sentinel only"));
        assert!(msg("redis+cluster://h/1").contains("database 0 only"));
        assert!(msg("redis+sentinel://h").contains("master's name"));
        assert!(msg("redis://h:0").contains("bad host or port"));
        assert!(msg("redis://a,b").contains("several hosts"));
        assert!(msg("memcache://h").contains("not supported"));
    }

    #[test]
    fn wait_replicas_takes_a_count_and_an_optional_timeout() {
        assert_eq!(parse("redis://h").unwrap().wait, None);
        let w = parse("redis://h?wait_replicas=2").unwrap().wait.unwrap();
        assert_eq!((w.replicas, w.timeout), (2, DEFAULT_WAIT_TIMEOUT));
        let w = parse("redis+sentinel://s/m?wait_replicas=1&wait_timeout=250ms").unwrap().wait.unwrap();
        assert_eq!((w.replicas, w.timeout), (1, Duration::from_millis(250)));
        for bad in ["0", "-1", "x", "1.5", "1001", ""] {
            let e = parse(&format!("redis://:secret@h?wait_replicas={bad}")).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument, "{bad}: {e}");
            assert!(e.to_string().contains("wait_replicas") && !e.to_string().contains("secret"), "{e}");
        }
        for bad in ["0s", "-1s", "soon"] {
            let e = parse(&format!("redis://h?wait_replicas=1&wait_timeout={bad}")).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument, "{bad}: {e}");
            assert!(e.to_string().contains("wait_timeout"), "{e}");
        }
        assert!(parse("redis://h?wait_timeout=1s").unwrap_err().to_string().contains("goes with `wait_replicas`"));
        let e = parse("redis://h?timeout=1s&wait_replicas=1&wait_timeout=1s").unwrap_err();
        assert!(e.to_string().contains("shorter than `timeout`"), "{e}");
    }
}
