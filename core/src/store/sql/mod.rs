//! SQL stores: one table `baton_state(family, name, state, version)` holding each key's
//! state as JSON, changed inside one transaction per step by the shared rules of
//! `crate::state`. Names are always bound as parameters, never interpolated.

pub(crate) mod config;
#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use crate::error::{Error, Result};
use crate::state::{self, KeyState};

/// A key's state as stored (`None`: no row yet).
pub(crate) fn decode(json: Option<&str>) -> Result<KeyState> {
    match json {
        None => Ok(KeyState::default()),
        Some(s) => {
            serde_json::from_str(s).map_err(|e| Error::backend(format!("corrupt baton_state row: {e}")).with_source(e))
        }
    }
}

/// The outcome of running a step on a row read inside a transaction.
pub(crate) struct Step<R> {
    pub(crate) out: R,
    /// The new state as JSON, when it changed and must be written.
    pub(crate) write: Option<String>,
    /// The version to store (bumped when waiters should wake).
    pub(crate) version: i64,
    pub(crate) wakes: bool,
}

/// Runs `f` on the state read from a row (`json`, `version`) at the store's time `now`.
pub(crate) fn step<R>(
    json: Option<&str>,
    version: i64,
    now: u64,
    f: impl FnOnce(&mut KeyState, u64) -> R,
) -> Result<Step<R>> {
    let before = decode(json)?;
    let mut after = before.clone();
    let out = f(&mut after, now);
    let wakes = state::frees(&before, &after);
    let write = if after == before {
        None
    } else {
        Some(serde_json::to_string(&after).map_err(|e| Error::backend(e.to_string()))?)
    };
    Ok(Step { out, write, version: if wakes { version + 1 } else { version }, wakes })
}

/// Maps a driver error: unreachable/closed pools are `Connection`, the rest `Backend`.
pub(crate) fn driver_error(store: &str, e: sqlx::Error) -> Error {
    let msg = format!("{store}: {e}");
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) => {
            Error::connection(msg).with_source(e)
        }
        other => Error::backend(msg).with_source(other),
    }
}
