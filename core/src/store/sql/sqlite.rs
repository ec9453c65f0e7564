//! `sqlite:///path/file.db`: the embedded default. One file shared by every process on
//! the machine (WAL journal, busy timeout); each step is one `BEGIN IMMEDIATE`
//! transaction running the shared rules of `crate::state`, after a plain read of the key's
//! row on which a step that changes nothing ends (no write lock taken). A step finding the
//! file locked by other processes' writes tries again within `busy_timeout`.
//!
//! SQLite cannot announce changes to other processes, so waiters poll a per-key version
//! with capped, jittered backoff; waiters in the same process are woken at once.
//! Leases are measured on `CLOCK_BOOTTIME` (`boot_clock`), monotonic and shared by every
//! process of the machine: a step of the wall clock changes no lease.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::config::{FileConfig, SqlConfig};
use super::{Row, Sweeps, decode, driver_error, grace_us, on_pooled, step, write_state};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::KeyState;
use crate::store::Subscription;
use crate::store::stateful::{Op, StateStore};
use crate::store::wakes::{PollSub, VersionSource, Wakes};
use crate::url::StoreUrl;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS baton_state (
    family  TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    state   TEXT    NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    free_us INTEGER,
    PRIMARY KEY (family, name)
) WITHOUT ROWID";
/// The sweep's index (`sql::FREE_GRACE`), and the column for tables made before it.
const FREE_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS baton_state_free ON baton_state (free_us) WHERE free_us IS NOT NULL";
const FREE_COLUMN: &str = "ALTER TABLE baton_state ADD COLUMN free_us INTEGER";
/// A key's row.
const SELECT_ROW: &str = "SELECT state, version, free_us FROM baton_state WHERE family = ? AND name = ?";
/// A step's write: the key's row, made or replaced.
const UPSERT: &str = "INSERT INTO baton_state (family, name, state, version, free_us) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (family, name) DO UPDATE SET state = excluded.state, version = excluded.version,
    free_us = excluded.free_us";

/// How long a step's write transaction waits in SQLite's busy handler before it reads the
/// key's row again (`Db::step`).
const STEP_BUSY: Duration = Duration::from_millis(20);

/// What a step did: decided on its read alone, or wrote (at the clock it ran at).
enum Stepped<R> {
    Read(super::Step<R>),
    Wrote(super::Step<R>, u64),
}

/// The SQLite store.
#[derive(Debug)]
pub(crate) struct Sqlite {
    db: Arc<Db>,
    wakes: Arc<Wakes>,
}

/// The connection pool; also the version source of subscriptions.
#[derive(Debug)]
struct Db {
    pool: SqlitePool,
    /// The steps' write transactions: connections whose busy handler waits [`STEP_BUSY`].
    steps: SqlitePool,
    path: String,
    /// The file's lease-clock base for this boot (`boot_clock`).
    clock: u64,
    /// How long a step waits for other processes' write locks (`?busy_timeout=`).
    busy: Duration,
    sweeps: Sweeps,
}

impl Db {
    fn now_us(&self) -> Result<u64> {
        super::boot_clock::now_us(self.clock).map_err(|e| Error::unsupported(format!("SQLite {}: {e}", self.path)))
    }
}

impl Sqlite {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Sqlite> {
        Sqlite::connect(SqlConfig::from_url(url)?.file()?).await
    }

    async fn connect(config: FileConfig) -> Result<Sqlite> {
        let (path, busy) = (config.path.clone(), config.busy_timeout);
        // Fail closed: a process that cannot tell the host's boot clock judges no lease.
        super::boot_clock::now_us(0).map_err(|e| Error::unsupported(format!("SQLite {path}: {e}")))?;
        let (pool, clock) = open_file(&config, busy, SqlitePoolOptions::new().max_connections(8), made).await?;
        let steps =
            open_file(&config, STEP_BUSY.min(busy), SqlitePoolOptions::new().max_connections(4), |p| async { Ok(p) })
                .await?;
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(&path));
        let wakes = Wakes::for_store(&format!("sqlite:{}", canonical.display()));
        Ok(Sqlite { db: Arc::new(Db { pool, steps, path, clock, busy, sweeps: Sweeps::default() }), wakes })
    }
}

