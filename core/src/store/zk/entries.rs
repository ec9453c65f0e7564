//! The contender nodes of one directory with their data, as one snapshot (a `multi` read).
//!
//! Curator writes the client's address as a contender node's data and never reads it;
//! baton writes `{"holder":…,"count":…,"lease_ms":…}`: the holder id (so release, renewal
//! and re-entry by holder id work from any process), the hold count (`0` while waiting) and
//! the lease; a semaphore's lease adds `"permits"`, the semaphore's size. A baton node whose `mtime + lease_ms` has passed on the server's clock is
//! expired: whoever sees it deletes it (guarded on its version, so a renewal that got there
//! first wins). A node without baton data (a Curator contender) lives as long as its
//! session, as in Curator.

use zookeeper_client as zk;

use super::conn::Conn;
use super::mine::{Data, Mine};
use super::path::{self, Kind, Node};
use crate::error::Result;

/// One contender node, read.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) node: Node,
    /// `None` for a node baton did not write.
    pub(crate) data: Option<Data>,
    pub(crate) stat: zk::Stat,
}

impl Entry {
    /// Milliseconds left of a baton node's lease at server time `now` (`None`: no lease).
    /// `now` is local time plus an estimated offset, a few ms off either way, so the
    /// figure is capped at the lease itself: time left never exceeds the lease granted.
    pub(crate) fn left_ms(&self, now: i64) -> Option<i64> {
        let d = self.data.as_ref()?;
        let lease = i64::try_from(d.lease_ms).unwrap_or(i64::MAX);
        Some(self.stat.mtime.saturating_add(lease).saturating_sub(now).min(lease))
    }

    pub(crate) fn expired(&self, now: i64) -> bool {
        self.left_ms(now).is_some_and(|l| l <= 0)
    }

    /// The owner other clients see: the holder id, or `zk:<node name>` for Curator's.
    pub(crate) fn owner(&self) -> String {
        match &self.data {
            Some(d) => d.holder.clone(),
            None => format!("zk:{}", self.node.name),
        }
    }

    pub(crate) fn token(&self) -> u64 {
        u64::try_from(self.stat.czxid).unwrap_or(0)
    }

    /// Whether this is `holder`'s node (by its protected-mode id and its data).
    pub(crate) fn is(&self, holder: &str) -> bool {
        self.data.as_ref().is_some_and(|d| d.holder == holder)
            && self.node.id.as_deref() == Some(path::protected_id(holder).as_str())
    }

    /// Granted (a Curator node counts as granted wherever it stands).
    pub(crate) fn held(&self) -> bool {
        self.data.as_ref().is_none_or(|d| d.count > 0)
    }

    pub(crate) fn count(&self) -> u32 {
        self.data.as_ref().map_or(1, |d| d.count)
    }

    pub(crate) fn path(&self, dir: &str) -> String {
        format!("{dir}/{}", self.node.name)
    }

    /// This node as this client just wrote it, leaving `stat` and `data` on it.
    pub(crate) fn written(&self, dir: &str, stat: &zk::Stat, data: Data) -> Mine {
        Mine {
            path: self.path(dir),
            kind: self.node.kind,
            version: stat.version,
            czxid: self.stat.czxid,
            mtime: stat.mtime,
            data,
            first: false,
        }
    }
}

/// The contenders of `kinds` under `dir`, in sequence order, in one snapshot.
pub(crate) async fn read(conn: &Conn, c: &zk::Client, dir: &str, kinds: &[Kind]) -> Result<Vec<Entry>> {
    let children = match conn.bounded(c.list_children(dir)).await {
        Ok(v) => v,
        Err(zk::Error::NoNode) => return Ok(Vec::new()),
        Err(e) => return Err(conn.err("list", e)),
    };
    let nodes = path::contenders(&children, kinds);
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = c.new_multi_reader();
    for n in &nodes {
        r.add_get_data(&format!("{dir}/{}", n.name)).map_err(|e| conn.err("read", e))?;
    }
    let results = conn.bounded(r.commit()).await.map_err(|e| conn.err("read", e))?;
    Ok(nodes
        .into_iter()
        .zip(results)
        .filter_map(|(node, res)| match res {
            zk::MultiReadResult::Data { data, stat } => {
                Some(Entry { data: serde_json::from_slice::<Data>(&data).ok(), node, stat })
            }
            _ => None,
        })
        .collect())
}

/// `holder`'s nodes under `dir` that `keep` accepts. When the session's server shows none,
/// they are read again after a `sync`: a follower answers from its own copy, and the node
/// may have been written through another server (a permit released by id from another
/// client, an owner shared by two clients), so "none" read there may be stale.
pub(crate) async fn of_holder(
    conn: &Conn,
    c: &zk::Client,
    dir: &str,
    kinds: &[Kind],
    holder: &str,
    keep: impl Fn(&Entry) -> bool,
) -> Result<Vec<Entry>> {
    let pick = |es: Vec<Entry>| es.into_iter().filter(|e| e.is(holder) && keep(e)).collect::<Vec<_>>();
    let first = pick(read(conn, c, dir, kinds).await?);
    if !first.is_empty() {
        return Ok(first);
    }
    conn.caught_up(c, dir).await?;
    Ok(pick(read(conn, c, dir, kinds).await?))
}

/// [`read`], with expired baton nodes deleted (each guarded on the version read).
pub(crate) async fn live(conn: &Conn, c: &zk::Client, dir: &str, kinds: &[Kind]) -> Result<Vec<Entry>> {
    let es = read(conn, c, dir, kinds).await?;
    let now = conn.server_now();
    let mut out = Vec::with_capacity(es.len());
    for e in es {
        if !e.expired(now) {
            out.push(e);
            continue;
        }
        match conn.bounded(c.delete(&e.path(dir), Some(e.stat.version))).await {
            Ok(()) | Err(zk::Error::NoNode) => {}
            // Renewed meanwhile: still a contender.
            Err(zk::Error::BadVersion) => out.push(e),
            Err(err) => return Err(conn.err("delete an expired node", err)),
        }
    }
    Ok(out)
}

