//! `zk://h1:2181,h2:2181[/chroot]`: ZooKeeper in Apache Curator's layouts, so Curator
//! services and baton contend on the same names (docs/zookeeper-layout.md lists every
//! znode and the Curator sources each matches).
//!
//! - `Lock`, `FairLock`: `InterProcessMutex`'s queue (`queue`), `NAME/_c_<id>-lock-<seq>`.
//! - `RwLock`: `InterProcessReadWriteLock` (`queue`), `__READ__` / `__WRIT__` nodes.
//! - `Semaphore`, `PermitSemaphore`: `InterProcessSemaphoreV2`'s leases (`leases`).
//! - `CountDownLatch`: baton's own `NAME/latch` count (`latch`).
//!
//! The fencing token of a grant is its node's `czxid`: zxids are the ensemble's total
//! order of writes, and a name's holder is always the lowest-sequence live node, so each
//! grant's node was created after every earlier holder's and its czxid is larger.
//! `conn` keeps the session, `auth` checks its credentials against the ACLs, `entries`
//! reads contender nodes, `mine` holds what baton writes in them and the nodes this
//! client wrote, `watch` makes waiters wait.

mod auth;
mod config;
mod conn;
#[cfg(feature = "bench")]
mod diagnostics;
mod entries;
mod guarded;
mod latch;
mod leases;
mod mine;
mod path;
mod queue;
mod watch;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{Mutex, OwnedMutexGuard};

use async_trait::async_trait;

use self::config::ZkConfig;
use self::conn::Conn;
use self::entries::Entry;
use self::path::Kind;
use self::queue::{Queue, blocked};
use self::watch::{Target, ZkSub};
use super::{Store, Subscription};
use crate::error::{Error, Result};
use crate::inspect::{Holder, Inspection};
use crate::key::{Family, Key};
use crate::state::{Attempt, Mode, Released, Request};
use crate::store::drift_margin;
use crate::sync::Registry;
use crate::token::FencingToken;
use crate::url::StoreUrl;

/// The ZooKeeper store of one client: one session.
#[derive(Debug)]
pub(crate) struct Zk {
    conn: Arc<Conn>,
}

impl Zk {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Zk> {
        let cfg = ZkConfig::from_url(url)?;
        Ok(Zk { conn: Arc::new(Conn::open(cfg).await?) })
    }

    /// The name's znode; a name that is another name's layout node is refused
    /// (`path::of_own_name`).
    fn queue(key: &Key) -> Result<Queue> {
        let dir = path::of_own_name(&key.name)?;
        Ok(if key.family == Family::RwLock { Queue::rw(dir) } else { Queue::lock(dir) })
    }

    fn leases(key: &Key) -> Result<String> {
        Ok(leases::dir(&path::of_own_name(&key.name)?))
    }

    fn latch(key: &Key) -> Result<String> {
        Ok(latch::node(&path::of_own_name(&key.name)?))
    }

    /// One step at a time per holder of a name in this process (steps are optimistic: two
    /// attempts of one holder at once would each create a node).
    async fn turn(&self, key: &Key, holder: &str) -> OwnedMutexGuard<()> {
        static REG: OnceLock<Registry<(String, Key, String), Mutex<()>>> = OnceLock::new();
        let id = (format!("{}{}", self.conn.cfg.hosts, self.conn.cfg.chroot), key.clone(), holder.to_owned());
        let turn: Arc<Mutex<()>> = REG.get_or_init(Registry::default).get_or_insert_with(id, Mutex::default);
        turn.lock_owned().await
    }

    async fn sub(&self, target: Target) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(ZkSub::new(self.conn.clone(), target).await?))
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The part of a `lease` longer than the `session` timeout that the holder does not count
/// on: the engine ends a lease `drift_margin(lease) + margin` early, and for a lease past
/// the session timeout that end must be the session's own, `session − drift_margin(session)`
/// (clock drift over the session window, not the whole lease). Subtracting only
/// `lease − session` left `session − lease / 50`, nothing from 50 × `session` on: every ttl
/// from 1 500 s (at 30 s sessions) was lost at its grant.
fn session_margin(lease: Duration, session: Duration) -> Duration {
    let (end_by_lease, end_by_session) =
        (lease.saturating_sub(drift_margin(lease)), session.saturating_sub(drift_margin(session)));
    end_by_lease.saturating_sub(end_by_session)
}

