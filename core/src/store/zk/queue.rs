//! The queues of Curator's `InterProcessMutex` (Lock, FairLock) and
//! `InterProcessReadWriteLock` (RwLock), as baton's one-attempt steps.
//!
//! Every contender is an ephemeral-sequential node `_c_<id>-<lock name><seq>` under the
//! name's znode (`lock-`; `__READ__` / `__WRIT__`), in sequence order
//! (`LockInternals.getSortedChildren`). A lock or writer holds when no contender precedes
//! it (Curator's `maxLeases` 1); a reader holds when no writer precedes it, or when the
//! same handle's writer holds (`InterProcessReadWriteLock.readLockPredicate`, which allows
//! the write→read downgrade). A waiting lock or writer keeps its node as its queue place;
//! a reader or a `try` that is refused removes its node again.

use zookeeper_client as zk;

use super::conn::Conn;
use super::entries::{self, Entry};
use super::mine::{Data, Mine};
use super::path::{self, Kind};
use crate::error::{Error, Result};
use crate::state::{Attempt, Mode, Released, Request, read_holder_of};

/// How many times one step re-reads after losing a race before giving up.
const RACES: usize = 32;

/// The shortest a queue place lasts (ms), whatever the queue ttl: a place is refreshed by
/// its waiter's attempts, and a shorter one would lapse under a pause of a loaded process
/// (etcd's leases have a floor of the same kind).
const MIN_PLACE_MS: u64 = 2000;

/// How long `req`'s queue place lasts unrefreshed.
fn place_ms(req: &Request) -> u64 {
    req.queue_ttl_ms.max(MIN_PLACE_MS)
}

fn raced(conn: &Conn) -> Error {
    Error::backend(format!("{}: too many conflicting updates of one lock queue in a row", conn.cfg.store))
}

/// One queue: the name's znode and the kinds of node in it.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    pub(crate) dir: String,
    pub(crate) kinds: &'static [Kind],
}

impl Queue {
    pub(crate) fn lock(dir: String) -> Queue {
        Queue { dir, kinds: &[Kind::Lock] }
    }

    pub(crate) fn rw(dir: String) -> Queue {
        Queue { dir, kinds: &[Kind::Read, Kind::Write] }
    }

    /// The kind of node `mode` makes in this queue.
    pub(crate) fn kind_of(&self, mode: &Mode) -> Kind {
        match mode {
            Mode::Read { .. } => Kind::Read,
            Mode::Write => Kind::Write,
            _ => Kind::Lock,
        }
    }
}

/// Whether a contender of `kind` standing at `i` (or arriving: `i == es.len()`) must wait;
/// `writer` is a reader's own writer id.
pub(crate) fn blocked(es: &[Entry], i: usize, kind: Kind, writer: Option<&str>) -> bool {
    let before = &es[..i.min(es.len())];
    match kind {
        Kind::Read => {
            // The handle's own writer holds (the write→read downgrade): it stands first. A
            // writer's node further back is waiting, whatever its data says (a first
            // attempt writes its node as held before it knows).
            if writer.is_some_and(|w| es.first().is_some_and(|e| e.node.kind == Kind::Write && e.is(w) && e.held())) {
                return false;
            }
            before.iter().any(|e| e.node.kind == Kind::Write)
        }
        _ => !before.is_empty(),
    }
}

/// When the earliest baton lease among the first `i` contenders ends (ms), for the
/// engine's next look.
fn retry_ms(conn: &Conn, es: &[Entry], i: usize) -> Option<u64> {
    let now = conn.server_now();
    es[..i.min(es.len())].iter().filter_map(|e| e.left_ms(now)).min().map(|l| u64::try_from(l.max(1)).unwrap_or(1))
}

fn writer_of(req: &Request) -> Option<&str> {
    match &req.mode {
        Mode::Read { writer } => Some(writer.as_str()),
        _ => None,
    }
}

