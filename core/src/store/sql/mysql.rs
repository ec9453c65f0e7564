//! `mysql://user:password@host:port/db` (MySQL or MariaDB): each step is one InnoDB
//! transaction that locks the key's row (`SELECT … FOR UPDATE`) and runs the shared rules
//! of `crate::state` on the server's clock. MySQL has no notifications, so waiters in other
//! processes poll the key's version (capped, jittered backoff); this process's waiters
//! are woken at once. Names are stored as bytes (`VARBINARY`), so no collation can make
//! two different names one.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlPoolOptions};

use super::config::{ServerConfig, SqlConfig};
use super::{decode, driver_error, open_pool, step, within_step_bound};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::KeyState;
use crate::store::Subscription;
use crate::store::stateful::{Op, StateStore};
use crate::store::wakes::{PollSub, VersionSource, Wakes};
use crate::url::StoreUrl;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS baton_state (
    family  VARCHAR(16)    NOT NULL,
    name    VARBINARY(510) NOT NULL,   -- a name (≤ 255 bytes) after a prefix (≤ 255)
    state   LONGTEXT       NOT NULL,
    version BIGINT         NOT NULL DEFAULT 0,
    PRIMARY KEY (family, name)
) ENGINE = InnoDB";
/// The server's clock in milliseconds since the Unix epoch.
const NOW_MS: &str = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";
/// Deadlocks (1213) and lock wait timeouts (1205) met before a step's decision ran are
/// retried this many times (first inserts of a key no longer deadlock: see `try_update`).
const RETRIES: usize = 10;

/// The MySQL store.
#[derive(Debug)]
pub(crate) struct Mysql {
    db: Arc<Db>,
    wakes: Arc<Wakes>,
}

#[derive(Debug)]
struct Db {
    pool: MySqlPool,
    store: String,
}

/// Set on every connection: a step's transaction whose client went silent mid-way (a cut
/// route: nothing closes, so the server keeps the session) keeps InnoDB's lock on the
/// key's row against every other client's step until the server ends the session, after
/// `wait_timeout` idle (8 hours by default). A step sends its statements back to back, so
/// 10 s is far above any live step's pause, even on a loaded machine. The pool closes its
/// own idle connections sooner ([`POOL_IDLE`]) and pings one before handing it out.
const IDLE_IN_STEP: &str = "SET SESSION wait_timeout = 10";
const POOL_IDLE: Duration = Duration::from_secs(5);

impl Mysql {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Mysql> {
        Mysql::connect(SqlConfig::from_url(url)?.server()?).await
    }

    async fn connect(config: ServerConfig) -> Result<Mysql> {
        let store = format!("MySQL {}", config.shown);
        let options = MySqlPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .idle_timeout(POOL_IDLE)
            .test_before_acquire(true)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query(IDLE_IN_STEP).execute(conn).await?;
                    Ok(())
                })
            });
        let pool = open_pool(options, &config.driver_url("mysql"), &store).await?;
        sqlx::query(SCHEMA).execute(&pool).await.map_err(|e| driver_error(&store, e))?;
        widen_names(&pool).await.map_err(|e| driver_error(&store, e))?;
        Ok(Mysql { db: Arc::new(Db { pool, store }), wakes: Wakes::for_store(&format!("mysql:{}", config.shown)) })
    }
}

/// Tables made by baton 0.1 before prefixes were counted apart from names had
/// `VARBINARY(255)` names: widen them once (a no-op read afterwards).
async fn widen_names(pool: &MySqlPool) -> std::result::Result<(), sqlx::Error> {
    let width: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_MAXIMUM_LENGTH AS SIGNED) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'baton_state' AND COLUMN_NAME = 'name'",
    )
    .fetch_optional(pool)
    .await?
    .flatten();
    if width.is_some_and(|w| w < 510) {
        sqlx::query("ALTER TABLE baton_state MODIFY name VARBINARY(510) NOT NULL").execute(pool).await?;
    }
    Ok(())
}

impl Db {
    fn err(&self, e: sqlx::Error) -> Error {
        driver_error(&self.store, e)
    }