impl Db {
    fn err(&self, e: sqlx::Error) -> Error {
        driver_error(&format!("SQLite {}", self.path), e)
    }

    /// One step. The key's row is read first outside any transaction: a decision that
    /// changes nothing (a waiter finding the name held, most steps on a contended name)
    /// stands on that read, the moment of its snapshot, and takes no write lock (nor this
    /// process's write gate, `gate`). A decision
    /// that writes runs again in a `BEGIN IMMEDIATE` transaction on the step pool, whose
    /// connections wait only [`STEP_BUSY`] in SQLite's busy handler; a "database is locked"
    /// sends the step back to its read (after a short random pause), where it ends at
    /// once if someone else's write made its own needless (the waiters that all saw a
    /// release: one is granted, the others read it held). So a step waits in line as long
    /// as other processes commit meanwhile (`PRAGMA data_version` moves: the lock changes
    /// hands); only `busy_timeout` without any commit by anyone (a process stuck inside a
    /// write) fails it, after at most about twice `busy_timeout`, as a `Connection` error.
    async fn step<R>(&self, key: &Key, f: &Op<R>, gate: &tokio::sync::Mutex<()>) -> Result<Stepped<R>> {
        let mut conn: Option<sqlx::pool::PoolConnection<sqlx::Sqlite>> = None;
        let mut seen: Option<i64> = None;
        let mut deadline = tokio::time::Instant::now() + self.busy;
        loop {
            let row: Row = sqlx::query_as(SELECT_ROW)
                .bind(key.family.as_str())
                .bind(&key.name)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| self.err(e))?;
            // The clock read after the row: a lease the read shows live was live then.
            let read = step(row, self.now_us()?, |s, now| f(s, now))?;
            if read.write.is_none() {
                return Ok(Stepped::Read(read));
            }
            drop(read);
            let c = match conn.as_mut() {
                Some(c) => c,
                None => conn.insert(self.steps.acquire().await.map_err(|e| self.err(e))?),
            };
            // This process's writers one at a time: they would only contend for the lock.
            let tried = {
                let _gate = gate.lock().await;
                self.try_write_step(c, key, f).await
            };
            let e = match tried {
                Ok((step, now)) => return Ok(Stepped::Wrote(step, now)),
                Err(Err(e)) => return Err(e),
                Err(Ok(e)) if !is_locked(&e) => return Err(self.err(e)),
                Err(Ok(e)) => e,
            };
            let version: i64 =
                sqlx::query_scalar("PRAGMA data_version").fetch_one(&mut **c).await.map_err(|e| self.err(e))?;
            let now = tokio::time::Instant::now();
            if seen != Some(version) {
                // Someone committed since the last look (or this is the first): wait on.
                seen = Some(version);
                deadline = deadline.max(now + self.busy);
            } else if now >= deadline {
                return Err(Error::connection(format!(
                    "SQLite {}: the database stayed locked for {:?} (busy_timeout) with no write committed by \
                     anyone: a process holds a write transaction open; ?busy_timeout= waits longer: {e}",
                    self.path, self.busy
                ))
                .with_source(e));
            }
            tokio::time::sleep(Duration::from_millis(rand::random_range(1..10))).await;
        }
    }

    /// One write try of [`Db::step`]; `Err(Ok(e))`: a driver error of a try that committed
    /// nothing (SQLite rolls back a transaction whose COMMIT failed busy: sqlx does).
    async fn try_write_step<R>(
        &self,
        conn: &mut SqliteConnection,
        key: &Key,
        f: &Op<R>,
    ) -> std::result::Result<(super::Step<R>, u64), std::result::Result<sqlx::Error, Error>> {
        // IMMEDIATE takes the write lock up front: two deferred readers upgrading to
        // writers would otherwise fail with SQLITE_BUSY instead of waiting.
        let mut tx = sqlx::Connection::begin_with(&mut *conn, "BEGIN IMMEDIATE").await.map_err(Ok)?;
        let row: Row = sqlx::query_as(SELECT_ROW)
            .bind(key.family.as_str())
            .bind(&key.name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(Ok)?;
        let now = self.now_us().map_err(Err)?;
        let step = step(row, now, |s, now| f(s, now)).map_err(Err)?;
        write_state::<sqlx::Sqlite>(&mut tx, UPSERT, key, step.outcome()).await.map_err(Ok)?;
        match tx.commit().await {
            Ok(()) => Ok((step, now)),
            // Not committed: the transaction stays open on a busy COMMIT and is rolled back.
            Err(e) if is_locked(&e) => Err(Ok(e)),
            Err(e) => Err(Err(self.err(e))),
        }
    }
}