/// One acquire attempt (see `Store::acquire`).
///
/// A waiting lock or writer that knows of no node of its holder here starts as Curator
/// does: it creates its node (as held) and lists the queue, and holds when nothing precedes
/// it, two requests in one round trip. Any other attempt, and one that finds others ahead, reads the queue
/// with its nodes' data (`step`).
pub(crate) async fn acquire(conn: &Conn, q: &Queue, req: &Request) -> Result<Attempt> {
    let c = conn.client().await?;
    let kind = q.kind_of(&req.mode);
    let mut created = None;
    if req.enqueue && kind != Kind::Read && !conn.mine.knows(&q.dir, &req.holder) {
        let data = Data { holder: req.holder.clone(), count: 1, lease_ms: req.lease_ms, permits: None };
        let (stat, name, children) = entries::create_and_list(conn, &c, &q.dir, kind, &data).await?;
        if path::contenders(&children, q.kinds).first().is_some_and(|n| n.name == name) {
            let path = format!("{}/{name}", q.dir);
            let m =
                Mine { path, kind, version: stat.version, czxid: stat.czxid, mtime: stat.mtime, data, first: false };
            conn.mine.remember(&q.dir, &req.holder, m);
            return Ok(Attempt::Granted { token: u64::try_from(stat.czxid).unwrap_or(0), count: 1, fresh: true });
        }
        // Others ahead (or a node of this holder already there): the reading steps decide,
        // this node being the one this attempt created.
        created = Some(stat.czxid);
    }
    // A waiter its subscription saw become first: its place becomes the hold, one write
    // (Curator's waiter reads the children once more instead; baton must write the hold's
    // lease), guarded on the place's version.
    if let Some(m) = conn.mine.forget(&q.dir, &req.holder).filter(|m| m.first && req.enqueue && kind != Kind::Read) {
        let data = Data { count: 1, lease_ms: req.lease_ms, ..m.data.clone() };
        match conn.bounded(c.set_data(&m.path, &data.bytes(), Some(m.version))).await {
            Ok(stat) => {
                conn.saw_mtime(stat.mtime);
                let token = u64::try_from(m.czxid).unwrap_or(0);
                conn.mine.remember(&q.dir, &req.holder, m.rewritten(&stat, data));
                return Ok(Attempt::Granted { token, count: 1, fresh: true });
            }
            Err(zk::Error::BadVersion | zk::Error::NoNode) => {}
            Err(x) => return Err(conn.err("grant", x)),
        }
    }
    let r = step(conn, &c, q, kind, req, created).await;
    if r.is_err() {
        conn.mine.forget(&q.dir, &req.holder);
    }
    r
}

/// Attempts that read the queue and its nodes' data first. `created`: the node this
/// attempt already made, if any (its grant is fresh, not a re-entry). Records the holder's
/// node when it holds or keeps its place.
async fn step(
    conn: &Conn,
    c: &zk::Client,
    q: &Queue,
    kind: Kind,
    req: &Request,
    created: Option<i64>,
) -> Result<Attempt> {
    let mut created = created;
    let mut synced = false;
    for _ in 0..RACES {
        let es = entries::live(conn, c, &q.dir, q.kinds).await?;
        if let Err(e) = check_modes(&es, kind, req) {
            if let Some(mine) = created.and_then(|z| es.iter().find(|x| x.stat.czxid == z)) {
                drop_node(conn, c, &mine.path(&q.dir)).await?;
            }
            return Err(e);
        }
        let Some(i) = es.iter().position(|e| e.node.kind == kind && e.is(&req.holder)) else {
            if blocked(&es, es.len(), kind, writer_of(req)) && !req.enqueue {
                // A "busy" read from a follower may predate a release made through
                // another server: a try answers busy only from a caught-up read.
                if !synced {
                    conn.caught_up(c, &q.dir).await?;
                    synced = true;
                    continue;
                }
                return Ok(Attempt::Busy { retry_ms: retry_ms(conn, &es, es.len()) });
            }
            // Optimistically written as held when nobody stands before it; the read after
            // the create says whether it really is.
            let free = !blocked(&es, es.len(), kind, writer_of(req));
            let data = Data {
                holder: req.holder.clone(),
                count: u32::from(free),
                lease_ms: if free { req.lease_ms } else { place_ms(req) },
                permits: None,
            };
            let (stat, _) = entries::create(conn, c, &q.dir, kind, &data).await?;
            created = Some(stat.czxid);
            continue;
        };
        let e = &es[i];
        // The holder has an older node than the one this attempt created: a first read
        // was stale (an owner shared with another client, whose node came through another
        // server), or a first attempt created its node without reading. The older node
        // stands; the new one goes.
        if let Some(dup) = created.and_then(|z| es.iter().find(|x| x.stat.czxid == z && x.stat.czxid != e.stat.czxid)) {
            drop_node(conn, c, &dup.path(&q.dir)).await?;
            created = None;
        }
        let Some(d) = e.data.clone() else { return Err(raced(conn)) };
        let path = e.path(&q.dir);
        let mine_now = created == Some(e.stat.czxid);
        if !blocked(&es, i, kind, writer_of(req)) {
            let token = e.token();
            if d.count > 0 && mine_now {
                conn.mine.remember(&q.dir, &req.holder, e.written(&q.dir, &e.stat, d.clone()));
                return Ok(Attempt::Granted { token, count: d.count, fresh: true });
            }
            let (count, fresh) = if d.count > 0 { (d.count.checked_add(1), false) } else { (Some(1), true) };
            let count = count.ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
            let lease_ms = if fresh { req.lease_ms } else { d.lease_ms.max(req.lease_ms) };
            let nd = Data { count, lease_ms, ..d };
            match conn.bounded(c.set_data(&path, &nd.bytes(), Some(e.stat.version))).await {
                Ok(stat) => {
                    conn.saw_mtime(stat.mtime);
                    conn.mine.remember(&q.dir, &req.holder, e.written(&q.dir, &stat, nd));
                    return Ok(Attempt::Granted { token, count, fresh: fresh || mine_now });
                }
                Err(zk::Error::BadVersion | zk::Error::NoNode) => continue,
                Err(x) => return Err(conn.err("grant", x)),
            }
        }
        let retry = retry_ms(conn, &es, i);
        if !req.enqueue || kind == Kind::Read {
            // Not queueing: the node goes again.
            if d.count == 0 || mine_now {
                match conn.bounded(c.delete(&path, Some(e.stat.version))).await {
                    Ok(()) | Err(zk::Error::NoNode) => {}
                    Err(zk::Error::BadVersion) => continue,
                    Err(x) => return Err(conn.err("delete", x)),
                }
            }
            return Ok(Attempt::Busy { retry_ms: retry });
        }
        // Waiting: a queue place, refreshed when a third of its ttl has gone.
        let place = place_ms(req);
        let stale = e.left_ms(conn.server_now()).is_none_or(|l| l < i64::try_from(place * 2 / 3).unwrap_or(0));
        if d.count > 0 || stale || d.lease_ms != place {
            let nd = Data { count: 0, lease_ms: place, ..d };
            match conn.bounded(c.set_data(&path, &nd.bytes(), Some(e.stat.version))).await {
                Ok(stat) => {
                    conn.saw_mtime(stat.mtime);
                    conn.mine.remember(&q.dir, &req.holder, e.written(&q.dir, &stat, nd));
                }
                Err(zk::Error::BadVersion | zk::Error::NoNode) => continue,
                Err(x) => return Err(conn.err("refresh the queue place", x)),
            }
        } else {
            conn.mine.remember(&q.dir, &req.holder, e.written(&q.dir, &e.stat, d));
        }
        return Ok(Attempt::Busy { retry_ms: retry });
    }
    Err(raced(conn))
}

