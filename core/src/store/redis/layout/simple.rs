//! The simple safe lock (`?scheme=simple`): `SET name token NX PX ttl`, released by an
//! atomic compare-and-delete and extended by an atomic compare-and-extend — the layout of
//! redis-py's `Lock`, redsync and node-redlock, so those clients and baton contend on the
//! same names. The key's value is the baton holder id (`uuid:n`), a token string as the
//! others store; baton's hold count and fencing token live in the side hash `{N}:baton`
//! (`c:<holder>`, `t:<holder>`), which those clients never read and whose ttl follows the
//! key's. Only `Lock` changes: a fair lock has no queue in this layout (`Unsupported`);
//! the other kinds keep Redisson's layouts.

use std::time::Duration;

use redis::{Cmd, Value};

use super::super::config::Free;
use super::super::conn::{Conn, evalsha};
use super::super::keys::{meta, prefix_name, token_counter};
use super::super::reply::{bytes, expiry, field_u64, int, items, pairs, released, uint};
use super::{Lua, acquire_args, count_arg, floor_arg, ms, release_keys};
use crate::error::{Error, Result};
use crate::state::{Hold, HoldMode, KeyState, Mode, Released, Request};
use crate::store::AnyOf;
use crate::store::Subscription;

/// KEYS: key, counter, meta. ARGV: holder, lease ms.
pub(super) static ACQUIRE: Lua = lua!("token", "simple_acquire");

/// KEYS: key, meta, and the counter unless `?free=keep`. ARGV: holder, count (0: all), channel. redis-py's compare-and-delete,
/// counting re-entries down first.
pub(super) static RELEASE: Lua = lua!("forget", "simple_release");

/// KEYS: key, meta. ARGV: holder, lease ms. Compare-and-extend (redis-py's `reacquire`).
pub(super) static RENEW: Lua = lua!("simple_renew");

/// KEYS: key, counter, meta. Reply: {now, value, pttl, hgetall meta, counter}.
pub(super) static INSPECT: Lua = lua!("prelude", "simple_inspect");

/// The keys and channel of the simple lock: the name itself is the plain string key
/// redis-py's `Lock`, redsync and node-redlock use; the counter and the side hash carry
/// the name's hash tag (`{N}`), so they share its Cluster slot.
pub(crate) struct SimpleKeys {
    pub(crate) key: String,
    pub(crate) counter: String,
    pub(crate) meta: String,
    /// `baton_lock__channel:{N}`: baton's releases publish `0` here (the simple clients
    /// publish nothing; their releases are seen by the waiters' re-checks).
    pub(crate) channel: String,
}

impl SimpleKeys {
    pub(crate) fn new(name: &str) -> SimpleKeys {
        SimpleKeys { key: name.to_owned(), counter: token_counter(name), meta: meta(name), channel: channel(name) }
    }
}

/// The channel of a simple lock's waiters.
fn channel(name: &str) -> String {
    prefix_name("baton_lock__channel", name)
}

/// What a fair lock under `?scheme=simple` answers.
fn fair_unsupported(store: &str) -> Error {
    Error::unsupported(format!(
        "{store}: fair locks are not available with ?scheme=simple (the SET NX PX layout of redis-py, redsync and \
         node-redlock has no queue); use the default scheme (Redisson's RFairLock layout) for fair locks"
    ))
}

/// The raw reply of the acquire script (`reply::attempt` reads it).
pub(crate) async fn acquire(c: &Conn, n: &str, req: &Request) -> Result<Value> {
    if !matches!(req.mode, Mode::Exclusive) {
        return Err(fair_unsupported(c.store()));
    }
    let k = SimpleKeys::new(n);
    let lease = req.lease_ms.to_string();
    let floor = floor_arg(req);
    c.eval(
        &ACQUIRE,
        &[k.key.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
        &acquire_args(&[req.holder.as_bytes(), lease.as_bytes()], &floor),
    )
    .await
}

pub(crate) async fn release(c: &Conn, n: &str, holder: &str, count: u32, free: Free) -> Result<Released> {
    let k = SimpleKeys::new(n);
    let v = c
        .eval(
            &RELEASE,
            &release_keys(&[&k.key, &k.meta], &k.counter, free),
            &[holder.as_bytes(), count_arg(count).as_bytes(), k.channel.as_bytes()],
        )
        .await?;
    released(c.store(), &v, count)
}

/// The renew call (for single renewals and pipelined batches).
pub(crate) fn renew(n: &str, holder: &str, lease: Duration) -> Cmd {
    let k = SimpleKeys::new(n);
    let lease = ms(lease).to_string();
    evalsha(&RENEW, &[k.key.as_bytes(), k.meta.as_bytes()], &[holder.as_bytes(), lease.as_bytes()])
}

/// baton's own releases publish; the simple clients' releases and expiries are heard
/// through keyspace notifications where the server sends them (`notify-keyspace-events`
/// with `K` and `g`/`x`), else by the re-check.
pub(crate) async fn subscribe(c: &Conn, n: &str, db: i64) -> Result<Box<dyn Subscription>> {
    let own = c.listen(channel(n), true).await?;
    let space = c.listen(format!("__keyspace@{db}__:{n}"), false).await?;
    Ok(Box::new(AnyOf(vec![own, space])))
}

/// The live state and the server's `now`.
pub(crate) async fn inspect(c: &Conn, n: &str) -> Result<(KeyState, u64)> {
    let k = SimpleKeys::new(n);
    let v = c.eval(&INSPECT, &[k.key.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()], &[]).await?;
    let bad = || c.unexpected("inspect", &v);
    let [now, value, pttl, meta, counter] = items(&v).ok_or_else(bad)? else {
        return Err(bad());
    };
    let now = uint(now).ok_or_else(bad)?;
    let pttl = int(pttl).ok_or_else(bad)?;
    let meta = pairs(meta);
    let holds = match bytes(value) {
        None => Vec::new(),
        Some(value) => {
            // A foreign holder (redis-py, redsync, node-redlock) has no count or token
            // here: one hold, token 0 (unknown).
            let holder = String::from_utf8_lossy(value).into_owned();
            vec![Hold {
                count: field_u64(&meta, &format!("c:{holder}")).and_then(|c| u32::try_from(c).ok()).unwrap_or(1),
                token: field_u64(&meta, &format!("t:{holder}")).unwrap_or(0),
                mode: HoldMode::Exclusive,
                expires_ms: expiry(now, pttl),
                holder,
                value: None,
            }]
        }
    };
    Ok((KeyState { fence: uint(counter).unwrap_or(0), holds, queue: Vec::new(), count: 0, size: None }, now))
}
