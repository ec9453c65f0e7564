//! `redis://` (one server, ≥ 6), `redis+cluster://`, `redis+sentinel://` and their TLS
//! forms `rediss…`, parsed once by `config`. Every primitive keeps Redisson's data layout,
//! so Redisson and baton clients contend safely on the same names (docs/redis-layout.md):
//! one file of `layout` per layout (`?scheme=simple`: redis-py's, redsync's and
//! node-redlock's lock; `?semaphore=rsemaphore`: `RSemaphore`'s counter), each step one
//! script of `lua/`, sent by `conn`. This file only sends each `Store` call to its layout.

mod config;
mod conn;
mod keys;
mod layout;
mod reply;
mod script;

#[cfg(feature = "driven-link")]
pub use self::conn::driven::{DrivenLink, drive_here};

use std::time::Duration;

use async_trait::async_trait;
use redis::Cmd;

use self::config::{LockLayout, Names, RedisConfig, SemLayout, Topology, WaitReplicas};
use self::conn::Conn;
use self::layout::{ALL, fair, fence, latch, lock, rsemaphore, rwlock, semaphore, simple};
#[cfg(feature = "bench")]
use super::Diagnostics;
use super::{Store, Subscription};
use crate::error::{Error, Result};
use crate::inspect::Inspection;
use crate::key::{Family, Key};
use crate::state::{Attempt, KeyState, Mode, Released, Request};
use crate::url::StoreUrl;

/// The Redis store of one client.
#[derive(Debug)]
pub(crate) struct Redis {
    conn: Conn,
    cfg: RedisConfig,
}

impl Redis {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Redis> {
        Redis::connect(RedisConfig::from_url(url)?).await
    }

    /// Connects as `cfg` says (the subscriber connection connects on first use).
    pub(crate) async fn connect(cfg: RedisConfig) -> Result<Redis> {
        Ok(Redis { conn: Conn::open(&cfg, false, &ALL).await?, cfg })
    }

    /// The Redis name of `key` (see `keys::redis_name`).
    fn name(&self, key: &Key) -> String {
        keys::redis_name(key, self.cfg.names == Names::Bare)
    }

    /// On a cluster, refuses a name whose keys would not share one slot.
    /// Refuses names that are another name's internal key, and, on a cluster, names whose
    /// keys would span slots.
    fn check_slot(&self, key: &Key) -> Result<()> {
        keys::check_not_owned(&self.name(key), key.family, self.cfg.names != Names::Bare)?;
        match self.cfg.topology {
            Topology::Cluster { .. } => keys::check_cluster_safe(key, &self.name(key)),
            _ => Ok(()),
        }
    }

    /// The renew call of one item (for single renewals and pipelined batches).
    fn renew_call(&self, key: &Key, holder: &str, lease: Duration) -> Result<Cmd> {
        let n = &self.name(key);
        Ok(match key.family {
            Family::Lock if self.cfg.lock == LockLayout::Simple => simple::renew(n, holder, lease),
            Family::Lock => lock::renew(n, holder, lease),
            Family::RwLock => rwlock::renew(n, holder, lease),
            Family::Semaphore => match self.cfg.semaphore.of(holder) {
                SemLayout::Leased => semaphore::renew(n, holder, lease, self.cfg.clock),
                SemLayout::Bare => rsemaphore::renew(n, holder),
            },
            Family::Election => return Err(crate::store::no_election()),
            Family::Latch => return Err(Error::unsupported("a count-down latch has no lease to renew")),
        })
    }
}