/// The one opener of a SQLite pool, for baton's own design and for the `?scheme=` designs:
/// the file of `file` (made if missing) in WAL mode, normal sync, each connection waiting
/// `busy` for another process's write lock; `then` finishes the pool (its tables, its
/// clock) within the same wait for the file's lock ([`while_locked_at`]).
pub(crate) async fn open_file<T, F, Fut>(
    file: &FileConfig,
    busy: Duration,
    pool: SqlitePoolOptions,
    then: F,
) -> Result<T>
where
    F: Fn(SqlitePool) -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, sqlx::Error>>,
{
    let path = file.path.as_str();
    let opts = SqliteConnectOptions::from_str("sqlite://")
        .map_err(|e| Error::backend("cannot configure SQLite").with_source(e))?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(busy);
    let pool = pool.acquire_timeout(file.busy_timeout + Duration::from_secs(5));
    let open = || {
        let (pool, opts) = (pool.clone(), opts.clone());
        let then = &then;
        async move { then(pool.connect_with(opts).await?).await }
    };
    while_locked_at(Some(Path::new(path)), file.busy_timeout, open).await.map_err(|e| open_error(path, e))
}

/// The store's tables made on `pool`, and the file's lease-clock base.
async fn made(pool: SqlitePool) -> std::result::Result<(SqlitePool, u64), sqlx::Error> {
    sqlx::query(SCHEMA).execute(&pool).await?;
    let has_free: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM pragma_table_info('baton_state') WHERE name = 'free_us'")
            .fetch_one(&pool)
            .await?;
    if has_free == 0 {
        // Another process may add it first: then this one's "duplicate column" is fine.
        if let Err(e) = sqlx::query(FREE_COLUMN).execute(&pool).await
            && !e.to_string().contains("duplicate column")
        {
            return Err(e);
        }
    }
    sqlx::query(FREE_INDEX).execute(&pool).await?;
    let clock = super::boot_clock::base(&pool).await?;
    Ok((pool, clock))
}

/// Runs `open` again while SQLite answers "database is locked", within `busy`: processes
/// opening a new file at once race to switch it to WAL and to create its tables, steps
/// SQLite may refuse at once without waiting in the busy handler. It waits on past `busy`
/// as long as the database file at `path` (or its WAL) keeps changing: other processes
/// are opening and writing it, so the lock changes hands (hundreds of processes opening
/// one file at once), and this opener waits in line. Every opener of a SQLite file goes
/// through here ([`open_file`]).
async fn while_locked_at<T, F, Fut>(
    path: Option<&Path>,
    busy: Duration,
    mut open: F,
) -> std::result::Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, sqlx::Error>>,
{
    let mut deadline = tokio::time::Instant::now() + busy;
    let mut seen = path.map(file_state);
    loop {
        match open().await {
            Err(e) if is_locked(&e) => {
                let now = tokio::time::Instant::now();
                if let Some(p) = path {
                    let state = file_state(p);
                    if seen.as_ref() != Some(&state) {
                        seen = Some(state);
                        deadline = deadline.max(now + busy);
                    }
                }
                if now >= deadline {
                    return Err(e);
                }
                let pause = Duration::from_millis(rand::random_range(10..50));
                tokio::time::sleep(pause).await;
            }
            r => return r,
        }
    }
}

