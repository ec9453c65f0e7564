//! `sqlite:///path/file.db`: the embedded default. One file shared by every process on
//! the machine (WAL journal, busy timeout); each step is one `BEGIN IMMEDIATE`
//! transaction running the shared rules of `crate::state`.
//!
//! SQLite cannot announce changes to other processes, so waiters poll a per-key version
//! with capped, jittered backoff; waiters in the same process are woken at once.
//! Leases use this machine's wall clock (the "server" clock of an embedded store), so a
//! large clock jump shortens or lengthens live leases.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::stateful::{Op, StateStore};
use super::{COMMON_OPTIONS, Key, Subscription};
use crate::engine::backoff::Backoff;
use crate::error::{Error, Result};
use crate::state::{self, KeyState};
use crate::url::StoreUrl;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS baton_state (
    family  TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    state   TEXT    NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (family, name)
) WITHOUT ROWID";

/// Polling bounds for cross-process waiters: the first re-check comes fast (a release
/// usually follows soon), later ones at most every 50 ms.
const POLL_MIN: Duration = Duration::from_millis(2);
const POLL_MAX: Duration = Duration::from_millis(50);

/// What the clients of one file in this process share: wake-ups, and a write gate.
#[derive(Debug, Default)]
struct Local {
    keys: Mutex<HashMap<Key, watch::Sender<u64>>>,
    /// Writers of this process queue here instead of inside SQLite's busy handler, whose
    /// sleeps (up to 100 ms) turned pool-internal collisions into latency spikes.
    write: tokio::sync::Mutex<()>,
}

impl Local {
    fn for_path(path: &Path) -> Arc<Local> {
        static REG: OnceLock<Mutex<HashMap<PathBuf, Weak<Local>>>> = OnceLock::new();
        let mut reg = REG.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|_, w| w.strong_count() > 0);
        if let Some(l) = reg.get(path).and_then(Weak::upgrade) {
            return l;
        }
        let l = Arc::new(Local::default());
        reg.insert(path.to_owned(), Arc::downgrade(&l));
        l
    }

    fn sender<R>(&self, key: &Key, f: impl FnOnce(&watch::Sender<u64>) -> R) -> R {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        f(keys.entry(key.clone()).or_insert_with(|| watch::Sender::new(0)))
    }
}

/// The SQLite store.
#[derive(Debug)]
pub(crate) struct Sqlite {
    pool: SqlitePool,
    path: String,
    local: Arc<Local>,
}

impl Sqlite {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Sqlite> {
        let mut known = COMMON_OPTIONS.to_vec();
        known.push("busy_timeout");
        url.check_options(&known)?;
        // sqlite:///abs/path.db → "/abs/path.db"; sqlite://rel.db → "rel.db".
        let path = format!("{}{}", url.hosts(), url.path());
        if path.is_empty() || path.ends_with('/') {
            return Err(Error::invalid_url(format!(
                "{url} names no database file; use sqlite:///absolute/path/file.db"
            )));
        }
        let busy = match url.option("busy_timeout") {
            Some(v) => crate::duration::parse(v)?,
            None => Duration::from_secs(5),
        };
        let opts = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|e| Error::backend("cannot configure SQLite").with_source(e))?
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(busy);
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(busy + Duration::from_secs(5))
            .connect_with(opts)
            .await
            .map_err(|e| open_error(&path, e))?;
        sqlx::query(SCHEMA).execute(&pool).await.map_err(|e| open_error(&path, e))?;
        let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(&path));
        Ok(Sqlite { pool, local: Local::for_path(&canonical), path })
    }

    fn err(&self, e: sqlx::Error) -> Error {
        let msg = format!("SQLite {}: {e}", self.path);
        match e {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => Error::connection(msg),
            other => Error::backend(msg).with_source(other),
        }
    }
}

fn open_error(path: &str, e: sqlx::Error) -> Error {
    Error::connection(format!("cannot open the SQLite database {path}: {e}")).with_source(e)
}

/// Milliseconds since the Unix epoch on this machine's clock.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn decode(json: Option<String>) -> Result<KeyState> {
    match json {
        None => Ok(KeyState::default()),
        Some(s) => {
            serde_json::from_str(&s).map_err(|e| Error::backend(format!("corrupt baton_state row: {e}")).with_source(e))
        }
    }
}

#[async_trait]
impl StateStore for Sqlite {
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        // IMMEDIATE takes the write lock up front: two deferred readers upgrading to
        // writers would otherwise fail with SQLITE_BUSY instead of waiting.
        let _gate = self.local.write.lock().await;
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(|e| self.err(e))?;
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT state, version FROM baton_state WHERE family = ? AND name = ?")
                .bind(key.family.as_str())
                .bind(&key.name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        let (json, version) = row.map_or((None, 0), |(s, v)| (Some(s), v));
        let before = decode(json)?;
        let mut after = before.clone();
        let out = f(&mut after, now_ms());
        let wakes = state::frees(&before, &after);
        if after != before {
            let json = serde_json::to_string(&after).map_err(|e| Error::backend(e.to_string()))?;
            sqlx::query(
                "INSERT INTO baton_state (family, name, state, version) VALUES (?, ?, ?, ?)
                 ON CONFLICT (family, name) DO UPDATE SET state = excluded.state, version = excluded.version",
            )
            .bind(key.family.as_str())
            .bind(&key.name)
            .bind(json)
            .bind(if wakes { version + 1 } else { version })
            .execute(&mut *tx)
            .await
            .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        if wakes {
            self.local.sender(key, |s| s.send_modify(|v| *v += 1));
        }
        Ok(out)
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        let json: Option<String> = sqlx::query_scalar("SELECT state FROM baton_state WHERE family = ? AND name = ?")
            .bind(key.family.as_str())
            .bind(&key.name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.err(e))?;
        Ok((decode(json)?, now_ms()))
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        let rx = self.local.sender(key, watch::Sender::subscribe);
        let mut sub = SqliteSub {
            pool: self.pool.clone(),
            key: key.clone(),
            seen: 0,
            rx,
            backoff: Backoff::new(POLL_MIN, POLL_MAX),
            path: self.path.clone(),
        };
        sub.seen = sub.version().await?;
        Ok(Box::new(sub))
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}

struct SqliteSub {
    pool: SqlitePool,
    key: Key,
    seen: i64,
    rx: watch::Receiver<u64>,
    backoff: Backoff,
    path: String,
}

impl SqliteSub {
    async fn version(&self) -> Result<i64> {
        let v: Option<i64> = sqlx::query_scalar("SELECT version FROM baton_state WHERE family = ? AND name = ?")
            .bind(self.key.family.as_str())
            .bind(&self.key.name)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| Error::connection(format!("SQLite {}: {e}", self.path)))?;
        Ok(v.unwrap_or(0))
    }
}

#[async_trait]
impl Subscription for SqliteSub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        loop {
            let v = self.version().await?;
            if v != self.seen {
                self.seen = v;
                self.backoff.reset();
                return Ok(());
            }
            let wake = until.min(Instant::now() + self.backoff.next_delay());
            tokio::select! {
                r = self.rx.changed() => {
                    if r.is_ok() {
                        self.backoff.reset();
                        return Ok(());
                    }
                    // The local sender lives as long as the store: fall back to polling.
                    sleep_until(wake).await;
                }
                _ = sleep_until(wake) => {}
            }
            if Instant::now() >= until {
                return Ok(());
            }
        }
    }
}

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
