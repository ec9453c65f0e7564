//! SQL stores: one table `baton_state(family, name, state, version)` holding each key's
//! state as JSON, changed inside one transaction per step by the shared rules of
//! `crate::state`. Names are always bound as parameters, never interpolated.

#[cfg(feature = "sqlite")]
mod boot_clock;
pub(crate) mod config;
mod fence;
#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod scheme;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod tls;

use super::wakes::Wakes;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::{self, KeyState};

/// How long a step of `postgres://` and `mysql://` (a connection taken from the pool, then
/// its transaction) waits for the database's replies. A live step waits on another's row
/// lock at most until the server ends a session gone silent inside its step (10 s idle,
/// set on every connection), so a reply later than this means this step's own connection
/// is cut off without a close (a lost route): the caller gets a `Connection` error and the
/// connection is abandoned, never a call that hangs past its timeout.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) const STEP_BOUND: std::time::Duration = std::time::Duration::from_secs(20);

/// The error of a step whose reply did not come within [`STEP_BOUND`].
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn stalled() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no reply within {} s: the connection to the database is cut off", STEP_BOUND.as_secs()),
    ))
}

/// `$run` (borrowing the pool connection `$c`) within [`STEP_BOUND`]; a connection whose
/// reply is late is abandoned (it may still carry that reply), the step fails with
/// `$err(stalled())`. `$err` also maps the pool's error.
#[cfg(any(feature = "postgres", feature = "mysql"))]
macro_rules! within_step_bound {
    ($pool:expr, $err:expr, |$c:ident| $run:expr) => {{
        match $pool.acquire().await {
            Err(e) => Err($err(e)),
            Ok(mut $c) => {
                let r = crate::rt::timeout(super::STEP_BOUND, $run).await;
                match r {
                    Ok(r) => r,
                    Err(_) => {
                        drop($c.detach());
                        Err($err(super::stalled()))
                    }
                }
            }
        }
    }};
}
#[cfg(any(feature = "postgres", feature = "mysql"))]
use within_step_bound;

/// `$run` (borrowing the pool connection `$c`), unbounded: a local file has no route to
/// lose, and a step may wait on another's lock for as long as `busy_timeout` says.
#[cfg(feature = "sqlite")]
macro_rules! on_pooled {
    ($pool:expr, $err:expr, |$c:ident| $run:expr) => {{
        match $pool.acquire().await {
            Err(e) => Err($err(e)),
            Ok(mut $c) => $run.await,
        }
    }};
}
#[cfg(feature = "sqlite")]
use on_pooled;

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

/// How long opening a server database's first connection may take.
#[cfg(any(feature = "postgres", feature = "mysql"))]
const CONNECT_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens the pool of a `postgres://` or `mysql://` store (`url`: the driver's URL) after
/// one connection made directly: a pool's own first `connect` retries a failed connection
/// until its acquire timeout and then says only "pool timed out", where the direct attempt
/// fails at once with the server's reason (refused, wrong password, TLS). It is closed
/// again; the pool makes its own, with its per-connection setup.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn open_pool<DB: sqlx::Database>(
    pool: sqlx::pool::PoolOptions<DB>,
    url: &str,
    store: &str,
) -> Result<sqlx::Pool<DB>> {
    use sqlx::{ConnectOptions, Connection};
    let fail = |e: sqlx::Error| Error::connection(format!("cannot connect to {store}: {e}")).with_source(e);
    let options: <DB::Connection as Connection>::Options = url.parse().map_err(fail)?;
    let first = crate::rt::timeout(CONNECT_BOUND, options.connect()).await.map_err(|_| {
        Error::connection(format!("cannot connect to {store}: no answer within {} s", CONNECT_BOUND.as_secs()))
    })?;
    // A failed close leaves nothing of ours behind: the server ends the session.
    let _ = first.map_err(fail)?.close().await;
    pool.connect_with(options).await.map_err(fail)
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