    /// One attempt at a step; `Err(Ok(e))` is worth retrying (deadlock, lock timeout).
    async fn try_update<R>(
        &self,
        conn: &mut MySqlConnection,
        key: &Key,
        f: &mut Option<Op<R>>,
    ) -> std::result::Result<super::Step<R>, std::result::Result<sqlx::Error, Error>> {
        let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(Ok)?;
        let select =
            format!("SELECT state, version, {NOW_MS} FROM baton_state WHERE family = ? AND name = ? FOR UPDATE");
        let name = key.name.as_bytes();
        let mut row: Option<(String, i64, i64)> =
            sqlx::query_as(&select).bind(key.family.as_str()).bind(name).fetch_optional(&mut *tx).await.map_err(Ok)?;
        if row.is_none() {
            // The row is made outside this transaction, which ends first: inserting under
            // the gap lock its read took deadlocks with every other first step on the
            // key doing the same (each waits for another's gap lock), and with many of
            // them InnoDB's victims could run out of retries.
            tx.rollback().await.map_err(Ok)?;
            sqlx::query("INSERT IGNORE INTO baton_state (family, name, state) VALUES (?, ?, '{}')")
                .bind(key.family.as_str())
                .bind(name)
                .execute(&mut *conn)
                .await
                .map_err(Ok)?;
            tx = sqlx::Connection::begin(&mut *conn).await.map_err(Ok)?;
            row = sqlx::query_as(&select)
                .bind(key.family.as_str())
                .bind(name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(Ok)?;
        }
        let (json, version, now) = row.ok_or_else(|| Err(Error::backend("baton_state row vanished")))?;
        // The decision runs once, on the first attempt that got this far.
        let op = f.take().ok_or_else(|| Err(Error::backend("internal error: step ran twice")))?;
        let step = step(Some(&json), version, u64::try_from(now).unwrap_or(0), op).map_err(Err)?;
        if let Some(json) = &step.write {
            sqlx::query("UPDATE baton_state SET state = ?, version = ? WHERE family = ? AND name = ?")
                .bind(json)
                .bind(step.version)
                .bind(key.family.as_str())
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(|e| Err(self.err(e)))?;
        }
        tx.commit().await.map_err(|e| Err(self.err(e)))?;
        Ok(step)
    }
}

fn retryable(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001") | Some("HY000"))
        && (d.message().contains("Deadlock") || d.message().contains("Lock wait timeout")))
}

#[async_trait]
impl VersionSource for Db {
    /// Within the step bound, as every step: a poll on a lost route must end too.
    async fn version(&self, key: &Key) -> Result<i64> {
        let v: Option<i64> = within_step_bound!(self.pool, |e| self.err(e), |c| async {
            sqlx::query_scalar("SELECT version FROM baton_state WHERE family = ? AND name = ?")
                .bind(key.family.as_str())
                .bind(key.name.as_bytes())
                .fetch_optional(&mut *c)
                .await
                .map_err(|e| self.err(e))
        })?;
        Ok(v.unwrap_or(0))
    }
}

#[async_trait]
impl StateStore for Mysql {
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let mut f = Some(f);
        let mut tries = 0;
        let step = loop {
            // Each try within the step bound, on a connection of its own (a deadlock
            // victim's is fine to reuse, but a stalled one is abandoned).
            let db = &self.db;
            let tried = within_step_bound!(db.pool, Ok, |c| db.try_update(&mut c, key, &mut f));
            match tried {
                Ok(step) => break step,
                // Only failures before the decision ran (`f` still there) may be retried.
                Err(Ok(e)) if f.is_some() && retryable(&e) && tries + 1 < RETRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(5 * tries as u64)).await;
                }
                Err(Ok(e)) => return Err(self.db.err(e)),
                Err(Err(e)) => return Err(e),
            }
        };
        Ok(step.committed(&self.wakes, key))
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        let db = &self.db;
        let sql = format!("SELECT (SELECT state FROM baton_state WHERE family = ? AND name = ?), {NOW_MS}");
        let (json, now): (Option<String>, i64) = within_step_bound!(db.pool, |e| db.err(e), |c| async {
            let q = sqlx::query_as(&sql).bind(key.family.as_str()).bind(key.name.as_bytes());
            q.fetch_one(&mut *c).await.map_err(|e| db.err(e))
        })?;
        Ok((decode(json.as_deref())?, u64::try_from(now).unwrap_or(0)))
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

super::fence::sql_fence!(Mysql, sqlx::MySql, super::fence::MYSQL, within_step_bound, |s| s.db.pool, |e| s.db.err(e));
