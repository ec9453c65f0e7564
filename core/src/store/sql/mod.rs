//! SQL stores: one table `baton_state(family, name, state, version)` holding each key's
//! state as JSON, changed inside one transaction per step by the shared rules of
//! `crate::state`. A step that leaves a key free marks its row (`free_us`, the moment it
//! became free), and a sweep removes rows free for longer than [`FREE_GRACE`], so names
//! used once leave no rows behind while a name in use keeps its row from grant to grant.
//! Names are always bound as parameters, never interpolated.

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
    /// The new state as JSON, when it or its `free` mark changed and the row must be
    /// written.
    pub(crate) write: Option<String>,
    /// Since when the key is free (`KeyState::forgettable`), in µs on the store's clock:
    /// the row's `free_us`, which the sweep reads.
    pub(crate) free: Option<i64>,
    /// The version to store (bumped when waiters should wake).
    pub(crate) version: i64,
    pub(crate) wakes: bool,
}

/// What a step writes: `Step` without its answer.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) struct Outcome<'a> {
    write: Option<&'a str>,
    free: Option<i64>,
    version: i64,
}

impl<R> Step<R> {
    /// What this step writes.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn outcome(&self) -> Outcome<'_> {
        Outcome { write: self.write.as_deref(), free: self.free, version: self.version }
    }

    /// The step's answer once its transaction committed, waking this process's waiters
    /// at once when it freed something.
    pub(crate) fn committed(self, wakes: &Wakes, key: &Key) -> R {
        if self.wakes {
            wakes.notify(key);
        }
        self.out
    }
}

/// Writes a step's new state (none when neither it nor its `free` mark changed) with
/// `sql`: the store's own statement, taking the family, the name, the state, the version
/// and `free_us`, in that order.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) async fn write_state<'a, DB>(
    conn: &'a mut DB::Connection,
    sql: &'a str,
    key: &'a Key,
    step: Outcome<'a>,
) -> std::result::Result<(), sqlx::Error>
where
    DB: sqlx::Database,
    &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    DB::Arguments<'a>: sqlx::IntoArguments<'a, DB>,
    &'a mut DB::Connection: sqlx::Executor<'a, Database = DB>,
{
    let Some(json) = step.write else { return Ok(()) };
    let q = sqlx::query::<DB>(sql).bind(key.family.as_str()).bind(key.name.as_str()).bind(json);
    q.bind(step.version).bind(step.free).execute(conn).await.map(drop)
}

/// A row read inside a step's transaction: its state, version and `free_us` (`None`: no
/// row yet).
pub(crate) type Row = Option<(String, i64, Option<i64>)>;

/// Runs `f` on the state of `row` at the store's time `now_us` (µs).
pub(crate) fn step<R>(row: Row, now_us: u64, f: impl FnOnce(&mut KeyState, u64) -> R) -> Result<Step<R>> {
    let (json, version, was_free) = match &row {
        Some((json, version, free)) => (Some(json.as_str()), *version, *free),
        None => (None, 0, None),
    };
    let before = decode(json)?;
    let mut after = before.clone();
    let out = f(&mut after, now_us);
    let wakes = state::frees(&before, &after);
    // Free since the moment a step first found it so (kept while it stays free).
    let free = after.forgettable(now_us).then(|| was_free.unwrap_or(i64::try_from(now_us).unwrap_or(i64::MAX)));
    let write = if after == before && free == was_free {
        None
    } else {
        Some(serde_json::to_string(&after).map_err(|e| Error::backend(e.to_string()))?)
    };
    Ok(Step { out, write, free, version: if wakes { version + 1 } else { version }, wakes })
}

/// How long a free key's row stays before a sweep removes it: a name in use is granted
/// again well within it, so its row is not made anew (with the inserts' lock traffic) at
/// every grant; a name used once is gone after it.
pub(crate) const FREE_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// When this client sweeps: after a step that freed a key, at most once per half grace.
#[derive(Debug, Default)]
pub(crate) struct Sweeps {
    last: std::sync::Mutex<Option<crate::rt::Instant>>,
}

impl Sweeps {
    /// Whether a sweep is due after `step` (and, if so, counts it as done now).
    pub(crate) fn due<R>(&self, step: &Step<R>) -> bool {
        use crate::sync::LockExt;
        if step.free.is_none() || step.write.is_none() {
            return false;
        }
        let mut last = self.last.locked();
        let now = crate::rt::Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < FREE_GRACE / 2) {
            return false;
        }
        *last = Some(now);
        true
    }
}

/// [`FREE_GRACE`] in µs, the sweep's bound below the store's clock.
pub(crate) fn grace_us() -> i64 {
    i64::try_from(FREE_GRACE.as_micros()).unwrap_or(i64::MAX)
}

/// A key's change counter as the pollers of other processes read it (`PollSub`): a key
/// without a row reads -1, which no row has, so that a swept row is a change too.
#[cfg(any(feature = "sqlite", feature = "mysql"))]
pub(crate) fn polled_version(v: Option<i64>) -> i64 {
    v.unwrap_or(-1)
}

/// How long opening a server database's first connection may take.
#[cfg(any(feature = "postgres", feature = "mysql"))]
const CONNECT_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens the pool of a `postgres://` or `mysql://` store on the driver's `options` after
/// one connection made directly: a pool's own first `connect` retries a failed connection
/// until its acquire timeout and then says only "pool timed out", where the direct attempt
/// fails at once with the server's reason (refused, wrong password, TLS). It is closed
/// again; the pool makes its own, with its per-connection setup.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn open_pool<DB: sqlx::Database>(
    pool: sqlx::pool::PoolOptions<DB>,
    options: <DB::Connection as sqlx::Connection>::Options,
    store: &str,
) -> Result<sqlx::Pool<DB>> {
    use sqlx::{ConnectOptions, Connection};
    let fail = |e: sqlx::Error| Error::connection(format!("cannot connect to {store}: {e}")).with_source(e);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Attempt, Mode, Request};

    fn req() -> Request {
        Request {
            holder: "a".into(),
            mode: Mode::Exclusive,
            lease_ms: 1000,
            enqueue: false,
            queue_ttl_ms: 0,
            watchdog: false,
            shared: false,
            token_floor: None,
            value: None,
        }
    }

    fn row<R>(s: &Step<R>, free: Option<i64>) -> Row {
        Some((s.write.clone().unwrap(), 0, free))
    }

    /// A row is marked free by the step that frees its key, keeps the first mark while it
    /// stays free, and loses it when the key is taken again.
    #[test]
    fn free_mark() {
        let grant = step(None, 1_000_000, |s, now| state::acquire(s, "k", &req(), now)).unwrap();
        assert!(matches!(grant.out, Ok(Attempt::Granted { .. })));
        assert_eq!(grant.free, None);
        let release = step(row(&grant, None), 2_000_000, |s, now| state::release(s, "a", 1, now)).unwrap();
        assert_eq!(release.free, Some(2_000_000));
        // A step that changes nothing on a free row leaves its mark, and writes nothing.
        let again = step(row(&release, Some(2_000_000)), 3_000_000, |s, now| state::release(s, "a", 1, now)).unwrap();
        assert_eq!((again.free, again.write.is_none()), (Some(2_000_000), true));
        let taken =
            step(row(&release, Some(2_000_000)), 4_000_000, |s, now| state::acquire(s, "k", &req(), now)).unwrap();
        assert_eq!(taken.free, None);
        assert!(taken.write.is_some());
    }
}