/// What tells that a database file is being written: its and its WAL's size and
/// modification times.
fn file_state(path: &Path) -> Vec<Option<(u64, std::time::SystemTime)>> {
    let wal = format!("{}-wal", path.display());
    [path, Path::new(&wal)]
        .iter()
        .map(|p| std::fs::metadata(p).ok().and_then(|m| Some((m.len(), m.modified().ok()?))))
        .collect()
}

/// SQLITE_BUSY (5) or SQLITE_LOCKED (6), primary or extended.
fn is_locked(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(d) = e else { return false };
    d.code().and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| matches!(c & 0xff, 5 | 6))
}

fn open_error(path: &str, e: sqlx::Error) -> Error {
    Error::connection(format!("cannot open the SQLite database {path}: {e}")).with_source(e)
}

#[async_trait]
impl VersionSource for Db {
    async fn version(&self, key: &Key) -> Result<i64> {
        let v: Option<i64> = sqlx::query_scalar("SELECT version FROM baton_state WHERE family = ? AND name = ?")
            .bind(key.family.as_str())
            .bind(&key.name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok(super::polled_version(v))
    }
}

#[async_trait]
impl StateStore for Sqlite {
    /// One step. The key's row is read first outside any transaction: a decision that
    /// changes nothing (a waiter finding the name held, most steps on a contended name)
    /// stands on that read and takes no write lock, so hundreds of processes waiting on one
    /// name do not queue for the file's write lock after every release. A decision that
    /// writes runs again in a write transaction ([`Db::write_step`]).
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let db = &self.db;
        let (step, now) = match db.step(key, &f, &self.wakes.write).await? {
            Stepped::Read(step) => return Ok(step.committed(&self.wakes, key)),
            Stepped::Wrote(step, now) => (step, now),
        };
        if db.sweeps.due(&step) {
            // Best effort: a sweep that fails leaves rows for the next one.
            let before = i64::try_from(now).unwrap_or(i64::MAX).saturating_sub(grace_us());
            let _ = sqlx::query("DELETE FROM baton_state WHERE free_us < ?").bind(before).execute(&db.pool).await;
        }
        Ok(step.committed(&self.wakes, key))
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        let db = &self.db;
        let json: Option<String> = sqlx::query_scalar("SELECT state FROM baton_state WHERE family = ? AND name = ?")
            .bind(key.family.as_str())
            .bind(&key.name)
            .fetch_optional(&db.pool)
            .await
            .map_err(|e| db.err(e))?;
        Ok((decode(json.as_deref())?, db.now_us()?))
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(PollSub::start(self.db.clone(), &self.wakes, key).await?))
    }

    async fn close(&self) {
        self.db.steps.close().await;
        self.db.pool.close().await;
    }

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        Some(self)
    }
}

super::fence::sql_fence!(Sqlite, sqlx::Sqlite, super::fence::SQLITE, on_pooled, |s| s.db.pool, |e| s.db.err(e));

#[cfg(test)]
mod tests {
    use crate::client::Client;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokens_survive_reopen_and_clients_contend() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/t.db", dir.path().display());
        let a = Client::connect(&url).await.unwrap();
        let b = Client::connect(&url).await.unwrap();
        let g = a.lock("x").acquire().await.unwrap();
        assert!(b.lock("x").try_acquire().await.unwrap().is_none());
        let t1 = g.token();
        let waiter = tokio::spawn(async move { b.lock("x").acquire().await.map(|g| g.token()) });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        g.release().await.unwrap();
        let t2 = tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
        assert!(t2 > t1);
        a.close().await;
        let c = Client::connect(&url).await.unwrap();
        let g = c.lock("x").acquire().await.unwrap();
        assert!(g.token() > t2, "tokens must survive a reopen");
    }
}