/// Deletes a node this attempt made and must not keep.
async fn drop_node(conn: &Conn, c: &zk::Client, path: &str) -> Result<()> {
    match conn.bounded(c.delete(path, None)).await {
        Ok(()) | Err(zk::Error::NoNode) => Ok(()),
        Err(x) => Err(conn.err("delete a second node", x)),
    }
}

/// The state machine's refusals: one holder id in two modes, and an upgrade.
fn check_modes(es: &[Entry], kind: Kind, req: &Request) -> Result<()> {
    if kind == Kind::Write {
        let reader = read_holder_of(&req.holder);
        if es.iter().any(|e| e.node.kind == Kind::Read && e.is(reader) && e.held()) {
            return Err(Error::invalid_argument(
                "cannot upgrade a read hold to a write hold (it would wait on itself); release the read lock first",
            ));
        }
    }
    if let Some(e) = es.iter().find(|e| e.node.kind != kind && e.is(&req.holder) && e.held()) {
        let mode = if e.node.kind == Kind::Write { "write" } else { "read" };
        return Err(Error::invalid_argument(format!("holder already holds this key in {mode} mode")));
    }
    Ok(())
}

/// `holder`'s node in `q`, granted (`held`) or waiting.
async fn own(conn: &Conn, c: &zk::Client, q: &Queue, holder: &str, held: bool) -> Result<Option<Entry>> {
    Ok(entries::of_holder(conn, c, &q.dir, q.kinds, holder, |e| e.held() == held).await?.into_iter().next())
}

