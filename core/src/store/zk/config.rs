//! A ZooKeeper store URL: `zk://[user:password@]h1:2181,h2:2181[/chroot]` with the options
//! `session_timeout`, `connect_timeout` and `timeout`, besides the common ones; `zks://`
//! for TLS (ZooKeeper's `secureClientPort`), with `ca` (PEM file; default: the system's
//! bundle) and, for servers that ask for client certificates (`ssl.clientAuth=need`,
//! ZooKeeper's default), `cert` and `key` (PEM files).

use std::time::Duration;

use super::path;
use crate::error::{Error, Result};
use crate::url::{COMMON_OPTIONS, StoreUrl};

const OPTIONS: &[&str] = &["session_timeout", "connect_timeout", "timeout", "ca", "cert", "key"];
/// Where Debian-family systems keep the trusted CAs, for `zks://` without `ca`.
const SYSTEM_CA: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The TLS of a `zks://` URL, as PEM text.
#[derive(Clone)]
pub(crate) struct ZkTls {
    pub(crate) ca: String,
    /// The client's certificate and key.
    pub(crate) identity: Option<(String, String)>,
}
/// Curator's default is 60 s. 30 s is baton's default lease, so a default hold keeps its
/// whole lease (a hold is never counted on past the session timeout after its last
/// renewal), and a crashed Curator holder (no baton lease on its node) frees sooner. The
/// server clamps it to its own `[2, 20] × tickTime`.
const DEFAULT_SESSION: Duration = Duration::from_secs(30);
const DEFAULT_CONNECT: Duration = Duration::from_secs(5);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_PORT: u16 = 2181;

/// Everything a `zk://` URL says.
#[derive(Clone)]
pub(crate) struct ZkConfig {
    /// `host:port,host:port` as the client's connect string takes it.
    pub(crate) hosts: String,
    /// The chroot (`""` for none), a valid znode path.
    pub(crate) chroot: String,
    /// `user:password` for ZooKeeper's `digest` scheme.
    pub(crate) digest: Option<(String, String)>,
    pub(crate) session_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    /// Each request's bound.
    pub(crate) timeout: Duration,
    /// `zks://`'s TLS.
    pub(crate) tls: Option<ZkTls>,
    /// The znode of the directory `?prefix=` puts every name in (`team/` → `/team`), when
    /// the prefix has one in the direct form: its ACL is checked at connect with the
    /// chroot's (`auth.rs`).
    pub(crate) prefix_dir: Option<String>,
    /// The URL with the password redacted, for messages.
    pub(crate) store: String,
}

impl std::fmt::Debug for ZkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkConfig").field("store", &self.store).finish_non_exhaustive()
    }
}

impl ZkConfig {
    pub(crate) fn from_url(url: &StoreUrl) -> Result<ZkConfig> {
        let known: Vec<&str> = COMMON_OPTIONS.iter().chain(OPTIONS).copied().collect();
        url.check_options(&known)?;
        let mut hosts = Vec::new();
        for h in url.host_list() {
            hosts.push(endpoint(url, h)?);
        }
        if hosts.is_empty() {
            return Err(Error::invalid_url(format!("{url}: no host; write zk://host:2181[,host:2181…][/chroot]")));
        }
        let chroot = match url.path() {
            "" | "/" => String::new(),
            p => {
                let p = p.trim_end_matches('/');
                path::check(p).map_err(|e| Error::invalid_url(format!("{url}: chroot {}", e.message())))?;
                p.to_owned()
            }
        };
        let digest = match (url.user(), url.password()) {
            (Some(u), p) if !u.is_empty() => Some((u.to_owned(), p.unwrap_or_default().to_owned())),
            (_, Some(_)) => return Err(Error::invalid_url(format!("{url}: a password needs a user name"))),
            _ => None,
        };
        let tls = tls(url)?;
        let prefix_dir = url
            .option("prefix")
            .and_then(|p| p.rsplit_once('/'))
            .map(|(dir, _)| path::of_name(dir))
            .filter(|p| !p.starts_with("/%/"));
        Ok(ZkConfig {
            hosts: hosts.join(","),
            tls,
            prefix_dir,
            chroot,
            digest,
            session_timeout: url.duration_option("session_timeout", DEFAULT_SESSION)?,
            connect_timeout: url.duration_option("connect_timeout", DEFAULT_CONNECT)?,
            timeout: url.duration_option("timeout", DEFAULT_TIMEOUT)?,
            store: format!("zk {url}"),
        })
    }
}

