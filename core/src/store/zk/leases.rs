//! Semaphore and PermitSemaphore on Curator's `InterProcessSemaphoreV2` layout: one
//! ephemeral-sequential node `NAME/leases/_c_<id>-lease-<seq>` per permit.
//!
//! Curator takes the internal mutex `NAME/locks`, creates its lease node and waits until
//! the leases number at most `maxLeases`. baton creates its permits' nodes in one `multi`
//! and is granted when, in a fresh listing, fewer than `limit` nodes precede its last one;
//! else it deletes them and waits on the leases' children, as Curator does. Of any set of
//! live leases the newest one's listing saw all the others, so a baton grant never exceeds
//! the limit, and a Curator grant counts baton's nodes like its own.

use zookeeper_client as zk;

use super::conn::Conn;
use super::entries::{self, Entry};
use super::mine::Data;
use super::path::{self, Kind};
use crate::error::{Error, Result};
use crate::state::{Attempt, Mode, Released, Request};

pub(crate) const KINDS: &[Kind] = &[Kind::Lease];

/// `NAME/leases`.
pub(crate) fn dir(name_path: &str) -> String {
    format!("{name_path}/leases")
}

/// One acquire attempt.
pub(crate) async fn acquire(conn: &Conn, dir: &str, name: &str, req: &Request) -> Result<Attempt> {
    let Mode::Permits { count, limit } = req.mode else {
        return Err(Error::invalid_argument("a semaphore takes permits"));
    };
    let c = conn.client().await?;
    let mut es = entries::live(conn, &c, dir, KINDS).await?;
    let full = es.len() as u64 + u64::from(count) > u64::from(limit);
    if (!req.enqueue && full) || crate::state::check_size(name, recorded_size(&es), limit).is_err() {
        // A "full" read from a follower may predate a release made through another
        // server: a try answers busy, and any attempt refuses another size (the leases of
        // the old size may all be back), only from a caught-up read.
        conn.caught_up(&c, dir).await?;
        es = entries::live(conn, &c, dir, KINDS).await?;
    }
    crate::state::check_size(name, recorded_size(&es), limit)?;
    let mine: Vec<&Entry> = es.iter().filter(|e| e.is(&req.holder)).collect();
    if let Some(first) = mine.first() {
        // Re-entry of one holder id, as the state machine: one more, same token.
        let n = u32::try_from(mine.len()).unwrap_or(u32::MAX).saturating_add(1);
        let data = Data { holder: req.holder.clone(), count: 1, lease_ms: req.lease_ms, permits: Some(limit) };
        entries::create(conn, &c, dir, Kind::Lease, &data).await?;
        return Ok(Attempt::Granted { token: first.token(), count: n, fresh: false });
    }
    let used = es.len() as u64;
    if used + u64::from(count) > u64::from(limit) {
        return Ok(Attempt::Busy { retry_ms: None });
    }
    let data = Data { holder: req.holder.clone(), count: 1, lease_ms: req.lease_ms, permits: Some(limit) };
    let created = create_many(conn, &c, dir, &data, count).await?;
    let Some((last, _)) = created.last() else { return Ok(Attempt::Busy { retry_ms: None }) };
    let token = token_of(conn, &c, dir, &created).await?;
    let children = match conn.bounded(c.list_children(dir)).await {
        Ok(v) => v,
        Err(e) => return Err(conn.err("list the leases", e)),
    };
    let nodes = path::contenders(&children, KINDS);
    let last_seq = path::parse(last, KINDS).map_or(i64::MAX, |n| n.seq);
    let before = nodes.iter().filter(|n| n.seq <= last_seq).count() as u64;
    // The size rule, decided by the same listing as the grant: the leases ahead of ours
    // that the first read did not see may record another size (granted since); then the
    // oldest lease's size stands and ours go.
    let ours = |n: &str| created.iter().any(|(p, _)| p == n);
    let unseen = nodes.iter().any(|n| n.seq < last_seq && !ours(&n.name) && !es.iter().any(|e| e.node.name == n.name));
    let mut refused = None;
    if unseen {
        let ahead: Vec<Entry> = entries::live(conn, &c, dir, KINDS)
            .await?
            .into_iter()
            .filter(|e| e.node.seq < last_seq && !ours(&e.node.name))
            .collect();
        refused = crate::state::check_size(name, recorded_size(&ahead), limit).err();
    }
    if before <= u64::from(limit) && refused.is_none() {
        return Ok(Attempt::Granted { token, count, fresh: true });
    }
    let mut w = c.new_multi_writer();
    for (p, _) in &created {
        w.add_delete(&format!("{dir}/{p}"), None).map_err(|e| conn.err("delete", e))?;
    }
    match conn.bounded(async { w.commit().await.map_err(zk::Error::from) }).await {
        Ok(_) | Err(zk::Error::NoNode) => refused.map_or(Ok(Attempt::Busy { retry_ms: None }), Err),
        Err(e) => Err(conn.err("give the leases back", e)),
    }
}

