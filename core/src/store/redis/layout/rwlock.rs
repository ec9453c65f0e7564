//! `RwLock` in Redisson's `RReadWriteLock` layout: the hash `N` (`mode` and holder → hold
//! count), one timeout key per hold (`{N}:<holder>:rwlock_timeout:<k>`, the lease as its
//! ttl), plus baton's waiting-writer queue (`baton_rwlock_queue:{N}`,
//! `baton_rwlock_timeout:{N}`), which Redisson ignores.

use std::time::Duration;

use redis::{Cmd, Value};

use super::super::config::Free;
use super::super::conn::{Conn, evalsha};
use super::super::keys::{meta, prefix_name, suffix_base, token_counter};
use super::super::reply::{self, bytes, int, items, released, uint};
use super::{Lua, acquire_args, count_arg, floor_arg, ms, release_keys};
use crate::error::Result;
use crate::state::{self, Hold, HoldMode, KeyState, Mode, Released, Request, Waiter};

/// KEYS: hash, queue, timeouts, counter, meta.
/// ARGV: holder, lease ms, 'r'/'w', the other side's holder (a reader: its writer; a
/// writer: its reader), enqueue, queue ttl ms, timeout key base, channel.
pub(super) static ACQUIRE: Lua = lua!("token", "prelude", "rw_prelude", "rw_acquire");

/// KEYS: hash, meta, and the counter unless `?free=keep`. ARGV: holder, count (0: all),
/// timeout key base, channel.
pub(super) static RELEASE: Lua = lua!("forget", "rw_prelude", "rw_release");

/// KEYS: hash, meta. ARGV: holder, lease ms, timeout key base.
pub(super) static RENEW: Lua = lua!("prelude", "rw_prelude", "rw_renew");

/// KEYS: queue, timeouts. ARGV: holder, channel.
pub(super) static LEAVE: Lua = lua!("rw_leave");

/// KEYS: hash, queue, timeouts, counter, meta. ARGV: timeout key base.
/// Reply: {now, counter, {{field, count, left, token}…}, lrange queue, zrange timeouts withscores}.
pub(super) static INSPECT: Lua = lua!("prelude", "rw_prelude", "rw_inspect");

/// The keys and channel of `RReadWriteLock`, plus baton's waiting-writer queue.
pub(crate) struct RwKeys {
    pub(crate) hash: String,
    pub(crate) queue: String,
    pub(crate) timeouts: String,
    pub(crate) counter: String,
    pub(crate) meta: String,
    pub(crate) base: String,
    pub(crate) channel: String,
}

impl RwKeys {
    pub(crate) fn new(name: &str) -> RwKeys {
        RwKeys {
            hash: name.to_owned(),
            queue: prefix_name("baton_rwlock_queue", name),
            timeouts: prefix_name("baton_rwlock_timeout", name),
            counter: token_counter(name),
            meta: meta(name),
            base: suffix_base(name),
            channel: prefix_name("redisson_rwlock", name),
        }
    }

    fn all(&self) -> [&[u8]; 5] {
        [
            self.hash.as_bytes(),
            self.queue.as_bytes(),
            self.timeouts.as_bytes(),
            self.counter.as_bytes(),
            self.meta.as_bytes(),
        ]
    }
}

/// The raw reply of the acquire script (`reply::attempt` reads it).
pub(crate) async fn acquire(c: &Conn, n: &str, req: &Request) -> Result<Value> {
    let k = RwKeys::new(n);
    let (side, other) = match &req.mode {
        Mode::Read { writer } => ("r", writer.as_str()),
        _ => ("w", state::read_holder_of(&req.holder)),
    };
    let lease = req.lease_ms.to_string();
    let enqueue = if req.enqueue { "1" } else { "0" };
    let qttl = req.queue_ttl_ms.to_string();
    let floor = floor_arg(req);
    c.eval(
        &ACQUIRE,
        &k.all(),
        &acquire_args(
            &[
                req.holder.as_bytes(),
                lease.as_bytes(),
                side.as_bytes(),
                other.as_bytes(),
                enqueue.as_bytes(),
                qttl.as_bytes(),
                k.base.as_bytes(),
                k.channel.as_bytes(),
            ],
            &floor,
        ),
    )
    .await
}

pub(crate) async fn release(c: &Conn, n: &str, holder: &str, count: u32, free: Free) -> Result<Released> {
    let k = RwKeys::new(n);
    let v = c
        .eval(
            &RELEASE,
            &release_keys(&[&k.hash, &k.meta], &k.counter, free),
            &[holder.as_bytes(), count_arg(count).as_bytes(), k.base.as_bytes(), k.channel.as_bytes()],
        )
        .await?;
    released(c.store(), &v, count)
}

/// The renew call (for single renewals and pipelined batches).
pub(crate) fn renew(n: &str, holder: &str, lease: Duration) -> Cmd {
    let k = RwKeys::new(n);
    let lease = ms(lease).to_string();
    evalsha(&RENEW, &[k.hash.as_bytes(), k.meta.as_bytes()], &[holder.as_bytes(), lease.as_bytes(), k.base.as_bytes()])
}

/// Gives up a writer's place in the queue.
pub(crate) async fn leave(c: &Conn, n: &str, holder: &str) -> Result<()> {
    let k = RwKeys::new(n);
    c.eval(&LEAVE, &[k.queue.as_bytes(), k.timeouts.as_bytes()], &[holder.as_bytes(), k.channel.as_bytes()]).await?;
    Ok(())
}

/// The live state and the server's `now`.
pub(crate) async fn inspect(c: &Conn, n: &str) -> Result<(KeyState, u64)> {
    let k = RwKeys::new(n);
    let v = c.eval(&INSPECT, &k.all(), &[k.base.as_bytes()]).await?;
    let bad = || c.unexpected("inspect", &v);
    let [now, counter, holds, queue, zset] = items(&v).ok_or_else(bad)? else {
        return Err(bad());
    };
    let now = uint(now).ok_or_else(bad)?;
    let mut out = Vec::new();
    for h in items(holds).ok_or_else(bad)? {
        let [field, count, left, token] = items(h).ok_or_else(bad)? else {
            return Err(bad());
        };
        let holder = String::from_utf8_lossy(bytes(field).ok_or_else(bad)?).into_owned();
        let mode = if holder.ends_with(":write") { HoldMode::Write } else { HoldMode::Read };
        out.push(Hold {
            holder,
            mode,
            count: u32::try_from(uint(count).ok_or_else(bad)?).unwrap_or(u32::MAX),
            token: uint(token).unwrap_or(0),
            expires_ms: super::super::reply::expiry(now, int(left).ok_or_else(bad)?),
            value: None,
        });
    }
    let queue = reply::waiters(now, queue, zset).into_iter().map(|w| Waiter { mode: HoldMode::Write, ..w }).collect();
    Ok((KeyState { fence: uint(counter).unwrap_or(0), holds: out, queue, count: 0, size: None }, now))
}
