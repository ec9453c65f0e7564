//! The waiting queue of `FairLock` (`RFairLock`'s list `redisson_lock_queue:{N}` of holder
//! ids in arrival order, and zset `redisson_lock_timeout:{N}` of id → place expiry), also
//! the shape of the read-write lock's waiting-writer queue. A fair waiter listens on its
//! own channel, as `RFairLock` waiters do: a release wakes the head of the queue only.

use super::super::conn::Conn;
use super::super::keys;
use super::Lua;
use super::lock::LockKeys;
use crate::error::Result;
use crate::key::Family;

/// KEYS: queue, timeouts, hash. ARGV: holder, channel.
pub(super) static LEAVE: Lua = lua!("lock_leave");

/// Gives up `holder`'s place; the next head is told when the lock is free.
pub(crate) async fn leave(c: &Conn, n: &str, holder: &str) -> Result<()> {
    let k = LockKeys::new(n);
    c.eval(
        &LEAVE,
        &[k.queue.as_bytes(), k.timeouts.as_bytes(), k.hash.as_bytes()],
        &[holder.as_bytes(), k.channel.as_bytes()],
    )
    .await?;
    Ok(())
}

/// The channel the fair waiter `holder` of the lock `n` listens on.
pub(crate) fn waiter_channel(n: &str, holder: &str) -> String {
    format!("{}:{holder}", keys::channel(Family::Lock, n))
}
