//! A store's side of its driven links: which link a call takes (`Home`), what a plain
//! server's link needs to log in (`Direct`), who drives a link (`Kind`), and the pause
//! after a failed connect.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(unix)]
use super::task;
use super::{DrivenLink, HERE, own};
use crate::store::redis::config::{RedisConfig, Topology};
use crate::sync::LockExt;

/// Who drives a link: the connection name it gets, and how its answers are waited for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An event loop that watches its socket (Node's).
    Loop,
    /// The one host thread that owns it (`own`).
    Own,
    /// Whichever task waits for an answer (`task`).
    Task,
}

/// How long after a failed connect a store opens no own or tasks' link (its calls
/// meanwhile take the multiplexed connection, which reconnects on its own).
pub(super) const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// No connect of a kind of link before a time, set after a failed one ([`RETRY`]).
#[derive(Default)]
pub(super) struct Pause(Mutex<Option<std::time::Instant>>);

impl Pause {
    pub(super) fn on(&self) -> bool {
        self.0.locked().is_some_and(|t| std::time::Instant::now() < t)
    }

    pub(super) fn start(&self) {
        *self.0.locked() = Some(std::time::Instant::now() + RETRY);
    }
}

/// The next store id: a link serves the store whose id it carries.
static NEXT_STORE: AtomicU64 = AtomicU64::new(1);

/// What a plain `redis://` server link needs to log in (kept by the store; never printed).
#[derive(Clone)]
pub(super) struct Direct {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) user: Option<String>,
    pub(super) password: Option<String>,
    pub(super) db: i64,
    pub(super) connect_timeout: Duration,
    pub(super) timeout: Duration,
}

/// A store's side of its driven links: its id (which the links installed on a thread are
/// looked up by) and, on a plain `redis://` server, how to open one.
pub(crate) struct Home {
    id: u64,
    direct: Option<Direct>,
    /// The links threads inside `drive_here` opened to this store (`own`).
    owned: own::Owned,
    /// The link this store's tasks drive themselves (`task`).
    #[cfg(unix)]
    tasked: task::Tasked,
}

impl Home {
    /// `lazy` (a `redlock://` node), TLS, a cluster and sentinels get no link, nor a store
    /// that sends `WAIT` after its grants (`WAIT` counts the writes of the connection it is
    /// sent on, so both go on the multiplexed one; and an event loop's grants, which do not
    /// pass the store's `acquire`, would send none). A Redlock node keeps the multiplexed
    /// connection: over the tasks' link its cycles measured slower (BENCHMARKS.md), and a
    /// thread waiting on one node's socket would hold up the other nodes' answers.
    pub(crate) fn new(cfg: &RedisConfig, lazy: bool) -> Home {
        let direct = match &cfg.topology {
            Topology::Single { host, port } if !cfg.tls && !lazy && cfg.wait.is_none() => Some(Direct {
                host: host.clone(),
                port: *port,
                user: cfg.user.clone(),
                password: cfg.password.clone(),
                db: cfg.db,
                connect_timeout: cfg.connect_timeout,
                timeout: cfg.timeout,
            }),
            _ => None,
        };
        Home {
            id: NEXT_STORE.fetch_add(1, Ordering::Relaxed),
            direct,
            owned: own::Owned::new(),
            #[cfg(unix)]
            tasked: task::Tasked::new(),
        }
    }

    /// The live link installed on this thread for this store, or else this thread's own
    /// link when it is inside `drive_here` (opened on first use), or else the link the
    /// store's tasks drive (None while it opens: the call takes the multiplexed connection).
    pub(crate) fn here(&self, store: &str) -> Option<DrivenLink> {
        let d = self.direct.as_ref()?;
        HERE.with(|h| h.borrow().iter().find(|l| l.0.store == self.id && l.is_alive()).cloned())
            .or_else(|| self.owned.here(d, self.id, store))
            .or_else(|| self.tasks(d, store))
    }

    #[cfg(unix)]
    fn tasks(&self, d: &Direct, store: &str) -> Option<DrivenLink> {
        self.tasked.here(d, self.id, store)
    }

    #[cfg(not(unix))]
    fn tasks(&self, _: &Direct, _: &str) -> Option<DrivenLink> {
        None
    }

    /// Closes the links threads and tasks opened to this store (`own`, `task`).
    pub(crate) fn close(&self) {
        self.owned.close();
        #[cfg(unix)]
        self.tasked.close();
    }

    /// A new link to the plain server for an event loop to drive (None elsewhere, and off
    /// unix); the connect blocks a blocking-pool thread, never the caller's loop.
    #[cfg(feature = "driven-link")]
    pub(crate) async fn open(&self, store: &str) -> crate::error::Result<Option<DrivenLink>> {
        match &self.direct {
            Some(d) if cfg!(unix) => {
                let (d, id, store) = (d.clone(), self.id, store.to_owned());
                tokio::task::spawn_blocking(move || DrivenLink::connect(&d, id, &store, Kind::Loop))
                    .await
                    .map_err(|e| crate::error::Error::backend(format!("internal error: {e}")))?
                    .map(Some)
            }
            _ => Ok(None),
        }
    }
}
