//! `?semaphore=rsemaphore`: `Semaphore` in the exact form of Redisson's `RSemaphore` — the
//! bare counter `N` (`DECRBY` to take, `INCRBY` + the new count on `redisson_sc:{N}` to
//! give back), so Redisson's `RSemaphore` and baton share permits. baton records each
//! holder's permits and token in its side hash (`p:<holder>`, `t:<holder>`; no ttl). The
//! gap this form cannot close: a permit has no lease in Redis, so the permits of a holder
//! that crashed never come back by themselves. `PermitSemaphore` (ids) keeps
//! `RPermitExpirableSemaphore`'s leased layout under either option (`SemLayout::of`).

use redis::Cmd;

use super::super::config::Free;
use super::super::conn::{Conn, evalsha};
use super::super::reply::{attempt, field_u64, items, pairs, released, size_refused};
use super::semaphore::{self, SemKeys};
use super::{Lua, count_arg, release_keys};
use crate::error::{Error, Result};
use crate::state::{Attempt, Hold, HoldMode, KeyState, Mode, Released, Request};
use crate::store::redis::config::Clock;

/// KEYS: count, counter, meta. ARGV: holder, count, limit. The size rule as the leased
/// layout's (`sem_size`, the same record in the same side hash).
pub(super) static ACQUIRE: Lua = lua!("token", "sem_prelude", "rsem_acquire");

/// KEYS: count, meta, and the counter unless `?free=keep`. ARGV: holder, count (0: all), channel. `RSemaphore.release`: INCRBY
/// and the new count published on `redisson_sc:{N}`.
pub(super) static RELEASE: Lua = lua!("forget", "rsem_release");

/// KEYS: meta. ARGV: holder. Nothing to extend: held while recorded.
pub(super) static RENEW: Lua = lua!("rsem_renew");

/// KEYS: counter, meta. Reply: {now, hgetall meta, counter}.
pub(super) static INSPECT: Lua = lua!("prelude", "rsem_inspect");

pub(crate) async fn acquire(c: &Conn, name: &str, n: &str, req: &Request) -> Result<Attempt> {
    let Mode::Permits { count, limit } = req.mode else {
        return Err(Error::backend(format!("internal error: {:?} on a semaphore", req.mode)));
    };
    let k = SemKeys::new(n);
    let v = c
        .eval(
            &ACQUIRE,
            &[k.count.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
            &[req.holder.as_bytes(), count.to_string().as_bytes(), limit.to_string().as_bytes()],
        )
        .await?;
    if let Some(size) = size_refused(&v) {
        return Err(Error::semaphore_size(name, size, limit));
    }
    attempt(c.store(), "acquire", &v)
}

pub(crate) async fn release(c: &Conn, n: &str, holder: &str, count: u32, free: Free) -> Result<Released> {
    let k = SemKeys::new(n);
    let v = c
        .eval(
            &RELEASE,
            &release_keys(&[&k.count, &k.meta], &k.counter, free),
            &[holder.as_bytes(), count_arg(count).as_bytes(), k.channel.as_bytes()],
        )
        .await?;
    released(c.store(), &v, count)
}

/// Nothing to extend on a bare counter: true while the holder's permits are recorded.
pub(crate) fn renew(n: &str, holder: &str) -> Cmd {
    let k = SemKeys::new(n);
    evalsha(&RENEW, &[k.meta.as_bytes()], &[holder.as_bytes()])
}

/// The holders recorded for the bare counter (no lease: they hold until released).
async fn holds(c: &Conn, n: &str) -> Result<Vec<Hold>> {
    let k = SemKeys::new(n);
    let v = c.eval(&INSPECT, &[k.counter.as_bytes(), k.meta.as_bytes()], &[]).await?;
    let bad = || c.unexpected("inspect", &v);
    let [_now, meta, _counter] = items(&v).ok_or_else(bad)? else {
        return Err(bad());
    };
    let meta = pairs(meta);
    let mut holds = Vec::new();
    for (field, count) in &meta {
        let Some(holder) = field.strip_prefix(b"p:") else { continue };
        let holder = String::from_utf8_lossy(holder).into_owned();
        let token = field_u64(&meta, &format!("t:{holder}")).unwrap_or(0);
        holds.push(Hold {
            count: super::super::reply::bytes_u64(count).and_then(|c| u32::try_from(c).ok()).unwrap_or(0),
            token,
            mode: HoldMode::Permits,
            expires_ms: u64::MAX,
            holder,
            value: None,
        });
    }
    Ok(holds)
}

/// `inspect` of a semaphore under `?semaphore=rsemaphore`: the leased permits (ids) and
/// the bare counter's holders.
pub(crate) async fn inspect(c: &Conn, n: &str, clock: Clock) -> Result<(KeyState, u64)> {
    let (mut state, now) = semaphore::inspect(c, n, clock).await?;
    state.holds.extend(holds(c, n).await?);
    Ok((state, now))
}
