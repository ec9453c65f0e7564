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
use super::{Sweeps, decode, driver_error, grace_us, open_pool, step, within_step_bound};
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
    free_us BIGINT         NULL,
    PRIMARY KEY (family, name),
    KEY baton_state_free (free_us)
) ENGINE = InnoDB";
/// The server's clock in microseconds since the Unix epoch.
const NOW_US: &str = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";
/// How many times a step makes its key's row again when a sweep removed it between the
/// make and the lock (it was free for `sql::FREE_GRACE`): rare, so a few suffice.
const ROW_TRIES: usize = 8;
/// Deadlocks (1213) and lock wait timeouts (1205) met before a step's commit are retried
/// this many times (first inserts of a key no longer deadlock: see `try_update`).
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
    sweeps: Sweeps,
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
        let pool = open_pool(options, config.mysql()?, &store).await?;
        make_table(&pool, config.create, &store).await?;
        widen_names(&pool, config.create).await.map_err(|e| driver_error(&store, e))?;
        add_free_column(&pool, config.create).await.map_err(|e| driver_error(&store, e))?;
        Ok(Mysql {
            db: Arc::new(Db { pool, store, sweeps: Sweeps::default() }),
            wakes: Wakes::for_store(&format!("mysql:{}", config.shown)),
        })
    }
}

/// Makes the table when `information_schema` shows none: `CREATE TABLE IF NOT EXISTS`
/// needs the CREATE privilege even when the table exists, which a role granted only
/// SELECT, INSERT, UPDATE, DELETE on it lacks. With `?create=false` a missing table is an
/// error naming the statement to run.
async fn make_table(pool: &MySqlPool, create: bool, store: &str) -> Result<()> {
    let has: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'baton_state'",
    )
    .fetch_one(pool)
    .await
    .map_err(|e| driver_error(store, e))?;
    match (has, create) {
        (0, true) => sqlx::query(SCHEMA).execute(pool).await.map(drop).map_err(|e| driver_error(store, e)),
        (0, false) => Err(Error::backend(format!(
            "{store}: table baton_state does not exist, and ?create=false forbids making it; run: {SCHEMA}"
        ))),
        _ => Ok(()),
    }
}

/// Tables made by baton 0.1 before prefixes were counted apart from names had
/// `VARBINARY(255)` names: widen them once (a no-op read afterwards).
async fn widen_names(pool: &MySqlPool, create: bool) -> std::result::Result<(), sqlx::Error> {
    let width: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_MAXIMUM_LENGTH AS SIGNED) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'baton_state' AND COLUMN_NAME = 'name'",
    )
    .fetch_optional(pool)
    .await?
    .flatten();
    // `?create=false`: left as it is (names of more than 255 bytes then fail).
    if create && width.is_some_and(|w| w < 510) {
        sqlx::query("ALTER TABLE baton_state MODIFY name VARBINARY(510) NOT NULL").execute(pool).await?;
    }
    Ok(())
}

/// Tables made before the sweep (`sql::FREE_GRACE`) get its column and index once.
async fn add_free_column(pool: &MySqlPool, create: bool) -> std::result::Result<(), sqlx::Error> {
    let has: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'baton_state' AND COLUMN_NAME = 'free_us'",
    )
    .fetch_one(pool)
    .await?;
    if has == 0 && !create {
        return Err(sqlx::Error::Configuration(
            "table baton_state has no column free_us, and ?create=false forbids adding it; run: ALTER TABLE \
             baton_state ADD COLUMN free_us BIGINT NULL, ADD KEY baton_state_free (free_us)"
                .into(),
        ));
    }
    if has == 0 {
        let add = "ALTER TABLE baton_state ADD COLUMN free_us BIGINT NULL, ADD KEY baton_state_free (free_us)";
        match sqlx::query(add).execute(pool).await {
            // Another client added it first (duplicate column 1060, duplicate key 1061).
            Err(sqlx::Error::Database(d)) if matches!(d.code().as_deref(), Some("42S21") | Some("42000")) => {}
            r => r.map(drop)?,
        }
    }
    Ok(())
}