impl Redis {
    /// `?wait_replicas=`: `WAIT` for the fresh grant of `holder` on `key` just written; when
    /// too few replicas confirm in time, the grant is given back (it was the holder's only
    /// hold: fresh) and fails.
    async fn replicated(&self, key: &Key, holder: &str, w: WaitReplicas) -> Result<()> {
        let ms = u64::try_from(w.timeout.as_millis()).unwrap_or(u64::MAX);
        let acked = self.conn.query::<i64>(redis::cmd("WAIT").arg(w.replicas).arg(ms)).await;
        match acked {
            Ok(n) if n >= i64::from(w.replicas) => Ok(()),
            other => {
                let why = match &other {
                    Ok(n) => format!("{n} confirmed within {:?}", w.timeout),
                    Err(e) => e.to_string(),
                };
                // Given back before the error: a grant nobody was told of must not hold.
                let back = Store::release(self, key, holder, u32::MAX).await;
                let back = back.map_or_else(|e| format!("; giving it back failed too: {e}"), |_| String::new());
                Err(Error::backend(format!(
                    "{}: a grant of `{}` was not confirmed by {} replica(s) (?wait_replicas): {why}; not granted{back}",
                    self.cfg.store, key.name, w.replicas
                )))
            }
        }
    }
}

/// The hooks of `redlock://`, which runs every step on each of its nodes through these.
#[cfg_attr(not(feature = "redlock"), allow(dead_code))]
impl Redis {
    /// One node: connected on first use (a node that is down when the client starts must
    /// not stop it; the quorum decides), scripts loaded on the first `NOSCRIPT`.
    pub(crate) async fn open_node(url: &StoreUrl) -> Result<Redis> {
        let cfg = RedisConfig::from_url(url)?;
        Ok(Redis { conn: Conn::open(&cfg, true, &ALL).await?, cfg })
    }

    /// One acquire attempt, with the node's token counter: a grant's token, or the counter
    /// of a busy node (`redlock://` reads the max-register from every node that answers).
    pub(crate) async fn acquire_counted(&self, key: &Key, req: &Request) -> Result<(Attempt, u64)> {
        self.check_slot(key)?;
        let (c, n, clock) = (&self.conn, &self.name(key), self.cfg.clock);
        let v = match (&key.family, &req.mode) {
            (Family::Lock, _) if self.cfg.lock == LockLayout::Simple => simple::acquire(c, n, req).await?,
            (Family::Lock, _) => lock::acquire(c, n, req, clock).await?,
            (Family::RwLock, Mode::Read { .. } | Mode::Write) => rwlock::acquire(c, n, req).await?,
            (Family::Semaphore, _) if self.cfg.semaphore.of(&req.holder) == SemLayout::Bare => {
                return Ok((rsemaphore::acquire(c, &key.name, n, req).await?, 0));
            }
            (Family::Semaphore, Mode::Permits { count, limit }) => {
                let v = semaphore::acquire(c, n, req, *count, *limit, clock).await?;
                if let Some(size) = reply::size_refused(&v) {
                    return Err(Error::semaphore_size(&key.name, size, *limit));
                }
                v
            }
            (family, mode) => {
                return Err(Error::backend(format!("internal error: {mode:?} on a {} key", family.as_str())));
            }
        };
        let attempt = reply::attempt(c.store(), "acquire", &v)?;
        let counter = match attempt {
            Attempt::Granted { token, .. } => token,
            Attempt::Busy { .. } => reply::busy_counter(&v),
        };
        Ok((attempt, counter))
    }

    /// Raises the name's token counter to `token` (a max-register: never lowered) and
    /// records `token` as `holder`'s, if it holds.
    pub(crate) async fn raise_fence(&self, key: &Key, holder: &str, token: u64) -> Result<()> {
        let lock_hash = key.family == Family::Lock && self.cfg.lock == LockLayout::Redisson;
        fence::raise(&self.conn, key.family, &self.name(key), holder, token, lock_hash).await
    }

    /// One PING on the command connection (Redlock's fan-out yardstick).
    #[cfg_attr(not(all(feature = "redlock", feature = "bench")), allow(dead_code))]
    pub(crate) async fn ping(&self) -> Result<()> {
        self.conn.ping().await
    }

