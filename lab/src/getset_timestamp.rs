//! `getset-timestamp`: the old recipe from before `SET NX PX`: `SETNX` with the expiry
//! timestamp as the value, taken over by `GETSET` once that timestamp passed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Clock;
use crate::hooks::{Hooks, Point};
use crate::lab_lock::LabLock;
use crate::raw::Raw;
use baton::FencingToken;
use baton::Result;

/// `SETNX key <now + ttl + 1>`; when that fails, `GET key`, and if the timestamp read is
/// past (by this client's clock), `GETSET key <now + ttl + 1>`: the lock is taken when
/// `GETSET` returns the very timestamp read (only one of several racing takers sees it).
/// Release: a bare `DEL key`.
///
/// **Guarantees:** one holder at a time while holders finish in time *and every client's
/// clock agrees*; a dead holder's lock is taken over once its timestamp passed; of several
/// clients taking over one expired lock at once, exactly one wins.
///
/// **Breaks:** expiry is judged by each client's clock: a client whose clock runs ahead
/// takes over a live lock. The losers of a takeover race still overwrite the timestamp
/// (the winner's expiry moves). The lock has no owner: a holder that outlived its
/// timestamp deletes its successor's lock with its `DEL`. No fencing token, one node.
pub struct GetsetTimestamp {
    raw: Raw,
    hooks: Hooks,
    clock: Arc<Clock>,
}

impl GetsetTimestamp {
    pub(crate) async fn open(url: &str, key: &str, hooks: Hooks, clock: Arc<Clock>) -> Result<GetsetTimestamp> {
        Ok(GetsetTimestamp { raw: Raw::open(url, key).await?, hooks, clock })
    }
}

#[async_trait]
impl LabLock for GetsetTimestamp {
    async fn acquire(&mut self, ttl: Duration) -> Result<bool> {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let expires = self.clock.now_ms().saturating_add(ttl_ms).saturating_add(1).to_string();
        if self.raw.setnx(&expires).await? {
            return Ok(true);
        }
        let current: Option<String> = self.raw.query(&self.raw.cmd("GET")).await?;
        let Some(current) = current else { return Ok(false) };
        // A value that is not a timestamp is someone else's lock of another kind: not ours to take.
        if current.parse::<i64>().map_or(true, |t| t >= self.clock.now_ms()) {
            return Ok(false);
        }
        self.hooks.at(Point::AfterGet).await?;
        let mut c = self.raw.cmd("GETSET");
        c.arg(&expires);
        let old: Option<String> = self.raw.query(&c).await?;
        Ok(old.as_deref() == Some(current.as_str()))
    }

    async fn release(&mut self) -> Result<bool> {
        self.raw.del().await
    }

    fn token(&self) -> Option<FencingToken> {
        None
    }
}
