//! `?clock=`: whose clock scores fair-lock queue places (`redisson_lock_timeout:{N}`) and
//! permit expiries (`{N}:timeout`). `server` (the default): the server's `TIME`, one clock
//! for every client, so DESIGN.md's lease and queue guarantees hold whatever the clients'
//! clocks say. `client`: the caller's wall clock in ms — Redisson's exact form
//! (`RFairLock` and `RPermitExpirableSemaphore` score with `System.currentTimeMillis()`),
//! for deployments that mix in Redisson clients whose clocks disagree with the server's.
//! The gap (docs/redis-layout.md): a client whose clock runs ahead purges other clients'
//! places and permits early, one running behind keeps them late.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::url::StoreUrl;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Clock {
    Server,
    Client,
}

impl Clock {
    pub(super) fn parse(url: &StoreUrl) -> Result<Clock> {
        match url.option("clock") {
            None | Some("server") => Ok(Clock::Server),
            Some("client") => Ok(Clock::Client),
            Some(other) => Err(Error::invalid_argument(format!(
                "option `clock` of {url} is `server` (the default: the server's TIME) or `client` (Redisson's \
                 client-clock scores), not `{other}`"
            ))),
        }
    }

    /// The scripts' clock argument: empty for the server's `TIME`, else this machine's
    /// wall clock in ms since the epoch (what Redisson's `System.currentTimeMillis()`
    /// sends).
    pub(super) fn arg(self) -> String {
        match self {
            Clock::Server => String::new(),
            // A clock before 1970 is no clock: 0 purges nothing and scores from 0.
            Clock::Client => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()).to_string(),
        }
    }
}
