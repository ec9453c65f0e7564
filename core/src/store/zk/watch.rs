//! Waiters' subscriptions, as Curator waits: a lock or writer watches only its
//! predecessor, a reader the first writer before it, both with `getData` and a watch (not
//! `exists`, so a watch is never left on a node that does not exist); a semaphore waiter
//! watches the leases' children; a latch waiter the latch's data. Each wait sets its watch
//! afresh and also ends when the watched baton node's lease does (a vanished contender is
//! deleted by the attempt that follows).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use zookeeper_client as zk;

use super::conn::Conn;
use super::entries;
use super::path::Kind;
use super::queue::{Queue, blocked};
use crate::error::Result;
use crate::store::Subscription;

/// What one wait watches.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// A queue, for `holder` (`None`: whoever stands last) of `kind`.
    Queue { q: Queue, kind: Kind, holder: Option<String>, writer: Option<String> },
    /// The children of a directory.
    Children(String),
    /// One node's data.
    Data(String),
}

pub(crate) struct ZkSub {
    conn: Arc<Conn>,
    target: Target,
    /// A queue waiter's node had one predecessor, the watched node, when the watch was set:
    /// its deletion makes the waiter first.
    sole: bool,
    /// For a directory or a node: the zxid of its last change as last seen (`pzxid` of the
    /// children, `mzxid` of the data; 0 when absent), so a change between the subscription
    /// and the wait is not missed.
    seen: i64,
}

/// A wait that sets no watch: returns at once, so the engine attempts again.
const NOW: Option<zk::OneshotWatcher> = None;

/// What `target` was last changed by (see [`ZkSub::seen`]).
fn zxid_of(target: &Target, stat: Option<&zk::Stat>) -> i64 {
    match (target, stat) {
        (Target::Children(_), Some(s)) => s.pzxid,
        (_, Some(s)) => s.mzxid,
        (_, None) => 0,
    }
}

impl ZkSub {
    /// A subscription on `target`, remembering its state now.
    pub(crate) async fn new(conn: Arc<Conn>, target: Target) -> Result<ZkSub> {
        let seen = match &target {
            Target::Queue { .. } => 0,
            Target::Children(p) | Target::Data(p) => {
                let c = conn.client().await?;
                let stat = conn.bounded(c.check_stat(p)).await.map_err(|e| conn.err("watch", e))?;
                zxid_of(&target, stat.as_ref())
            }
        };
        Ok(ZkSub { conn, target, seen, sole: false })
    }

    /// Whether the target changed since last seen (and remembers the change).
    fn moved(&mut self, stat: Option<&zk::Stat>) -> bool {
        let z = zxid_of(&self.target, stat);
        let moved = z != self.seen;
        self.seen = z;
        moved
    }

    /// Sets the watch; `None` when what it would watch is already gone. Also when the
    /// watched node's lease ends.
    async fn arm(&mut self) -> Result<(Option<zk::OneshotWatcher>, Option<Duration>)> {
        let c = self.conn.client().await?;
        let conn = self.conn.clone();
        match &self.target {
            Target::Queue { q, kind, holder, writer } => {
                let es = entries::read(&conn, &c, &q.dir, q.kinds).await?;
                let i = holder
                    .as_deref()
                    .and_then(|h| es.iter().position(|e| e.node.kind == *kind && e.is(h)))
                    .unwrap_or(es.len());
                if !blocked(&es, i, *kind, writer.as_deref()) {
                    return Ok((NOW, None));
                }
                let pred = match kind {
                    Kind::Read => es[..i].iter().find(|e| e.node.kind == Kind::Write),
                    _ => es[..i].last(),
                };
                // Every node ahead of the waiter's own was created before it, so this
                // session's read (after its own create) shows them all.
                self.sole = *kind != Kind::Read && i == 1 && i < es.len();
                let Some(p) = pred else { return Ok((NOW, None)) };
                let left =
                    p.left_ms(conn.server_now()).map(|l| Duration::from_millis(u64::try_from(l.max(0)).unwrap_or(0)));
                match conn.bounded(c.get_and_watch_data(&p.path(&q.dir))).await {
                    Ok((_, _, w)) => Ok((Some(w), left)),
                    Err(zk::Error::NoNode) => Ok((NOW, None)),
                    Err(e) => Err(conn.err("watch", e)),
                }
            }
            Target::Children(dir) => {
                let dir = dir.clone();
                match self.conn.bounded(c.get_and_watch_children(&dir)).await {
                    Ok((_, stat, w)) if !self.moved(Some(&stat)) => Ok((Some(w), None)),
                    Ok(_) => Ok((NOW, None)),
                    // Nothing there yet: poll at the engine's pace.
                    Err(zk::Error::NoNode) if !self.moved(None) => Ok((None, Some(Duration::from_millis(200)))),
                    Err(zk::Error::NoNode) => Ok((NOW, None)),
                    Err(e) => Err(self.conn.err("watch", e)),
                }
            }
            Target::Data(p) => {
                let p = p.clone();
                match self.conn.bounded(c.check_and_watch_stat(&p)).await {
                    Ok((stat, w)) if !self.moved(stat.as_ref()) => Ok((Some(w), None)),
                    Ok(_) => Ok((NOW, None)),
                    Err(e) => Err(self.conn.err("watch", e)),
                }
            }
        }
    }
}

#[async_trait]
impl Subscription for ZkSub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        let (w, left) = match self.arm().await {
            Ok(x) => x,
            // A connection loss: the engine's next attempt reports it, or succeeds.
            Err(_) => {
                tokio::time::sleep_until(until.min(Instant::now() + Duration::from_millis(100))).await;
                return Ok(());
            }
        };
        let Some(w) = w else {
            if let Some(l) = left {
                tokio::time::sleep_until(until.min(Instant::now() + l)).await;
            }
            return Ok(());
        };
        let until = match left {
            Some(l) => until.min(Instant::now() + l + Duration::from_millis(5)),
            None => until,
        };
        if let Ok(ev) = tokio::time::timeout_at(until, w.changed()).await {
            if let (true, zk::EventType::NodeDeleted, Target::Queue { q, holder: Some(h), .. }) =
                (self.sole, ev.event_type, &self.target)
            {
                self.conn.mine.now_first(&q.dir, h);
            }
        }
        Ok(())
    }
}