/// The semaphore's size as the live leases record it: baton's leases record their grant's
/// (they agree, as each grant checks the leases ahead of it); Curator's record none.
pub(crate) fn recorded_size(es: &[Entry]) -> Option<u32> {
    es.iter().find_map(|e| e.data.as_ref().and_then(|d| d.permits))
}

/// The create zxid of the first of `created`: from the `multi`'s answer, or read when the
/// server left that stat out (ZOOKEEPER-4026).
async fn token_of(conn: &Conn, c: &zk::Client, dir: &str, created: &[(String, i64)]) -> Result<u64> {
    let Some((name, czxid)) = created.first() else { return Ok(0) };
    if *czxid > 0 {
        return Ok(u64::try_from(*czxid).unwrap_or(0));
    }
    match conn.bounded(c.check_stat(&format!("{dir}/{name}"))).await {
        Ok(Some(stat)) => Ok(u64::try_from(stat.czxid).unwrap_or(0)),
        Ok(None) => Ok(0),
        Err(e) => Err(conn.err("read the lease", e)),
    }
}

/// Creates `n` lease nodes in one `multi`; their names and create zxid.
async fn create_many(conn: &Conn, c: &zk::Client, dir: &str, data: &Data, n: u32) -> Result<Vec<(String, i64)>> {
    let p = path::create_path(dir, &data.holder, Kind::Lease);
    let opts = zk::CreateMode::EphemeralSequential.with_acls(conn.acls());
    for _ in 0..3 {
        let mut w = c.new_multi_writer();
        for _ in 0..n {
            w.add_create(&p, &data.bytes(), &opts).map_err(|e| conn.err("create", e))?;
        }
        match conn.bounded(async { w.commit().await.map_err(zk::Error::from) }).await {
            Ok(rs) => {
                let mut out = Vec::new();
                for r in rs {
                    if let zk::MultiWriteResult::Create { path, stat } = r {
                        conn.saw_mtime(stat.mtime);
                        let name = path.rsplit('/').next().unwrap_or_default().to_owned();
                        out.push((name, stat.czxid));
                    }
                }
                return Ok(out);
            }
            Err(zk::Error::NoNode) => entries::mkdir(conn, c, dir).await?,
            Err(e) => return Err(conn.err("create", e)),
        }
    }
    Err(Error::backend(format!("{}: `{dir}` keeps vanishing", conn.cfg.store)))
}

/// `holder`'s lease nodes.
async fn own(conn: &Conn, c: &zk::Client, dir: &str, holder: &str) -> Result<Vec<Entry>> {
    let now = conn.server_now();
    entries::of_holder(conn, c, dir, KINDS, holder, |e| !e.expired(now)).await
}

pub(crate) async fn renew(conn: &Conn, dir: &str, holder: &str, lease_ms: u64) -> Result<bool> {
    let c = conn.client().await?;
    let mine = own(conn, &c, dir, holder).await?;
    if mine.is_empty() {
        return Ok(false);
    }
    let mut w = c.new_multi_writer();
    for e in &mine {
        let d = Data {
            lease_ms,
            ..e.data.clone().unwrap_or_else(|| Data { holder: holder.into(), count: 1, lease_ms, permits: None })
        };
        w.add_set_data(&e.path(dir), &d.bytes(), None).map_err(|x| conn.err("renew", x))?;
    }
    match conn.bounded(async { w.commit().await.map_err(zk::Error::from) }).await {
        Ok(_) => Ok(true),
        Err(zk::Error::NoNode) => Ok(false),
        Err(e) => Err(conn.err("renew", e)),
    }
}

pub(crate) async fn release(conn: &Conn, dir: &str, holder: &str, count: u32) -> Result<Released> {
    let c = conn.client().await?;
    let mine = own(conn, &c, dir, holder).await?;
    let held = u32::try_from(mine.len()).unwrap_or(u32::MAX);
    if held == 0 {
        return Ok(Released::NotHeld);
    }
    if count != u32::MAX && count > held {
        return Err(Error::invalid_argument(format!("cannot release {count} permits: this holder holds {held}")));
    }
    let n = if count == u32::MAX { held } else { count };
    let token = mine.iter().map(Entry::token).max().unwrap_or(0);
    let record = token > entries::fence(conn, &c, dir).await?;
    let mut w = c.new_multi_writer();
    // The newest go first, so the token the rest report stays the first grant's.
    for e in mine.iter().rev().take(n as usize) {
        w.add_delete(&e.path(dir), None).map_err(|x| conn.err("release", x))?;
    }
    if record && n == held {
        w.add_set_data(dir, token.to_string().as_bytes(), None).map_err(|x| conn.err("release", x))?;
    }
    match conn.bounded(async { w.commit().await.map_err(zk::Error::from) }).await {
        Ok(_) if n == held => Ok(Released::Freed),
        Ok(_) => Ok(Released::StillHeld(held - n)),
        Err(zk::Error::NoNode) => Ok(Released::NotHeld),
        Err(e) => Err(conn.err("release", e)),
    }
}