impl Db {
    fn err(&self, e: sqlx::Error) -> Error {
        driver_error(&self.store, e)
    }

    /// One attempt at a step; `Err(Ok(e))` is worth retrying (deadlock, lock timeout):
    /// nothing of it was committed, and the decision `f` runs again on a fresh read.
    async fn try_update<R>(
        &self,
        conn: &mut MySqlConnection,
        key: &Key,
        f: &Op<R>,
    ) -> std::result::Result<super::Step<R>, std::result::Result<sqlx::Error, Error>> {
        let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(Ok)?;
        let select = format!(
            "SELECT state, version, free_us, {NOW_US} FROM baton_state WHERE family = ? AND name = ? FOR UPDATE"
        );
        let name = key.name.as_bytes();
        let mut row: Option<(String, i64, Option<i64>, i64)> =
            sqlx::query_as(&select).bind(key.family.as_str()).bind(name).fetch_optional(&mut *tx).await.map_err(Ok)?;
        for _ in 0..ROW_TRIES {
            if row.is_some() {
                break;
            }
            // The row is made outside this transaction, which ends first: inserting under
            // the gap lock its read took deadlocks with every other first step on the
            // key doing the same (each waits for another's gap lock), and with many of
            // them InnoDB's victims could run out of retries. A sweep may remove it again
            // before this one locks it (it was free): make it again.
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
        let (json, version, free, now) = row.ok_or_else(|| {
            Err(Error::backend(format!("baton_state: the row of {key} went {ROW_TRIES} times while this step made it")))
        })?;
        let step =
            step(Some((json, version, free)), u64::try_from(now).unwrap_or(0), |s, now| f(s, now)).map_err(Err)?;
        if let Some(json) = &step.write {
            // A deadlock here rolls the whole transaction back: it is retried like one
            // before the decision.
            sqlx::query("UPDATE baton_state SET state = ?, version = ?, free_us = ? WHERE family = ? AND name = ?")
                .bind(json)
                .bind(step.version)
                .bind(step.free)
                .bind(key.family.as_str())
                .bind(name)
                .execute(&mut *tx)
                .await
                .map_err(|e| if retryable(&e) { Ok(e) } else { Err(self.err(e)) })?;
        }
        // A failed commit may still have committed: never run again.
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
        Ok(super::polled_version(v))
    }
}

#[async_trait]
impl StateStore for Mysql {
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let mut tries = 0;
        let step = loop {
            // Each try within the step bound, on a connection of its own (a deadlock
            // victim's is fine to reuse, but a stalled one is abandoned).
            let db = &self.db;
            let tried = within_step_bound!(db.pool, Ok, |c| db.try_update(&mut c, key, &f));
            match tried {
                Ok(step) => break step,
                Err(Ok(e)) if retryable(&e) && tries + 1 < RETRIES => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(5 * tries as u64)).await;
                }
                Err(Ok(e)) => return Err(self.db.err(e)),
                Err(Err(e)) => return Err(e),
            }
        };
        if self.db.sweeps.due(&step) {
            // Best effort: a sweep that fails leaves rows for the next one. READ COMMITTED
            // spares it gap locks: steps on other keys go on meanwhile.
            let db = &self.db;
            let sweep = format!("DELETE FROM baton_state WHERE free_us < {NOW_US} - ?");
            let _ = within_step_bound!(db.pool, |e| e, |c| async {
                sqlx::query("SET TRANSACTION ISOLATION LEVEL READ COMMITTED").execute(&mut *c).await?;
                sqlx::query(&sweep).bind(grace_us()).execute(&mut *c).await
            });
        }
        Ok(step.committed(&self.wakes, key))
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        let db = &self.db;
        let sql = format!("SELECT (SELECT state FROM baton_state WHERE family = ? AND name = ?), {NOW_US}");
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

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        Some(self)
    }
}

super::fence::sql_fence!(Mysql, sqlx::MySql, super::fence::MYSQL, within_step_bound, |s| s.db.pool, |e| s.db.err(e));
