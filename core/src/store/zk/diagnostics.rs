//! The ZooKeeper store's bench hooks (feature `bench`): the yardsticks of a lock's requests,
//! with this client's session — the floor an uncontended acquire + release stands on.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use zookeeper_client as zk;

use super::Zk;
use super::entries;
use super::mine::Data;
use super::path::{self, Kind};
use crate::error::Result;
use crate::store::Diagnostics;

#[async_trait]
impl Diagnostics for Zk {
    /// The requests Curator's `InterProcessMutex` makes for one uncontended cycle, as baton
    /// makes them: the protected ephemeral-sequential `create` of a contender node, the
    /// `getChildren` of its parent, and the `delete` of the node.
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, Duration)>> {
        let conn = &*self.conn;
        let c = conn.client().await?;
        let dir = path::of_name(&format!("{name}/yardstick"));
        let data = Data { holder: "yardstick".into(), count: 1, lease_ms: 30_000, permits: None };
        let t0 = Instant::now();
        let (_, node) = entries::create(conn, &c, &dir, Kind::Lock, &data).await?;
        let create = t0.elapsed();
        let t1 = Instant::now();
        conn.bounded(c.list_children(&dir)).await.map_err(|e| conn.err("list", e))?;
        let list = t1.elapsed();
        let t2 = Instant::now();
        match conn.bounded(c.delete(&format!("{dir}/{node}"), None)).await {
            Ok(()) | Err(zk::Error::NoNode) => {}
            Err(e) => return Err(conn.err("delete", e)),
        }
        Ok(vec![("create", create), ("get_children", list), ("delete", t2.elapsed())])
    }
}