/// `zks://`'s CA and client identity; `None` for `zk://` (where `cert`/`key`/`ca` are refused).
fn tls(url: &StoreUrl) -> Result<Option<ZkTls>> {
    let on = url.scheme() == "zks";
    let ca = url.ca_pem(on, "zks://")?;
    let pem = |opt: &str| -> Result<Option<String>> {
        let Some(path) = url.option(opt) else { return Ok(None) };
        if !on {
            return Err(Error::invalid_argument(format!("option `{opt}` of {url} applies to zks:// only")));
        }
        std::fs::read_to_string(path).map(Some).map_err(|e| {
            Error::invalid_argument(format!("option `{opt}` of {url}: cannot read the PEM file `{path}`: {e}"))
        })
    };
    let identity = match (pem("cert")?, pem("key")?) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => None,
        _ => return Err(Error::invalid_argument(format!("{url}: `cert` and `key` go together"))),
    };
    if !on {
        return Ok(None);
    }
    let ca = match ca {
        Some(pem) => String::from_utf8_lossy(&pem).into_owned(),
        None => std::fs::read_to_string(SYSTEM_CA).map_err(|e| {
            Error::invalid_argument(format!("{url}: no `ca` option and the system's CAs ({SYSTEM_CA}) unreadable: {e}"))
        })?,
    };
    Ok(Some(ZkTls { ca, identity }))
}

/// `host[:port]` checked, with the default port added.
fn endpoint(url: &StoreUrl, h: &str) -> Result<String> {
    let bad = |why: &str| Error::invalid_url(format!("{url}: host `{h}` {why}"));
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or_else(|| bad("has no closing `]`"))?;
        (format!("[{v6}]"), after.strip_prefix(':'))
    } else {
        match h.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (h.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(bad("has no host name"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| bad("has a bad port"))?,
    };
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(u: &str) -> Result<ZkConfig> {
        ZkConfig::from_url(&StoreUrl::parse(u)?)
    }

    #[test]
    fn parses_hosts_chroot_auth_and_options() {
        let c = cfg("zk://u:secret@a:1,b/app/x?session_timeout=4s").unwrap();
        assert_eq!(c.hosts, "a:1,b:2181");
        assert_eq!(c.chroot, "/app/x");
        assert_eq!(c.digest, Some(("u".into(), "secret".into())));
        assert_eq!(c.session_timeout, Duration::from_secs(4));
        assert!(!c.store.contains("secret") && !format!("{c:?}").contains("secret"));
        assert_eq!(cfg("zk://h/").unwrap().chroot, "");
        assert_eq!(cfg("zk://h?prefix=team/a/").unwrap().prefix_dir.as_deref(), Some("/team/a"));
        assert_eq!(cfg("zk://h?prefix=team-").unwrap().prefix_dir, None);
        assert_eq!(cfg("zk://h?prefix=/x").unwrap().prefix_dir, None, "escaped names have no common directory");
    }

    #[test]
    fn refuses_bad_urls() {
        for bad in [
            "zk://",
            "zk://h:0",
            "zk://h:x",
            "zk://h/a//b",
            "zk://h/a/..",
            "zk://h?nope=1",
            "zk://:pw@h",
            "zk://h?ca=/etc/hostname",
            "zk://h?cert=/etc/hostname&key=/etc/hostname",
            "zks://h?ca=/nonexistent/ca.pem",
            "zks://h?ca=/etc/hostname",
            "zks://h?cert=/etc/hostname",
        ] {
            let e = cfg(bad).err().unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(
                matches!(e.kind(), crate::error::ErrorKind::InvalidUrl | crate::error::ErrorKind::InvalidArgument),
                "{bad}: {e}"
            );
            assert!(!e.to_string().contains("pw"), "{e}");
        }
    }
}
