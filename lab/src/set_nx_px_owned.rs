//! `set-nx-px-owned`: a unique value, released by `GET`, compare, then `DEL`.

use std::time::Duration;

use async_trait::async_trait;

use crate::hooks::{Hooks, Point};
use crate::lab_lock::LabLock;
use crate::raw::Raw;
use baton::FencingToken;
use baton::Result;

/// `SET key <uuid> NX PX ttl`; release: `GET key`, and when it is still this client's
/// uuid, `DEL key`.
///
/// **Guarantees:** one holder at a time while holders finish within their ttl; a holder
/// that dies frees the lock after the ttl; a holder that finds someone else's uuid leaves
/// the lock alone.
///
/// **Breaks:** the check and the delete are two commands. A holder that read its own
/// uuid and is then delayed past its ttl (a GC pause, a slow network) deletes the lock
/// its successor took in the gap. No fencing token, one node.
pub struct SetNxPxOwned {
    raw: Raw,
    hooks: Hooks,
    value: String,
}

impl SetNxPxOwned {
    pub(crate) async fn open(url: &str, key: &str, hooks: Hooks) -> Result<SetNxPxOwned> {
        Ok(SetNxPxOwned { raw: Raw::open(url, key).await?, hooks, value: uuid::Uuid::new_v4().to_string() })
    }
}

#[async_trait]
impl LabLock for SetNxPxOwned {
    async fn acquire(&mut self, ttl: Duration) -> Result<bool> {
        self.raw.set_nx_px(&self.value, ttl).await
    }

    async fn release(&mut self) -> Result<bool> {
        let seen: Option<String> = self.raw.query(&self.raw.cmd("GET")).await?;
        if seen.as_deref() != Some(self.value.as_str()) {
            return Ok(false);
        }
        self.hooks.at(Point::BeforeDelete).await?;
        self.raw.del().await
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