/// The last token recorded in `dir`'s own data (0 when none).
pub(crate) async fn fence(conn: &Conn, c: &zk::Client, dir: &str) -> Result<u64> {
    match conn.bounded(c.get_data(dir)).await {
        Ok((d, _)) => Ok(std::str::from_utf8(&d).ok().and_then(|s| s.parse().ok()).unwrap_or(0)),
        Err(zk::Error::NoNode) => Ok(0),
        Err(e) => Err(conn.err("read the last token", e)),
    }
}

/// Deletes `e` (guarded on its version) and records its token in `dir` when it is the
/// largest seen, in one `multi`. False when the node changed or went meanwhile.
pub(crate) async fn delete_recording(conn: &Conn, c: &zk::Client, dir: &str, e: &Entry) -> Result<bool> {
    let token = e.token();
    let record = token > fence(conn, c, dir).await?;
    let mut w = c.new_multi_writer();
    w.add_delete(&e.path(dir), Some(e.stat.version)).map_err(|x| conn.err("delete", x))?;
    if record {
        w.add_set_data(dir, token.to_string().as_bytes(), None).map_err(|x| conn.err("record the token", x))?;
    }
    match conn.bounded(async { w.commit().await.map_err(zk::Error::from) }).await {
        Ok(_) => Ok(true),
        Err(zk::Error::NoNode | zk::Error::BadVersion) => Ok(false),
        Err(x) => Err(conn.err("delete", x)),
    }
}

/// Creates `holder`'s ephemeral-sequential node `_c_<id>-<lock name>` under `dir`, making
/// `dir` (a container, as Curator's `creatingParentContainersIfNeeded`) when missing; its
/// stat and its name.
pub(crate) async fn create(
    conn: &Conn,
    c: &zk::Client,
    dir: &str,
    kind: Kind,
    data: &Data,
) -> Result<(zk::Stat, String)> {
    let p = path::create_path(dir, &data.holder, kind);
    let opts = zk::CreateMode::EphemeralSequential.with_acls(conn.acls());
    for _ in 0..3 {
        match conn.bounded(c.create(&p, &data.bytes(), &opts)).await {
            Ok((stat, seq)) => {
                conn.saw_mtime(stat.mtime);
                let name = format!("{}{seq}", p.rsplit('/').next().unwrap_or_default());
                return Ok((stat, name));
            }
            Err(zk::Error::NoNode) => mkdir(conn, c, dir).await?,
            Err(e) => return Err(conn.err("create", e)),
        }
    }
    Err(crate::error::Error::backend(format!("{}: `{dir}` keeps vanishing", conn.cfg.store)))
}

/// `create`, with the directory's children listed in the same round trip: the list is sent
/// behind the create without waiting for its reply, and ZooKeeper answers one session's
/// requests in order, so the list already holds the new node (Curator waits for the create
/// before it lists: one round trip more). A missing `dir` falls back to `create` (which
/// makes it) and a list of its own. A failed list deletes the node again, so a first
/// attempt leaves no node behind that nobody knows of.
pub(crate) async fn create_and_list(
    conn: &Conn,
    c: &zk::Client,
    dir: &str,
    kind: Kind,
    data: &Data,
) -> Result<(zk::Stat, String, Vec<String>)> {
    let p = path::create_path(dir, &data.holder, kind);
    let opts = zk::CreateMode::EphemeralSequential.with_acls(conn.acls());
    let created = c.create(&p, &data.bytes(), &opts);
    let listed = c.list_children(dir);
    let (stat, name) = match conn.bounded(created).await {
        Ok((stat, seq)) => {
            conn.saw_mtime(stat.mtime);
            (stat, format!("{}{seq}", p.rsplit('/').next().unwrap_or_default()))
        }
        Err(zk::Error::NoNode) => {
            drop(listed);
            let (stat, name) = create(conn, c, dir, kind, data).await?;
            let listed = c.list_children(dir);
            return finish_list(conn, c, dir, stat, name, listed).await;
        }
        Err(e) => return Err(conn.err("create", e)),
    };
    finish_list(conn, c, dir, stat, name, listed).await
}

async fn finish_list(
    conn: &Conn,
    c: &zk::Client,
    dir: &str,
    stat: zk::Stat,
    name: String,
    listed: impl Future<Output = std::result::Result<Vec<String>, zk::Error>>,
) -> Result<(zk::Stat, String, Vec<String>)> {
    match conn.bounded(listed).await {
        Ok(children) => Ok((stat, name, children)),
        Err(e) => {
            // Best effort, guarded on the created version (a shared owner's client may have
            // re-entered it meanwhile): the connection that failed the list may fail this
            // too, and the node then goes with the session or is found by its holder id.
            let _ = conn.bounded(c.delete(&format!("{dir}/{name}"), Some(stat.version))).await;
            Err(conn.err("list", e))
        }
    }
}

/// Makes `dir` and its parents as containers (ZooKeeper deletes an empty container later).
pub(crate) async fn mkdir(conn: &Conn, c: &zk::Client, dir: &str) -> Result<()> {
    let opts = zk::CreateMode::Container.with_acls(conn.acls());
    match conn.bounded(c.mkdir(dir, &opts)).await {
        Ok(()) | Err(zk::Error::NodeExists) => Ok(()),
        Err(e) => Err(conn.err("create the parent nodes", e)),
    }
}
