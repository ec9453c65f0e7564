//! `Client::fence` on ZooKeeper: the value of `KEY` in the persistent znode
//! `/%fence` + the name's path (`/%fence/orders/42`; no lock's znode starts with `/%fence`,
//! as direct names never start with `%`), its data `<token>\n<value>`. A write reads the
//! node, refuses a token below the one there, and writes guarded on the version it read
//! (a create when absent), so a write in between makes it read again.

use async_trait::async_trait;
use zookeeper_client as zk;

use super::Zk;
use super::path;
use crate::error::{Error, Result};
use crate::store::FenceOps;

/// Attempts of one write that lost a race before giving up.
const RACES: usize = 32;

fn node(key: &str) -> String {
    format!("/%fence{}", path::of_name(key))
}

/// `(token, value)` of a node's data (a node of another writer's format: token 0).
fn parse(data: &[u8]) -> (u64, String) {
    let s = String::from_utf8_lossy(data);
    match s.split_once('\n') {
        Some((t, v)) => (t.parse().unwrap_or(0), v.to_owned()),
        None => (0, s.into_owned()),
    }
}

#[async_trait]
impl FenceOps for Zk {
    async fn write(&self, key: &str, value: &str, token: u64) -> Result<bool> {
        let conn = &*self.conn;
        let c = conn.client().await?;
        let p = node(key);
        let data = format!("{token}\n{value}").into_bytes();
        for race in 0..RACES {
            // A race lost may have been a stale read of a write made through another member.
            if race > 0 {
                conn.caught_up(&c, "/").await?;
            }
            match conn.bounded(c.get_data(&p)).await {
                Ok((d, stat)) => {
                    if parse(&d).0 > token {
                        return Ok(false);
                    }
                    match conn.bounded(c.set_data(&p, &data, Some(stat.version))).await {
                        Ok(_) => return Ok(true),
                        Err(zk::Error::BadVersion | zk::Error::NoNode) => {}
                        Err(e) => return Err(conn.err("fenced write", e)),
                    }
                }
                Err(zk::Error::NoNode) => {
                    let opts = zk::CreateMode::Persistent.with_acls(conn.acls());
                    match conn.bounded(c.create(&p, &data, &opts)).await {
                        Ok(_) => return Ok(true),
                        Err(zk::Error::NodeExists) => {}
                        Err(zk::Error::NoNode) => {
                            let parent = p.rsplit_once('/').map_or("/", |(d, _)| d);
                            let opts = zk::CreateMode::Persistent.with_acls(conn.acls());
                            match conn.bounded(c.mkdir(parent, &opts)).await {
                                Ok(()) | Err(zk::Error::NodeExists) => {}
                                Err(e) => return Err(conn.err("create the fence's parents", e)),
                            }
                        }
                        Err(e) => return Err(conn.err("fenced write", e)),
                    }
                }
                Err(e) => return Err(conn.err("read the fence", e)),
            }
        }
        Err(Error::backend(format!("{}: too many conflicting fenced writes of `{key}` in a row", conn.cfg.store)))
    }

    async fn read(&self, key: &str) -> Result<Option<(String, u64)>> {
        let conn = &*self.conn;
        let c = conn.client().await?;
        let p = node(key);
        // Another client's write may have gone through another member.
        conn.caught_up(&c, "/").await?;
        match conn.bounded(c.get_data(&p)).await {
            Ok((d, _)) => {
                let (t, v) = parse(&d);
                Ok(Some((v, t)))
            }
            Err(zk::Error::NoNode) => Ok(None),
            Err(e) => Err(conn.err("read the fence", e)),
        }
    }
}
