//! `set-nx-px`: one atomic `SET NX PX` with a value every client shares.

use std::time::Duration;

use async_trait::async_trait;

use crate::lab_lock::LabLock;
use crate::raw::Raw;
use crate::setnx::SHARED_VALUE;
use baton::FencingToken;
use baton::Result;

/// `SET key 123 NX PX ttl`; `DEL key` to release.
///
/// **Guarantees:** one holder at a time while holders finish within their ttl; a holder
/// that dies frees the lock after the ttl (taking and expiring are one command).
///
/// **Breaks:** every client writes the same value, so a holder cannot tell its lock from
/// its successor's: a slow holder whose ttl ran out (A) deletes the lock its successor
/// (B) took meanwhile, and a third client (C) gets it while B still works. Comparing
/// the value before the `DEL` would change nothing: it is everyone's. No fencing token,
/// one node.
pub struct SetNxPx {
    raw: Raw,
}

impl SetNxPx {
    pub(crate) async fn open(url: &str, key: &str) -> Result<SetNxPx> {
        Ok(SetNxPx { raw: Raw::open(url, key).await? })
    }
}

#[async_trait]
impl LabLock for SetNxPx {
    async fn acquire(&mut self, ttl: Duration) -> Result<bool> {
        self.raw.set_nx_px(SHARED_VALUE, ttl).await
    }

    async fn release(&mut self) -> Result<bool> {
        self.raw.del().await
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