/// Extends `holder`'s lease: its node's data rewritten (a new `mtime`).
pub(crate) async fn renew(conn: &Conn, q: &Queue, holder: &str, lease_ms: u64) -> Result<bool> {
    let c = conn.client().await?;
    // Straight to the node as this client last wrote it; a version moved on (another
    // client's step for a shared owner) reads the queue instead.
    if let Some(m) = conn.mine.forget(&q.dir, holder).filter(|m| m.held_at(conn.server_now())) {
        let nd = Data { lease_ms, ..m.data.clone() };
        match conn.bounded(c.set_data(&m.path, &nd.bytes(), Some(m.version))).await {
            Ok(stat) => {
                conn.saw_mtime(stat.mtime);
                conn.mine.remember(&q.dir, holder, m.rewritten(&stat, nd));
                return Ok(true);
            }
            Err(zk::Error::NoNode) => return Ok(false),
            Err(zk::Error::BadVersion) => {}
            Err(x) => return Err(conn.err("renew", x)),
        }
    }
    let Some(e) = own(conn, &c, q, holder, true).await? else { return Ok(false) };
    let Some(d) = e.data.clone() else { return Ok(false) };
    if e.expired(conn.server_now()) {
        return Ok(false);
    }
    let nd = Data { lease_ms, ..d };
    match conn.bounded(c.set_data(&e.path(&q.dir), &nd.bytes(), Some(e.stat.version))).await {
        Ok(stat) => {
            conn.saw_mtime(stat.mtime);
            conn.mine.remember(&q.dir, holder, e.written(&q.dir, &stat, nd));
            Ok(true)
        }
        Err(zk::Error::NoNode) => Ok(false),
        // Changed meanwhile (a concurrent step of the same holder, or a stale read of a
        // node written through another server): read again, caught up.
        Err(zk::Error::BadVersion) => {
            conn.caught_up(&c, &q.dir).await?;
            Box::pin(renew(conn, q, holder, lease_ms)).await
        }
        Err(x) => Err(conn.err("renew", x)),
    }
}

/// Releases `count` holds of `holder` (`u32::MAX`: all).
pub(crate) async fn release(conn: &Conn, q: &Queue, holder: &str, count: u32) -> Result<Released> {
    let c = conn.client().await?;
    // A lock's single hold, as this client last wrote it: one `multi` deletes the node
    // (guarded on that version) and records its token (Curator's release: one delete). The
    // record needs no read first: a lock's holds never overlap, so no smaller token can be
    // released after a larger one (a holder whose node was deleted when its lease ended
    // finds it gone). Anything else reads the queue.
    if let Some(m) = conn.mine.forget(&q.dir, holder) {
        if m.kind == Kind::Lock
            && m.data.count == 1
            && (count == 1 || count == u32::MAX)
            && m.held_at(conn.server_now())
        {
            let token = u64::try_from(m.czxid).unwrap_or(0);
            let mut w = c.new_multi_writer();
            w.add_delete(&m.path, Some(m.version)).map_err(|x| conn.err("release", x))?;
            w.add_set_data(&q.dir, token.to_string().as_bytes(), None).map_err(|x| conn.err("record the token", x))?;
            match conn.bounded(async { w.commit().await.map_err(zk::Error::from) }).await {
                Ok(_) => return Ok(Released::Freed),
                Err(zk::Error::NoNode | zk::Error::BadVersion) => {}
                Err(x) => return Err(conn.err("release", x)),
            }
        }
    }
    for race in 0..RACES {
        // A lost race may have been a stale read of a node written through another server.
        if race > 0 {
            conn.caught_up(&c, &q.dir).await?;
        }
        let Some(e) = own(conn, &c, q, holder, true).await? else { return Ok(Released::NotHeld) };
        let Some(d) = e.data.clone() else { return Ok(Released::NotHeld) };
        if e.expired(conn.server_now()) {
            return Ok(Released::NotHeld);
        }
        if count != u32::MAX && count < d.count {
            let nd = Data { count: d.count - count, ..d };
            match conn.bounded(c.set_data(&e.path(&q.dir), &nd.bytes(), Some(e.stat.version))).await {
                Ok(_) => return Ok(Released::StillHeld(nd.count)),
                Err(zk::Error::NoNode) => return Ok(Released::NotHeld),
                Err(zk::Error::BadVersion) => continue,
                Err(x) => return Err(conn.err("release", x)),
            }
        }
        if entries::delete_recording(conn, &c, &q.dir, &e).await? {
            return Ok(Released::Freed);
        }
    }
    Err(raced(conn))
}

/// Gives up `holder`'s queue place (a waiting node), if any.
pub(crate) async fn leave_queue(conn: &Conn, q: &Queue, holder: &str) -> Result<()> {
    let c = conn.client().await?;
    conn.mine.forget(&q.dir, holder);
    if let Some(e) = own(conn, &c, q, holder, false).await? {
        match conn.bounded(c.delete(&e.path(&q.dir), Some(e.stat.version))).await {
            Ok(()) | Err(zk::Error::NoNode | zk::Error::BadVersion) => {}
            Err(x) => return Err(conn.err("leave the queue", x)),
        }
    }
    Ok(())
}
