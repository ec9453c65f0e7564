//! `setnx`: the simplest Redis lock, `SETNX` with no expiry.

use std::time::Duration;

use async_trait::async_trait;

use crate::lab_lock::LabLock;
use crate::raw::Raw;
use baton::FencingToken;
use baton::Result;

/// The value every client of the shared-value schemes stores alike.
pub(crate) const SHARED_VALUE: &str = "123";

/// `SETNX key 123` to take the lock, `DEL key` to give it back.
///
/// **Guarantees:** while every holder lives and releases once, one holder at a time
/// (`SETNX` is atomic).
///
/// **Breaks:** the key never expires, so a holder that dies holding it (an exception
/// before the `DEL`, a crashed server) blocks everyone for ever. The release is a bare `DEL`
/// that checks no owner: a late retry of a release deletes whoever holds the lock now. No
/// fencing token, one node.
pub struct Setnx {
    raw: Raw,
}

impl Setnx {
    pub(crate) async fn open(url: &str, key: &str) -> Result<Setnx> {
        Ok(Setnx { raw: Raw::open(url, key).await? })
    }
}

#[async_trait]
impl LabLock for Setnx {
    async fn acquire(&mut self, _ttl: Duration) -> Result<bool> {
        self.raw.setnx(SHARED_VALUE).await
    }

    async fn release(&mut self) -> Result<bool> {
        self.raw.del().await
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
