//! One ZooKeeper session per client, opened again after it expires; every request bounded
//! by `?timeout=`; ZooKeeper's errors mapped to baton's kinds; the server's clock, as the
//! `mtime` of the nodes this client writes tells it.
//!
//! Connection loss (ZooKeeper's "suspended") fails the calls made meanwhile with
//! `Connection` and keeps the session: its ephemeral nodes stay while the client
//! reconnects within the session timeout. Session expiry deletes every ephemeral node of
//! the session on the server: each hold finds its node gone at its next renewal and fires
//! its lost signal, and the next call opens a new session.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zookeeper_client as zk;

use super::auth;
use super::config::ZkConfig;
use super::mine::Mines;
use crate::error::{Error, Result};

/// The session of one client.
pub(crate) struct Conn {
    pub(crate) cfg: ZkConfig,
    cur: tokio::sync::Mutex<Option<zk::Client>>,
    /// Server clock minus local clock, in ms, as last measured.
    offset: AtomicI64,
    /// The session timeout the server granted, in ms.
    session_ms: AtomicU64,
    closed: AtomicBool,
    /// The holder cache: the nodes this client wrote, as it wrote them.
    pub(crate) mine: Mines,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("store", &self.cfg.store).finish_non_exhaustive()
    }
}

/// Local wall clock in ms since the epoch.
fn local_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Conn {
    pub(crate) async fn open(cfg: ZkConfig) -> Result<Conn> {
        let c = Conn {
            cfg,
            cur: tokio::sync::Mutex::new(None),
            offset: AtomicI64::new(0),
            session_ms: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            mine: Mines::default(),
        };
        c.client().await?;
        Ok(c)
    }

    /// The current session, or a new one when there is none or it ended.
    pub(crate) async fn client(&self) -> Result<zk::Client> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::closed());
        }
        let mut cur = self.cur.lock().await;
        if let Some(c) = cur.as_ref().filter(|c| !c.state().is_terminated()) {
            return Ok(c.clone());
        }
        let c = self.connect().await?;
        self.session_ms.store(u64::try_from(c.session_timeout().as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
        *cur = Some(c.clone());
        Ok(c)
    }

    async fn connect(&self) -> Result<zk::Client> {
        let cfg = &self.cfg;
        let mut conn = zk::Client::connector()
            .with_session_timeout(cfg.session_timeout)
            .with_connection_timeout(cfg.connect_timeout);
        if let Some((u, p)) = &cfg.digest {
            conn = conn.with_auth("digest", format!("{u}:{p}").as_bytes());
        }
        // `connect_timeout` per server of the URL, in turn: the client cycles through them
        // (a closed port answers at once, a silent one takes the connect timeout) and would
        // go on for the whole session timeout.
        let servers = u32::try_from(cfg.hosts.split(',').count()).unwrap_or(u32::MAX).max(1);
        let bound = cfg.connect_timeout.saturating_mul(servers);
        let connecting = match &cfg.tls {
            Some(tls) => {
                // rustls on the ring provider, as the Redis store's TLS: once per process,
                // unless the application installed a provider of its own.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let bad = |e: zk::Error| Error::invalid_argument(format!("{}: TLS: {e}", cfg.store));
                let mut opts = zk::TlsOptions::new().with_pem_ca(&tls.ca).map_err(bad)?;
                if let Some((cert, key)) = &tls.identity {
                    opts = opts.with_pem_identity(cert, key).map_err(bad)?;
                }
                futures_util::future::Either::Left(conn.with_tls(opts).secure_connect(&cfg.hosts))
            }
            None => futures_util::future::Either::Right(conn.connect(&cfg.hosts)),
        };
        let c = match tokio::time::timeout(bound, connecting).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(self.err("connect", e)),
            Err(_) => {
                return Err(Error::connection(format!(
                    "{}: no ZooKeeper session from {} within {bound:?} (connect_timeout {:?} per server)",
                    cfg.store, cfg.hosts, cfg.connect_timeout
                )));
            }
        };
        let c = if cfg.chroot.is_empty() {
            c
        } else {
            // The chroot is made if missing (as Curator's namespace), then the client moves
            // into it. Another identity's create is refused even where the chroot exists
            // (the parent's ACL is checked first): its ACL, read next, tells.
            let opts = zk::CreateMode::Persistent.with_acls(self.acls());
            match self.bounded(c.mkdir(&cfg.chroot, &opts)).await {
                Ok(()) | Err(zk::Error::NodeExists | zk::Error::NoAuth) => {}
                Err(e) => return Err(self.err("create the chroot", e)),
            }
            c.chroot(cfg.chroot.as_str())
                .map_err(|_| Error::invalid_url(format!("{}: bad chroot `{}`", cfg.store, cfg.chroot)))?
        };
        self.check_access(&c).await?;
        Ok(c)
    }

    /// Refuses credentials (or their absence) that the ACL of the chroot (the root without
    /// one) or of the prefix's directory shuts out (`auth.rs`): a wrong digest password is
    /// another identity, which would otherwise see free names work and the owner's fail.
    async fn check_access(&self, c: &zk::Client) -> Result<()> {
        let me = self.cfg.digest.as_ref().map(|(u, p)| auth::digest_id(u, p));
        for node in std::iter::once("/").chain(self.cfg.prefix_dir.as_deref()) {
            let shown = match (self.cfg.chroot.as_str(), node) {
                ("", n) => n.to_owned(),
                (r, "/") => r.to_owned(),
                (r, n) => format!("{r}{n}"),
            };
            match self.bounded(c.get_acl(node)).await {
                Ok((acls, _)) => {
                    if let Some(why) = auth::refusal(&acls, me.as_deref(), &shown) {
                        return Err(self.refused(&why));
                    }
                }
                // The prefix's directory is made with the first name in it.
                Err(zk::Error::NoNode) if node != "/" => {}
                // The chroot is missing: its create above was refused.
                Err(zk::Error::NoNode) => return Err(self.err("create the chroot", zk::Error::NoAuth)),
                Err(e) => return Err(self.err(&format!("read the ACL of `{shown}`"), e)),
            }
        }
        Ok(())
    }

    /// ZooKeeper's refusal of this client's identity, as `Connection` (every store's refused
    /// login): names the user, never the password.
    fn refused(&self, why: &str) -> Error {
        Error::connection(match &self.cfg.digest {
            Some((u, _)) => format!("{}: ZooKeeper refused the credentials for user `{u}`: {why}", self.cfg.store),
            None => format!(
                "{}: ZooKeeper refused access without credentials: {why}; give them in the URL (zk://user:password@…)",
                self.cfg.store
            ),
        })
    }

    /// The ACL of every node baton creates: the creator's (digest) identity when the URL
    /// has credentials, else open to everyone (Curator's default).
    pub(crate) fn acls(&self) -> zk::Acls<'static> {
        if self.cfg.digest.is_some() { zk::Acls::creator_all() } else { zk::Acls::anyone_all() }
    }

    /// `fut` bounded by `?timeout=` (a timeout reads as a connection loss).
    pub(crate) async fn bounded<T>(&self, fut: impl Future<Output = Result<T, zk::Error>>) -> Result<T, zk::Error> {
        match tokio::time::timeout(self.cfg.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(zk::Error::Timeout),
        }
    }

    /// Brings the server `c` talks to up to date with the leader before a read: a
    /// follower answers reads from its own copy, so a count read on one client right after
    /// another client's release (through another server) could be stale without it.
    pub(crate) async fn caught_up(&self, c: &zk::Client, path: &str) -> Result<()> {
        self.bounded(c.sync(path)).await.map_err(|e| self.err("sync before reading", e))
    }

    /// ZooKeeper's error as baton's, with what was being done.
    pub(crate) fn err(&self, what: &str, e: zk::Error) -> Error {
        let msg = format!("{}: {what}: {e}", self.cfg.store);
        match e {
            zk::Error::ConnectionLoss
            | zk::Error::Timeout
            | zk::Error::NoHosts
            | zk::Error::SessionExpired
            | zk::Error::SessionMoved
            | zk::Error::Throttled
            // The client's own errors: the session's socket failed (a broken pipe when a
            // member goes down mid-request) or gave no answer in time. TLS setup errors,
            // the only other source, are mapped where the options are read.
            | zk::Error::Custom(_) => Error::connection(msg),
            zk::Error::ClientClosed if self.closed.load(Ordering::Acquire) => Error::closed(),
            zk::Error::ClientClosed => Error::connection(msg),
            // A node of another identity (digest credentials that are not its owner's: a
            // wrong password), or of an identity when the client gave none.
            zk::Error::NoAuth | zk::Error::AuthFailed => self.refused(&format!("{what}: {e}")),
            zk::Error::BadArguments(_) => Error::invalid_argument(msg),
            _ => Error::backend(msg),
        }
    }

    /// The session timeout the server granted (the URL's until a session is open).
    pub(crate) fn session_timeout(&self) -> Duration {
        match self.session_ms.load(Ordering::Relaxed) {
            0 => self.cfg.session_timeout,
            ms => Duration::from_millis(ms),
        }
    }

    /// Records the server's clock from the `mtime` of a write answered just now.
    pub(crate) fn saw_mtime(&self, mtime: i64) {
        if mtime > 0 {
            self.offset.store(mtime - local_ms(), Ordering::Relaxed);
        }
    }

    /// The server's clock now, in ms (never ahead of it: the write's `mtime` was stamped
    /// before its answer came back).
    pub(crate) fn server_now(&self) -> i64 {
        local_ms() + self.offset.load(Ordering::Relaxed)
    }

    /// Closes the session: the client's last handle dropped, its session task sends
    /// `closeSession`, and the server deletes the session's ephemeral nodes at once (a
    /// waiter's queue place included). Returns once the session is closed (at most
    /// `?timeout=`, 3 s at most): a process that exits right after (`baton run` on SIGINT
    /// while waiting) would otherwise end the session task before it sent anything, and
    /// leave its nodes to the session timeout (a queue place to its ttl).
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let Some(c) = self.cur.lock().await.take() else { return };
        let mut state = c.state_watcher();
        drop(c);
        let closed = async {
            while !state.peek_state().is_terminated() {
                state.changed().await;
            }
        };
        let _ = tokio::time::timeout(self.cfg.timeout.min(Duration::from_secs(3)), closed).await;
    }
}
