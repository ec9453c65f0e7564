//! An etcd store URL, parsed once into typed values (as sqlx's `ConnectOptions::from_url`):
//! `etcd://` and `etcds://` (gRPC), `etcd+http://` and `etcd+https://` (the JSON gateway);
//! `user:password@`, a comma-separated `host[:port]` list, and the options `timeout`,
//! `connect_timeout`, `scheme` (queue, txn, v3lock), `ca`, besides the common ones.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::url::COMMON_OPTIONS;
use crate::url::StoreUrl;

/// Options of the etcd schemes besides the common ones.
const OPTIONS: &[&str] = &["timeout", "connect_timeout", "scheme", "ca"];
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_PORT: u16 = 2379;

/// Everything an etcd store URL says.
#[derive(Debug, Clone)]
pub(crate) struct EtcdConfig {
    pub(crate) transport: Protocol,
    pub(crate) tls: Tls,
    /// `host:port` each (`[v6]:port` for IPv6), in the URL's order.
    pub(crate) endpoints: Vec<String>,
    /// `user:password@`: etcd's auth; `None` without a user name.
    pub(crate) auth: Option<Credentials>,
    /// How locks are taken (`?scheme=`).
    pub(crate) scheme: LockScheme,
    /// Each request's bound (`?timeout=`).
    pub(crate) timeout: Duration,
    /// Each connection attempt's bound (`?connect_timeout=`).
    pub(crate) connect_timeout: Duration,
    /// `etcd <url>` with the password redacted: the prefix of the transports' messages.
    pub(crate) store: String,
}

/// Which etcd API the store speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `etcd://`, `etcds://`: gRPC (feature `etcd`).
    Grpc,
    /// `etcd+http://`, `etcd+https://`: the JSON gateway (feature `etcd-http`).
    Http,
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

/// etcd's user and password.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub(crate) user: String,
    pub(crate) password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("user", &self.user).finish_non_exhaustive()
    }
}

/// How an etcd store takes locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockScheme {
    /// etcd's `concurrency.Mutex` queue (the default).
    Queue,
    /// The bare-key try-lock of many Go services.
    Txn,
    /// etcd's lock service (`v3lockpb`).
    V3Lock,
}

impl EtcdConfig {
    /// Parses and checks `url` (no connection is made; the `ca` file is read).
    pub(crate) fn from_url(url: &StoreUrl) -> Result<EtcdConfig> {
        let mut known = COMMON_OPTIONS.to_vec();
        known.extend_from_slice(OPTIONS);
        url.check_options(&known)?;
        if !url.path().is_empty() && url.path() != "/" {
            return Err(Error::invalid_url(format!("etcd URLs take no path: {url}")));
        }
        let scheme = match url.option("scheme") {
            None | Some("queue") => LockScheme::Queue,
            Some("txn") => LockScheme::Txn,
            Some("v3lock") => LockScheme::V3Lock,
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
        let auth = url
            .user()
            .filter(|u| !u.is_empty())
            .map(|u| Credentials { user: u.to_owned(), password: url.password().unwrap_or("").to_owned() });
        let (transport, on) = match url.scheme() {
            "etcd" => (Protocol::Grpc, false),
            "etcds" => (Protocol::Grpc, true),
            "etcd+http" => (Protocol::Http, false),
            "etcd+https" => (Protocol::Http, true),
            s => return Err(Error::invalid_url(format!("`{s}://` is not an etcd scheme: {url}"))),
        };
        let tls = Tls { on, ca: url.ca_pem(on, "etcds:// or etcd+https://")? };
        let store = format!("etcd {url}");
        Ok(EtcdConfig { transport, tls, endpoints, auth, scheme, timeout, connect_timeout, store })
    }

    /// The URL scheme this configuration came from.
    pub(crate) fn url_scheme(&self) -> &'static str {
        match (self.transport, self.tls.on) {
            (Protocol::Grpc, false) => "etcd",
            (Protocol::Grpc, true) => "etcds",
            (Protocol::Http, false) => "etcd+http",
            (Protocol::Http, true) => "etcd+https",
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let p = |u: &str| parse_endpoints(&StoreUrl::parse(u).unwrap());
        assert_eq!(p("etcd://").unwrap(), vec!["127.0.0.1:2379"]);
        assert_eq!(p("etcd://a:1,b,[::1]:3").unwrap(), vec!["a:1", "b:2379", "[::1]:3"]);
        for bad in ["etcd://a:0", "etcd://a:x", "etcd://[::1", "etcd://[::1]x", "etcd://:5"] {
            assert_eq!(p(bad).unwrap_err().kind(), crate::error::ErrorKind::InvalidUrl, "{bad}");
        }
    }

    #[test]
    fn typed_values() {
        let c = EtcdConfig::from_url(&StoreUrl::parse("etcd+http://u:secret@a:1,b?scheme=txn&timeout=2s").unwrap())
            .unwrap();
        assert_eq!(c.transport, Protocol::Http);
        assert!(!c.tls.on);
        assert_eq!(c.endpoints, vec!["a:1", "b:2379"]);
        assert_eq!(c.scheme, LockScheme::Txn);
        assert_eq!(c.timeout, Duration::from_secs(2));
        assert_eq!(c.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(c.auth.as_ref().map(|a| (a.user.as_str(), a.password.as_str())), Some(("u", "secret")));
        assert_eq!(c.url_scheme(), "etcd+http");
        assert!(!format!("{c:?}").contains("secret"));
        let e = EtcdConfig::from_url(&StoreUrl::parse("etcd://u:secret@a?scheme=nope").unwrap()).unwrap_err();
        assert!(!e.message().contains("secret"), "{e}");
        let e = EtcdConfig::from_url(&StoreUrl::parse("etcd://a/x").unwrap()).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidUrl);
    }
}
