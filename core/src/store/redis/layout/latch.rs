//! `CountDownLatch` in `RCountDownLatch`'s layout: the count as the plain string key `N`,
//! and `redisson_countdownlatch__channel__{N}` told when it is set and when it opens.

use super::super::conn::Conn;
use super::super::keys;
use super::super::reply::{int, uint};
use super::Lua;
use crate::error::{Error, Result};

/// KEYS: count. ARGV: new count, channel. `RCountDownLatch.trySetCount` (a count of zero
/// or below, which Redisson never leaves, counts as open).
pub(super) static SET: Lua = lua!("latch_set");

/// KEYS: count. ARGV: channel. `RCountDownLatch.countDown`, never below zero.
pub(super) static DOWN: Lua = lua!("latch_down");

/// Sets the count if the latch is open; true when it did.
pub(crate) async fn try_set(c: &Conn, n: &str, count: u64) -> Result<bool> {
    if i64::try_from(count).is_err() {
        return Err(Error::invalid_argument(format!("latch count {count} is too large for Redis (max {})", i64::MAX)));
    }
    let channel = keys::latch_channel(n);
    let v = c.eval(&SET, &[n.as_bytes()], &[count.to_string().as_bytes(), channel.as_bytes()]).await?;
    Ok(int(&v) == Some(1))
}

/// Counts down once; the count left.
pub(crate) async fn count_down(c: &Conn, n: &str) -> Result<u64> {
    let channel = keys::latch_channel(n);
    let v = c.eval(&DOWN, &[n.as_bytes()], &[channel.as_bytes()]).await?;
    uint(&v).ok_or_else(|| c.unexpected("count_down", &v))
}

/// The count now (0: open).
pub(crate) async fn count(c: &Conn, n: &str) -> Result<u64> {
    let v: Option<i64> = c.query(redis::cmd("GET").arg(n)).await?;
    Ok(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0))
}
