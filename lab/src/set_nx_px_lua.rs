//! `set-nx-px-lua`: a unique value, released by an atomic compare-and-delete script: the
//! safe simple lock on one node.

use std::time::Duration;

use async_trait::async_trait;

use crate::lab_lock::LabLock;
use crate::raw::Raw;
use baton::FencingToken;
use baton::Result;

/// The usual compare-and-delete, word for word.
const RELEASE: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";

/// `SET key <uuid> NX PX ttl`; release: one Lua script deleting the key only while it
/// holds this client's uuid. The layout of redis-py's `Lock`, redsync and node-redlock
/// (baton's `redis://…?scheme=simple` adds fencing to it).
///
/// **Guarantees:** one holder at a time while holders finish within their ttl; a holder
/// that dies frees the lock after the ttl; a release never deletes another client's lock,
/// however late it comes.
///
/// **Breaks:** a holder paused past its ttl still *believes* it holds the lock and its
/// writes land after its successor's: the random value orders nothing, so a resource
/// cannot reject them. One node: a restart without persistence, or a replica promoted before the
/// grant reached it, hands the lock to a second client.
pub struct SetNxPxLua {
    raw: Raw,
    value: String,
}

impl SetNxPxLua {
    pub(crate) async fn open(url: &str, key: &str) -> Result<SetNxPxLua> {
        Ok(SetNxPxLua { raw: Raw::open(url, key).await?, value: uuid::Uuid::new_v4().to_string() })
    }
}

#[async_trait]
impl LabLock for SetNxPxLua {
    async fn acquire(&mut self, ttl: Duration) -> Result<bool> {
        self.raw.set_nx_px(&self.value, ttl).await
    }

    async fn release(&mut self) -> Result<bool> {
        let mut c = redis::cmd("EVAL");
        c.arg(RELEASE).arg(1).arg(&self.raw.key).arg(&self.value);
        let n: i64 = self.raw.query(&c).await?;
        Ok(n == 1)
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
