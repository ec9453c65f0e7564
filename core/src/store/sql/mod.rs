//! SQL stores: one table `baton_state(family, name, state, version)` holding each key's
//! state as JSON, changed inside one transaction per step by the shared rules of
//! `crate::state`. Names are always bound as parameters, never interpolated.

pub(crate) mod config;
#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod scheme;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use super::wakes::Wakes;
use crate::error::{Error, Result};
use crate::key::Key;
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

impl<R> Step<R> {
    /// The step's answer once its transaction committed, waking this process's waiters
    /// at once when it freed something.
    pub(crate) fn committed(self, wakes: &Wakes, key: &Key) -> R {
        if self.wakes {
            wakes.notify(key);
        }
        self.out
    }
}

/// Writes a step's new state (`json`, none when it did not change) with `sql`: the
/// store's own statement, taking the family, the name, the state and the version, in
/// that order.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) async fn write_state<'a, DB>(
    conn: &'a mut DB::Connection,
    sql: &'a str,
    key: &'a Key,
    json: Option<&'a str>,
    version: i64,
) -> std::result::Result<(), sqlx::Error>
where
    DB: sqlx::Database,
    &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    DB::Arguments<'a>: sqlx::IntoArguments<'a, DB>,
    &'a mut DB::Connection: sqlx::Executor<'a, Database = DB>,
{
    let Some(json) = json else { return Ok(()) };
    let q = sqlx::query::<DB>(sql).bind(key.family.as_str()).bind(key.name.as_str()).bind(json);
    q.bind(version).execute(conn).await.map(drop)
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
