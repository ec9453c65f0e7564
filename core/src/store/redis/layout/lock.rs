//! `Lock` and `FairLock` in Redisson's `RLock` / `RFairLock` / `RFencedLock` layout: the
//! hash `N` (holder → hold count, the lease as its ttl), the fair queue (`fair`), the token
//! counter `redisson_lock_token:{N}`, and baton's side hash `{N}:baton`.
//!
//! A lock's fencing token is its counter: a fresh grant `INCR`s it and nothing else moves
//! it while the lock is held (Redisson's `RFencedLock.getToken` reads it the same way), so
//! a re-entry or `inspect` reads the holder's token back from it. The one exception is a
//! Redlock node that granted late, whose counter may stand above the round's token:
//! `fence` then records the token as `t:<holder>` in the side hash, which wins.

use std::time::Duration;

use redis::{Cmd, Value};

use super::super::config::Free;
use super::super::conn::{Conn, evalsha};
use super::super::keys::{meta, prefix_name, token_counter};
use super::super::reply::{self, bytes_u64, expiry, int, items, pairs, released, uint};
use super::{Lua, acquire_args, count_arg, floor_arg, ms, release_keys};
use crate::error::{Error, Result};
use crate::state::{Hold, HoldMode, KeyState, Mode, Released, Request};
use crate::store::redis::config::Clock;

/// The uncontended grant (no hash, no queue, no record) runs first, in four calls, before
/// the prelude's functions are even defined; what only the other paths read is packed into
/// one argument (every argument and reply element costs the server time on every call).
///
/// KEYS: hash, queue, timeouts, counter, meta.
/// ARGV: holder, lease ms, `<fair 0/1><enqueue 0/1>:<queue ttl ms>:<clock>:<channel>`.
pub(super) static ACQUIRE: Lua = lua!("token", "lock_acquire_fast", "prelude", "lock_acquire");

/// KEYS: hash, queue, timeouts, meta, and the counter unless `?free=keep`. ARGV: holder,
/// count (0: all), channel, clock.
/// The common release (no queue, no record) returns before the prelude is defined.
pub(super) static RELEASE: Lua = lua!("forget", "lock_release_fast", "prelude", "lock_release");

/// KEYS: hash, meta. ARGV: holder, lease ms.
pub(super) static RENEW: Lua = lua!("prelude", "lock_renew");

/// KEYS: hash, queue, timeouts, counter, meta. ARGV: clock.
/// Reply: {now, pttl, hgetall hash, lrange queue, zrange timeouts withscores, counter, hgetall meta}.
pub(super) static INSPECT: Lua = lua!("prelude", "lock_inspect");

/// The keys and channel of `RLock` / `RFairLock` / `RFencedLock`.
pub(crate) struct LockKeys {
    pub(crate) hash: String,
    pub(crate) queue: String,
    pub(crate) timeouts: String,
    pub(crate) counter: String,
    pub(crate) meta: String,
    /// `redisson_lock__channel:{N}`; a fair waiter listens on `…:{N}:<holder>`.
    pub(crate) channel: String,
}

impl LockKeys {
    pub(crate) fn new(name: &str) -> LockKeys {
        LockKeys {
            hash: name.to_owned(),
            queue: prefix_name("redisson_lock_queue", name),
            timeouts: prefix_name("redisson_lock_timeout", name),
            counter: token_counter(name),
            meta: meta(name),
            channel: prefix_name("redisson_lock__channel", name),
        }
    }
}

/// The raw reply of the acquire script (`reply::attempt` reads it).
pub(crate) async fn acquire(c: &Conn, n: &str, req: &Request, clock: Clock) -> Result<Value> {
    let fair = match req.mode {
        Mode::Exclusive => "0",
        Mode::Fair => "1",
        ref mode => return Err(Error::backend(format!("internal error: {mode:?} on a lock key"))),
    };
    let k = LockKeys::new(n);
    let lease = req.lease_ms.to_string();
    let enqueue = if req.enqueue { "1" } else { "0" };
    let qttl = req.queue_ttl_ms.to_string();
    // What only the contended paths read, as one argument (the script's `ARGV[3]`).
    let rest = [fair, enqueue, ":", &qttl, ":", &clock.arg(), ":", &k.channel].concat();
    let floor = floor_arg(req);
    c.eval(
        &ACQUIRE,
        &[k.hash.as_bytes(), k.queue.as_bytes(), k.timeouts.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
        &acquire_args(&[req.holder.as_bytes(), lease.as_bytes(), rest.as_bytes()], &floor),
    )
    .await
}

pub(crate) async fn release(c: &Conn, n: &str, holder: &str, count: u32, clock: Clock, free: Free) -> Result<Released> {
    let k = LockKeys::new(n);
    let v = c
        .eval(
            &RELEASE,
            &release_keys(&[&k.hash, &k.queue, &k.timeouts, &k.meta], &k.counter, free),
            &[holder.as_bytes(), count_arg(count).as_bytes(), k.channel.as_bytes(), clock.arg().as_bytes()],
        )
        .await?;
    released(c.store(), &v, count)
}

/// The renew call (for single renewals and pipelined batches).
pub(crate) fn renew(n: &str, holder: &str, lease: Duration) -> Cmd {
    let k = LockKeys::new(n);
    evalsha(&RENEW, &[k.hash.as_bytes(), k.meta.as_bytes()], &[holder.as_bytes(), ms(lease).to_string().as_bytes()])
}

/// The live state and the clock's `now`.
pub(crate) async fn inspect(c: &Conn, n: &str, clock: Clock) -> Result<(KeyState, u64)> {
    let k = LockKeys::new(n);
    let v = c
        .eval(
            &INSPECT,
            &[k.hash.as_bytes(), k.queue.as_bytes(), k.timeouts.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
            &[clock.arg().as_bytes()],
        )
        .await?;
    let bad = || c.unexpected("inspect", &v);
    let [now, pttl, hash, queue, zset, counter, meta] = items(&v).ok_or_else(bad)? else {
        return Err(bad());
    };
    let now = uint(now).ok_or_else(bad)?;
    let pttl = int(pttl).ok_or_else(bad)?;
    let tokens = pairs(meta);
    let fence = uint(counter).unwrap_or(0);
    let holds = pairs(hash)
        .into_iter()
        .filter_map(|(field, count)| {
            let holder = String::from_utf8_lossy(field).into_owned();
            // Recorded only where a Redlock node's counter passed it; else the counter.
            let token = tokens
                .iter()
                .find(|(f, _)| f.strip_prefix(b"t:") == Some(field))
                .and_then(|(_, t)| bytes_u64(t))
                .unwrap_or(fence);
            Some(Hold {
                holder,
                mode: HoldMode::Exclusive,
                count: u32::try_from(bytes_u64(count)?).unwrap_or(u32::MAX),
                token,
                expires_ms: expiry(now, pttl),
                value: None,
            })
        })
        .collect();
    Ok((KeyState { fence, holds, queue: reply::waiters(now, queue, zset), count: 0, size: None }, now))
}
