//! `Semaphore` and `PermitSemaphore` in `RPermitExpirableSemaphore`'s leased layout: the
//! count of free permits `N`, and the zset `{N}:timeout` with one member per permit held
//! (a permit id as its 16 raw bytes, any other holder as `holder/1`, `holder/2`, …) scored
//! with its expiry, so the permits of a holder that crashed come back by themselves.

use std::time::Duration;

use redis::{Cmd, Value};

use super::super::config::Free;
use super::super::conn::{Conn, evalsha};
use super::super::keys::{self, meta, prefix_name, suffix_name, token_counter};
use super::super::reply::{bytes_f64, field_u64, items, pairs, released, uint};
use super::{Lua, acquire_args, count_arg, floor_arg, ms, release_keys};
use crate::error::Result;
use crate::state::{Hold, HoldMode, KeyState, Released, Request};
use crate::store::redis::config::Clock;

/// KEYS: count, permits, counter, meta.
/// ARGV: holder, first member, count, limit, lease ms, channel, clock.
pub(super) static ACQUIRE: Lua = lua!("token", "prelude", "sem_prelude", "sem_acquire");

/// KEYS: count, permits, meta, and the counter unless `?free=keep`. ARGV: holder, first
/// member, count (0: all), channel, clock.
pub(super) static RELEASE: Lua = lua!("forget", "prelude", "sem_prelude", "sem_release");

/// KEYS: count, permits, meta. ARGV: holder, first member, lease ms, channel, clock.
pub(super) static RENEW: Lua = lua!("prelude", "sem_prelude", "sem_renew");

/// KEYS: permits, counter, meta. ARGV: clock. Reply: {now, zrange permits withscores, counter, hgetall meta}.
pub(super) static INSPECT: Lua = lua!("prelude", "sem_inspect");

/// The keys and channel of `RPermitExpirableSemaphore` (and `RSemaphore`'s counter).
pub(crate) struct SemKeys {
    pub(crate) count: String,
    pub(crate) permits: String,
    pub(crate) counter: String,
    pub(crate) meta: String,
    pub(crate) channel: String,
}

impl SemKeys {
    pub(crate) fn new(name: &str) -> SemKeys {
        SemKeys {
            count: name.to_owned(),
            permits: suffix_name(name, "timeout"),
            counter: token_counter(name),
            meta: meta(name),
            channel: prefix_name("redisson_sc", name),
        }
    }
}

/// The raw reply of the acquire script (`reply::attempt` reads it).
pub(crate) async fn acquire(c: &Conn, n: &str, req: &Request, count: u32, limit: u32, clock: Clock) -> Result<Value> {
    let k = SemKeys::new(n);
    let holder = keys::canonical_holder(&req.holder);
    let (count, limit, lease, clock) = (count.to_string(), limit.to_string(), req.lease_ms.to_string(), clock.arg());
    let floor = floor_arg(req);
    c.eval(
        &ACQUIRE,
        &[k.count.as_bytes(), k.permits.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
        &acquire_args(
            &[
                holder.as_bytes(),
                &keys::first_member(&holder),
                count.as_bytes(),
                limit.as_bytes(),
                lease.as_bytes(),
                k.channel.as_bytes(),
                clock.as_bytes(),
            ],
            &floor,
        ),
    )
    .await
}

pub(crate) async fn release(c: &Conn, n: &str, holder: &str, count: u32, clock: Clock, free: Free) -> Result<Released> {
    let k = SemKeys::new(n);
    let holder = keys::canonical_holder(holder);
    let v = c
        .eval(
            &RELEASE,
            &release_keys(&[&k.count, &k.permits, &k.meta], &k.counter, free),
            &[
                holder.as_bytes(),
                &keys::first_member(&holder),
                count_arg(count).as_bytes(),
                k.channel.as_bytes(),
                clock.arg().as_bytes(),
            ],
        )
        .await?;
    released(c.store(), &v, count)
}

/// The renew call (for single renewals and pipelined batches).
pub(crate) fn renew(n: &str, holder: &str, lease: Duration, clock: Clock) -> Cmd {
    let k = SemKeys::new(n);
    let holder = keys::canonical_holder(holder);
    evalsha(
        &RENEW,
        &[k.count.as_bytes(), k.permits.as_bytes(), k.meta.as_bytes()],
        &[
            holder.as_bytes(),
            &keys::first_member(&holder),
            ms(lease).to_string().as_bytes(),
            k.channel.as_bytes(),
            clock.arg().as_bytes(),
        ],
    )
}

/// The live permits (one hold per holder) and the clock's `now`.
pub(crate) async fn inspect(c: &Conn, n: &str, clock: Clock) -> Result<(KeyState, u64)> {
    let k = SemKeys::new(n);
    let v = c
        .eval(&INSPECT, &[k.permits.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()], &[clock.arg().as_bytes()])
        .await?;
    let bad = || c.unexpected("inspect", &v);
    let [now, zset, counter, meta] = items(&v).ok_or_else(bad)? else {
        return Err(bad());
    };
    let now = uint(now).ok_or_else(bad)?;
    let tokens = pairs(meta);
    let mut holds: Vec<Hold> = Vec::new();
    for (member, score) in pairs(zset) {
        let Some(score) = bytes_f64(score) else { continue };
        if score <= now as f64 {
            continue;
        }
        let holder = keys::member_holder(member);
        match holds.iter_mut().find(|h| h.holder == holder) {
            Some(h) => h.count += 1,
            None => {
                let token = field_u64(&tokens, &format!("t:{holder}")).unwrap_or(0);
                holds.push(Hold {
                    holder,
                    mode: HoldMode::Permits,
                    count: 1,
                    token,
                    expires_ms: score.min(u64::MAX as f64) as u64,
                    value: None,
                });
            }
        }
    }
    let size = field_u64(&tokens, "size").and_then(|s| u32::try_from(s).ok());
    Ok((KeyState { fence: uint(counter).unwrap_or(0), holds, queue: Vec::new(), count: 0, size }, now))
}
