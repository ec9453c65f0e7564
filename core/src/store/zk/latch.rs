//! CountDownLatch, a layout of baton's own (Curator has no count-down latch): the
//! persistent znode `NAME/latch` holds the count in decimal; `set` creates it or rewrites
//! a zero, a count-down rewrites it guarded on the version read (`setData` with a version,
//! retried on `BadVersion`); waiters watch it with `getData`.

use zookeeper_client as zk;

use super::conn::Conn;
use super::entries;
use crate::error::{Error, Result};

const RACES: usize = 64;

pub(crate) fn node(name_path: &str) -> String {
    format!("{name_path}/latch")
}

/// The count and the version read (`None`: no node).
async fn read(conn: &Conn, c: &zk::Client, p: &str) -> Result<Option<(u64, i32)>> {
    match conn.bounded(c.get_data(p)).await {
        Ok((d, stat)) => {
            Ok(Some((std::str::from_utf8(&d).ok().and_then(|s| s.parse().ok()).unwrap_or(0), stat.version)))
        }
        Err(zk::Error::NoNode) => Ok(None),
        Err(e) => Err(conn.err("read the latch", e)),
    }
}

fn raced(conn: &Conn) -> Error {
    Error::backend(format!("{}: too many conflicting updates of one latch in a row", conn.cfg.store))
}

pub(crate) async fn try_set(conn: &Conn, p: &str, count: u64) -> Result<bool> {
    let c = conn.client().await?;
    for _ in 0..RACES {
        let r = match read(conn, &c, p).await? {
            None => {
                let opts = zk::CreateMode::Persistent.with_acls(conn.acls());
                match conn.bounded(c.create(p, count.to_string().as_bytes(), &opts)).await {
                    Ok(_) => return Ok(true),
                    Err(zk::Error::NoNode) => {
                        let parent = p.rsplit_once('/').map_or("/", |(d, _)| d);
                        entries::mkdir(conn, &c, parent).await?;
                        continue;
                    }
                    Err(e) => Err(e),
                }
            }
            Some((n, _)) if n > 0 => return Ok(false),
            Some((_, v)) => conn.bounded(c.set_data(p, count.to_string().as_bytes(), Some(v))).await.map(drop),
        };
        match r {
            Ok(()) => return Ok(true),
            Err(zk::Error::NodeExists | zk::Error::BadVersion | zk::Error::NoNode) => continue,
            Err(e) => return Err(conn.err("set the latch", e)),
        }
    }
    Err(raced(conn))
}

pub(crate) async fn count_down(conn: &Conn, p: &str) -> Result<u64> {
    let c = conn.client().await?;
    for _ in 0..RACES {
        let Some((n, v)) = read(conn, &c, p).await? else { return Ok(0) };
        if n == 0 {
            return Ok(0);
        }
        match conn.bounded(c.set_data(p, (n - 1).to_string().as_bytes(), Some(v))).await {
            Ok(_) => return Ok(n - 1),
            Err(zk::Error::BadVersion | zk::Error::NoNode) => continue,
            Err(e) => return Err(conn.err("count down", e)),
        }
    }
    Err(raced(conn))
}

pub(crate) async fn count(conn: &Conn, p: &str) -> Result<u64> {
    let c = conn.client().await?;
    conn.caught_up(&c, p).await?;
    Ok(read(conn, &c, p).await?.map_or(0, |(n, _)| n))
}
