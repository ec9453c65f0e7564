//! `setnx-expire`: `SETNX` then `EXPIRE`, two commands (the usual code before Redis
//! 2.6.12 gave `SET` its `NX PX` options).

use std::time::Duration;

use async_trait::async_trait;

use crate::hooks::{Hooks, Point};
use crate::lab_lock::LabLock;
use crate::raw::{Raw, ms};
use crate::setnx::SHARED_VALUE;
use baton::FencingToken;
use baton::Result;

/// `SETNX key 123`, then `PEXPIRE key ttl` as a second command; `DEL key` to release.
///
/// **Guarantees:** one holder at a time while holders live; a holder that dies *after*
/// the `EXPIRE` frees the lock when the ttl runs out.
///
/// **Breaks:** the two steps are not atomic: a holder that dies between `SETNX` and
/// `EXPIRE` leaves a key without expiry, and the lock is never free again. The value is the same for every client and the
/// release a bare `DEL`: a holder that outlived its ttl deletes its successor's lock (as
/// `set-nx-px`). No fencing token, one node. The usual code sets the expiry in seconds; the
/// lab uses `PEXPIRE` for its sub-second ttls, which changes nothing of the above.
pub struct SetnxExpire {
    raw: Raw,
    hooks: Hooks,
}

impl SetnxExpire {
    pub(crate) async fn open(url: &str, key: &str, hooks: Hooks) -> Result<SetnxExpire> {
        Ok(SetnxExpire { raw: Raw::open(url, key).await?, hooks })
    }
}

#[async_trait]
impl LabLock for SetnxExpire {
    async fn acquire(&mut self, ttl: Duration) -> Result<bool> {
        if !self.raw.setnx(SHARED_VALUE).await? {
            return Ok(false);
        }
        self.hooks.at(Point::AfterSetnx).await?;
        let mut c = self.raw.cmd("PEXPIRE");
        c.arg(ms(ttl));
        let _: i64 = self.raw.query(&c).await?;
        Ok(true)
    }

    async fn release(&mut self) -> Result<bool> {
        self.raw.del().await
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
