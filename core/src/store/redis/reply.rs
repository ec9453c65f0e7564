//! Decoding the scripts' replies. The conventions every layout's scripts share:
//! - acquire: `{1, token, count, fresh}` granted (or the bare integer `token`: a fresh
//!   grant, count 1 — both lock layouts answer so uncontended), `{0, retry_ms, counter}`
//!   busy (`-1`: unknown; `counter`: the name's token counter, which `redlock://` reads
//!   from every node), `{4}` refused upgrade, `{5}` the name holds another kind of object;
//! - release: `{0}` not held, `{1}` (or the bare integer `1`) freed, `{2, left}` still
//!   held, `{3, held}` more than held asked back;
//! - renew: `1` renewed, `0` not held.

use redis::Value;

use crate::error::{Error, Result};
use crate::state::{Attempt, HoldMode, Released, Waiter};

/// A reply no script of this version gives.
pub(super) fn unexpected(store: &str, what: &str, v: &Value) -> Error {
    Error::backend(format!("{store}: unexpected reply to {what}: {v:?}"))
}

/// An acquire script's reply.
pub(super) fn attempt(store: &str, what: &str, v: &Value) -> Result<Attempt> {
    let bad = || unexpected(store, what, v);
    if let Value::Int(token) = v {
        // The lock's uncontended grant: the token alone.
        return Ok(Attempt::Granted { token: u64::try_from(*token).map_err(|_| bad())?, count: 1, fresh: true });
    }
    let r = items(v).ok_or_else(bad)?;
    match r.first().and_then(int) {
        Some(1) => {
            let [_, token, count, fresh] = r else { return Err(bad()) };
            Ok(Attempt::Granted {
                token: uint(token).ok_or_else(bad)?,
                count: u32::try_from(uint(count).ok_or_else(bad)?).unwrap_or(u32::MAX),
                fresh: int(fresh) == Some(1),
            })
        }
        Some(0) => {
            let retry = r.get(1).and_then(int).ok_or_else(bad)?;
            Ok(Attempt::Busy { retry_ms: u64::try_from(retry).ok().map(|ms| ms.max(1)) })
        }
        Some(4) => Err(Error::invalid_argument(
            "cannot upgrade a read hold to a write hold (it would wait on itself); release the read lock first",
        )),
        Some(5) => Err(Error::backend(format!(
            "{store}: this name holds a Redis hash that is not a read-write lock (a lock of the same name?); a name \
             must not be used by two kinds of primitive"
        ))),
        _ => Err(bad()),
    }
}

/// The recorded size in a semaphore acquire's refusal (`{6, size}`: a handle of another
/// size while permits are held, `sem_size` in `sem_prelude.lua`).
pub(super) fn size_refused(v: &Value) -> Option<u32> {
    let r = items(v)?;
    match r {
        [code, size] if int(code) == Some(6) => uint(size).and_then(|s| u32::try_from(s).ok()),
        _ => None,
    }
}

/// The name's token counter in a busy acquire's reply (0 when absent).
pub(super) fn busy_counter(v: &Value) -> u64 {
    items(v).and_then(|r| r.get(2)).and_then(uint).unwrap_or(0)
}

/// A release script's reply to a release of `count` holds.
pub(super) fn released(store: &str, v: &Value, count: u32) -> Result<Released> {
    let bad = || unexpected(store, "release", v);
    if *v == Value::Int(1) {
        return Ok(Released::Freed);
    }
    let r = items(v).ok_or_else(bad)?;
    match r.first().and_then(int) {
        Some(0) => Ok(Released::NotHeld),
        Some(1) => Ok(Released::Freed),
        Some(2) => Ok(Released::StillHeld(u32::try_from(r.get(1).and_then(uint).ok_or_else(bad)?).unwrap_or(u32::MAX))),
        Some(3) => {
            let held = r.get(1).and_then(uint).ok_or_else(bad)?;
            Err(Error::invalid_argument(format!("cannot release {count} permits: this holder holds {held}")))
        }
        _ => Err(bad()),
    }
}

/// The absolute expiry of a hold with `left` ms to go (`left` -1: no ttl).
pub(super) fn expiry(now: u64, left: i64) -> u64 {
    match u64::try_from(left) {
        Ok(l) => now.saturating_add(l),
        Err(_) if left == -1 => u64::MAX,
        Err(_) => now,
    }
}

pub(super) fn items(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) => Some(a),
        _ => None,
    }
}

pub(super) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => std::str::from_utf8(bytes(other)?).ok()?.parse().ok(),
    }
}

pub(super) fn uint(v: &Value) -> Option<u64> {
    int(v).and_then(|i| u64::try_from(i).ok())
}

pub(super) fn bytes_u64(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

pub(super) fn bytes_f64(b: &[u8]) -> Option<f64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// A flat `[k1, v1, k2, v2, …]` reply (HGETALL, ZRANGE WITHSCORES) as byte pairs.
pub(super) fn pairs(v: &Value) -> Vec<(&[u8], &[u8])> {
    items(v).unwrap_or_default().chunks_exact(2).filter_map(|p| Some((bytes(&p[0])?, bytes(&p[1])?))).collect()
}

/// The `u64` under `field` in a [`pairs`] list (a `t:<holder>` token, a `c:<holder>` count).
pub(super) fn field_u64(pairs: &[(&[u8], &[u8])], field: &str) -> Option<u64> {
    pairs.iter().find(|(f, _)| *f == field.as_bytes()).and_then(|(_, v)| bytes_u64(v))
}

/// The live places of a fair queue (list + expiry zset: the lock's and the read-write
/// lock's waiting writers), in order.
pub(crate) fn waiters(now: u64, queue: &Value, zset: &Value) -> Vec<Waiter> {
    let scores = pairs(zset);
    items(queue)
        .unwrap_or_default()
        .iter()
        .filter_map(|w| {
            let w = bytes(w)?;
            let score = scores.iter().find(|(m, _)| *m == w).and_then(|(_, s)| bytes_f64(s))?;
            (score > now as f64).then(|| Waiter {
                holder: String::from_utf8_lossy(w).into_owned(),
                mode: HoldMode::Exclusive,
                expires_ms: score as u64,
            })
        })
        .collect()
}