fn no_latch_holds(key: &Key) -> Error {
    Error::unsupported(format!("{key}: a latch has no holds"))
}

#[async_trait]
impl Store for Zk {
    async fn acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        let _turn = self.turn(key, &req.holder).await;
        match key.family {
            Family::Lock | Family::RwLock => queue::acquire(&self.conn, &Self::queue(key)?, req).await,
            Family::Semaphore => leases::acquire(&self.conn, &Self::leases(key)?, &key.name, req).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Err(no_latch_holds(key)),
        }
    }

    async fn renew(&self, key: &Key, holder: &str, lease: Duration) -> Result<bool> {
        let _turn = self.turn(key, holder).await;
        match key.family {
            Family::Lock | Family::RwLock => queue::renew(&self.conn, &Self::queue(key)?, holder, ms(lease)).await,
            Family::Semaphore => leases::renew(&self.conn, &Self::leases(key)?, holder, ms(lease)).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Ok(false),
        }
    }

    /// Every renewal of the batch at once (the session pipelines them).
    async fn renew_many(&self, items: &[(Key, String)], lease: Duration) -> Result<Vec<bool>> {
        let all = futures_util::future::join_all(items.iter().map(|(k, h)| self.renew(k, h, lease))).await;
        all.into_iter().collect()
    }

    async fn release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        let _turn = self.turn(key, holder).await;
        match key.family {
            Family::Lock | Family::RwLock => queue::release(&self.conn, &Self::queue(key)?, holder, count).await,
            Family::Semaphore => leases::release(&self.conn, &Self::leases(key)?, holder, count).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => Ok(Released::NotHeld),
        }
    }

    async fn leave_queue(&self, key: &Key, holder: &str) -> Result<()> {
        let _turn = self.turn(key, holder).await;
        match key.family {
            Family::Lock | Family::RwLock => queue::leave_queue(&self.conn, &Self::queue(key)?, holder).await,
            _ => Ok(()),
        }
    }

    /// ZooKeeper's lock is a queue: every waiting lock keeps its node (fair by nature).
    fn queues_locks(&self) -> bool {
        true
    }

    /// A session unheard of for its timeout expires, and its nodes go with it: a hold is
    /// never counted on past the session timeout after its last renewal (or, for a ttl
    /// lease, the ttl keeper's last look at its node), whatever its lease.
    fn lease_margin(&self, lease: Duration) -> Duration {
        session_margin(lease, self.conn.session_timeout())
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        match key.family {
            Family::Lock | Family::RwLock => {
                let kind = if key.family == Family::Lock { Kind::Lock } else { Kind::Write };
                self.sub(Target::Queue { q: Self::queue(key)?, kind, holder: None, writer: None }).await
            }
            Family::Semaphore => self.sub(Target::Children(Self::leases(key)?)).await,
            Family::Election => Err(crate::store::no_election()),
            Family::Latch => self.sub(Target::Data(Self::latch(key)?)).await,
        }
    }

    async fn subscribe_for(&self, key: &Key, req: &Request) -> Result<Box<dyn Subscription>> {
        match key.family {
            Family::Lock | Family::RwLock => {
                let q = Self::queue(key)?;
                let kind = q.kind_of(&req.mode);
                let writer = match &req.mode {
                    Mode::Read { writer } => Some(writer.clone()),
                    _ => None,
                };
                self.sub(Target::Queue { q, kind, holder: Some(req.holder.clone()), writer }).await
            }
            _ => self.subscribe(key).await,
        }
    }

    async fn inspect(&self, key: &Key) -> Result<Inspection> {
        let c = self.conn.client().await?;
        let conn = &*self.conn;
        let mut info = Inspection {
            name: key.name.clone(),
            kind: key.family.as_str(),
            holders: Vec::new(),
            waiters: Vec::new(),
            last_token: None,
            count: 0,
            permits: None,
        };
        if key.family == Family::Latch {
            info.count = latch::count(conn, &Self::latch(key)?).await?;
            return Ok(info);
        }
        let (dir, kinds) = match key.family {
            Family::Semaphore => (Self::leases(key)?, leases::KINDS),
            _ => {
                let q = Self::queue(key)?;
                (q.dir, q.kinds)
            }
        };
        conn.caught_up(&c, &dir).await?;
        let now = conn.server_now();
        // An expired holder holds nothing; an expired waiter's node stays in the queue
        // until the next attempt deletes it, and is reported until then.
        let es: Vec<Entry> =
            entries::read(conn, &c, &dir, kinds).await?.into_iter().filter(|e| !(e.expired(now) && e.held())).collect();
        let left = |e: &Entry| e.left_ms(now).map(|l| Duration::from_millis(u64::try_from(l.max(0)).unwrap_or(0)));
        for (i, e) in es.iter().enumerate() {
            let mode = match e.node.kind {
                Kind::Lock => "exclusive",
                Kind::Read => "read",
                Kind::Write => "write",
                Kind::Lease => "permits",
            };
            // A lock's or writer's node holds only where it stands first: a first attempt
            // writes its node as held before it has listed the queue.
            let granted = match &e.data {
                Some(d) => {
                    d.count > 0
                        && (matches!(e.node.kind, Kind::Read | Kind::Lease) || !blocked(&es, i, e.node.kind, None))
                }
                None => e.node.kind == Kind::Lease || !blocked(&es, i, e.node.kind, None),
            };
            if !granted {
                info.waiters.push(e.owner());
                continue;
            }
            let owner = e.owner();
            if e.node.kind == Kind::Lease {
                if let Some(h) = info.holders.iter_mut().find(|h| h.owner == owner && e.data.is_some()) {
                    h.count += 1;
                    continue;
                }
            }
            info.holders.push(Holder {
                owner,
                mode,
                count: if e.node.kind == Kind::Lease { 1 } else { e.count() },
                token: FencingToken::new(e.token()),
                lease_left: left(e),
                value: None,
            });
        }
        if key.family == Family::Semaphore {
            info.permits = leases::recorded_size(&es);
        }
        let top = info.holders.iter().map(|h| h.token.get()).max().unwrap_or(0);
        let last = entries::fence(conn, &c, &dir).await?.max(top);
        info.last_token = (last > 0).then(|| FencingToken::new(last));
        Ok(info)
    }

    async fn latch_try_set(&self, key: &Key, count: u64) -> Result<bool> {
        latch::try_set(&self.conn, &Self::latch(key)?, count).await
    }

    async fn latch_count_down(&self, key: &Key) -> Result<u64> {
        latch::count_down(&self.conn, &Self::latch(key)?).await
    }

    async fn latch_count(&self, key: &Key) -> Result<u64> {
        latch::count(&self.conn, &Self::latch(key)?).await
    }

    #[cfg(feature = "bench")]
    fn diagnostics(&self) -> Option<&dyn super::Diagnostics> {
        Some(self)
    }

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        Some(self)
    }

    async fn close(&self) {
        self.conn.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_is_counted_on_for_the_shorter_of_its_lease_and_its_session() {
        let s = Duration::from_secs(30);
        let end = |lease: Duration| lease - drift_margin(lease) - session_margin(lease, s);
        assert_eq!(session_margin(Duration::from_secs(10), s), Duration::ZERO);
        assert_eq!(end(Duration::from_secs(10)), Duration::from_secs(10) - drift_margin(Duration::from_secs(10)));
        for lease in [31, 1498, 2000, 30 * 86_400, 366 * 86_400].map(Duration::from_secs) {
            assert_eq!(end(lease), s - drift_margin(s), "{lease:?}");
        }
    }
}