    /// The live state of `key` and the server's clock (ms); leases are absolute times on it.
    pub(crate) async fn state(&self, key: &Key) -> Result<(KeyState, u64)> {
        self.check_slot(key)?;
        let (c, n, clock) = (&self.conn, &self.name(key), self.cfg.clock);
        match key.family {
            Family::Lock if self.cfg.lock == LockLayout::Simple => simple::inspect(c, n).await,
            Family::Lock => lock::inspect(c, n, clock).await,
            Family::RwLock => rwlock::inspect(c, n).await,
            Family::Semaphore if self.cfg.semaphore == SemLayout::Bare => rsemaphore::inspect(c, n, clock).await,
            Family::Semaphore => semaphore::inspect(c, n, clock).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Ok((KeyState { count: latch::count(c, n).await?, ..KeyState::default() }, 0)),
        }
    }
}

#[async_trait]
impl Store for Redis {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        let attempt = self.acquire_counted(key, req).await?.0;
        if let (Some(w), Attempt::Granted { fresh: true, .. }) = (self.cfg.wait, &attempt) {
            self.replicated(key, &req.holder, w).await?;
        }
        Ok(attempt)
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        self.conn.renew(self.renew_call(key, holder, lease)?).await
    }

    /// One pipeline (one round trip) per batch of `renewer::BATCH` leases, per slot.
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let mut cmds = Vec::with_capacity(items.len());
        for (key, holder) in items {
            cmds.push((self.name(key), self.renew_call(key, holder, lease)?));
        }
        self.conn.renew_many(cmds).await
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        let (c, n, clock, free) = (&self.conn, &self.name(key), self.cfg.clock, self.cfg.free);
        match key.family {
            Family::Lock if self.cfg.lock == LockLayout::Simple => simple::release(c, n, holder, count, free).await,
            Family::Lock => lock::release(c, n, holder, count, clock, free).await,
            Family::RwLock => rwlock::release(c, n, holder, count, free).await,
            Family::Semaphore => match self.cfg.semaphore.of(holder) {
                SemLayout::Leased => semaphore::release(c, n, holder, count, clock, free).await,
                SemLayout::Bare => rsemaphore::release(c, n, holder, count, free).await,
            },
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Err(Error::unsupported("a count-down latch has no holds to release")),
        }
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        match key.family {
            // No queue in the simple layout.
            Family::Lock if self.cfg.lock == LockLayout::Simple => Ok(()),
            Family::Lock => fair::leave(&self.conn, &self.name(key), holder).await,
            Family::RwLock => rwlock::leave(&self.conn, &self.name(key), holder).await,
            // No queues: permits and latches are taken by whoever comes first.
            Family::Semaphore | Family::Latch | Family::Election => Ok(()),
        }
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        // An unlock message `0` on a lock channel wakes one local waiter (one grant is
        // possible); the other channels wake every waiter.
        let n = self.name(key);
        if self.cfg.lock == LockLayout::Simple && key.family == Family::Lock {
            return simple::subscribe(&self.conn, &n, self.cfg.db).await;
        }
        self.conn.listen(keys::channel(key.family, &n), key.family == Family::Lock).await
    }

    /// A fair-lock waiter listens on its own channel (`fair`).
    async fn subscribe_for(&self, key: &Key, req: &Request) -> Result<Box<dyn Subscription>> {
        match (&key.family, &req.mode) {
            (Family::Lock, Mode::Fair) if self.cfg.lock == LockLayout::Redisson => {
                self.conn.listen(fair::waiter_channel(&self.name(key), &req.holder), false).await
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
        latch::try_set(&self.conn, &self.name(key), count).await
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        self.check_slot(key)?;
        latch::count_down(&self.conn, &self.name(key)).await
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        latch::count(&self.conn, &self.name(key)).await
    }

    #[cfg(feature = "driven-link")]
    async fn driven_link(&self) -> Result<Option<DrivenLink>> {
        // None with `?wait_replicas=` (`driven::Home::new`): its grants pass no `acquire`.
        self.conn.driven_link().await
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn Diagnostics> {
        Some(self)
    }

    async fn close(&self) {
        self.conn.close();
    }

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        Some(self)
    }
}

#[cfg(feature = "bench")]
impl Diagnostics for Redis {
    fn round_trips(&self) -> Option<u64> {
        Some(self.conn.round_trips())
    }
}
