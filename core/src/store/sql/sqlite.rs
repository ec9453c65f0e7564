//! `sqlite:///path/file.db`: the embedded default. One file shared by every process on
//! the machine (WAL journal, busy timeout); each step is one `BEGIN IMMEDIATE`
//! transaction running the shared rules of `crate::state`.
//!
//! SQLite cannot announce changes to other processes, so waiters poll a per-key version
//! with capped, jittered backoff; waiters in the same process are woken at once.
//! Leases are measured on `CLOCK_BOOTTIME` (`boot_clock`), monotonic and shared by every
//! process of the machine: a step of the wall clock changes no lease.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

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
/// A step's write: the key's row, made or replaced.
const UPSERT: &str = "INSERT INTO baton_state (family, name, state, version, free_us) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (family, name) DO UPDATE SET state = excluded.state, version = excluded.version,
    free_us = excluded.free_us";

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
    path: String,
    /// The file's lease-clock base for this boot (`boot_clock`).
    clock: u64,
    sweeps: Sweeps,
}

impl Db {
    fn now_us(&self) -> u64 {
        super::boot_clock::now_us(self.clock)
    }
}

impl Sqlite {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Sqlite> {
        Sqlite::connect(SqlConfig::from_url(url)?.file()?).await
    }

    async fn connect(config: FileConfig) -> Result<Sqlite> {
        let FileConfig { path, busy_timeout: busy } = config;
        let opts = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|e| Error::backend("cannot configure SQLite").with_source(e))?
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(busy);
        let (pool, clock) =
            while_locked(busy, || open_pool(opts.clone(), busy)).await.map_err(|e| open_error(&path, e))?;
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(&path));
        let wakes = Wakes::for_store(&format!("sqlite:{}", canonical.display()));
        Ok(Sqlite { db: Arc::new(Db { pool, path, clock, sweeps: Sweeps::default() }), wakes })
    }
}

impl Db {
    fn err(&self, e: sqlx::Error) -> Error {
        driver_error(&format!("SQLite {}", self.path), e)
    }
}

/// A pool on `opts` with the tables made, and the file's lease-clock base.
async fn open_pool(opts: SqliteConnectOptions, busy: Duration) -> std::result::Result<(SqlitePool, u64), sqlx::Error> {
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .acquire_timeout(busy + Duration::from_secs(5))
        .connect_with(opts)
        .await?;
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
/// SQLite may refuse at once without waiting in the busy handler. Every opener of a
/// SQLite file goes through here (the store, the `?scheme=` designs).
pub(crate) async fn while_locked<T, F, Fut>(busy: Duration, mut open: F) -> std::result::Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, sqlx::Error>>,
{
    let deadline = tokio::time::Instant::now() + busy;
    loop {
        match open().await {
            Err(e) if is_locked(&e) && tokio::time::Instant::now() < deadline => {
                let pause = Duration::from_millis(rand::random_range(10..50));
                tokio::time::sleep(pause).await;
            }
            r => return r,
        }
    }
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
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let db = &self.db;
        let _gate = self.wakes.write.lock().await;
        // IMMEDIATE takes the write lock up front: two deferred readers upgrading to
        // writers would otherwise fail with SQLITE_BUSY instead of waiting.
        let mut tx = db.pool.begin_with("BEGIN IMMEDIATE").await.map_err(|e| db.err(e))?;
        let row: Row = sqlx::query_as("SELECT state, version, free_us FROM baton_state WHERE family = ? AND name = ?")
            .bind(key.family.as_str())
            .bind(&key.name)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| db.err(e))?;
        let now = db.now_us();
        let step = step(row, now, f)?;
        write_state::<sqlx::Sqlite>(&mut tx, UPSERT, key, step.outcome()).await.map_err(|e| db.err(e))?;
        tx.commit().await.map_err(|e| db.err(e))?;
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
        Ok((decode(json.as_deref())?, db.now_us()))
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(PollSub::start(self.db.clone(), &self.wakes, key).await?))
    }

    async fn close(&self) {
        self.db.pool.close().await;
    }

    fn fence(&self) -> Option<&dyn crate::fence::FenceOps> {
        Some(self)
    }
}

super::fence::sql_fence!(Sqlite, sqlx::Sqlite, super::fence::SQLITE, on_pooled, |s| s.db.pool, |e| s.db.err(e));

#[cfg(test)]
mod tests {
    use crate::Client;

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
