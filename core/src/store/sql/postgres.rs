//! `postgres://user:password@host:port/db`: each step is one transaction that locks the
//! key's row (`SELECT … FOR UPDATE`) and runs the shared rules of `crate::state` on the
//! server's clock (`clock_timestamp()`). Waiters are woken by `NOTIFY baton_state`, sent
//! inside the transaction (so only on commit) and received by one `LISTEN` connection
//! per client. The table is made (or migrated) only when the catalog shows it missing, so
//! roles that do not own it share it (`?create=false`: never).

use crate::sync::LockExt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnection, PgListener, PgPool, PgPoolOptions};

use super::config::{ServerConfig, SqlConfig};
use super::{Sweeps, decode, driver_error, grace_us, open_pool, step, within_step_bound, write_state};
use crate::error::{Error, Result};
use crate::key::{Family, Key};
use crate::rt::{AbortOnDrop, Rt};
use crate::state::KeyState;
use crate::store::stateful::{Op, StateStore};
use crate::store::wakes::Wakes;
use crate::store::{Subscription, WatchSub};
use crate::url::StoreUrl;

const CHANNEL: &str = "baton_state";
/// Set on every connection: a step's transaction whose client went silent mid-way (a cut
/// route: nothing closes, so the server keeps the session) keeps the key's row locked
/// against every other client's step. The server ends such a session after this long
/// idle inside a transaction; a step sends its statements back to back, so this is far
/// above any live step's pause, even on a loaded machine.
const IDLE_IN_STEP: &str = "SET idle_in_transaction_session_timeout = '10s'";
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS baton_state (
    family  TEXT   NOT NULL,
    name    TEXT   NOT NULL,
    state   TEXT   NOT NULL,
    version BIGINT NOT NULL DEFAULT 0,
    free_us BIGINT,
    PRIMARY KEY (family, name)
)";
/// The column of the sweep (`sql::FREE_GRACE`) for tables made before it, and its index.
const FREE_COLUMN: &str = "ALTER TABLE baton_state ADD COLUMN IF NOT EXISTS free_us BIGINT";
const FREE_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS baton_state_free ON baton_state (free_us) WHERE free_us IS NOT NULL";
/// Whether `baton_state` (as the search path finds it) exists, has `free_us`, and has the
/// sweep's index: the catalog, readable by every role.
const SCHEMA_STATE: &str = "SELECT to_regclass('baton_state') IS NOT NULL,
    EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('baton_state')
        AND attname = 'free_us' AND NOT attisdropped),
    EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = to_regclass('baton_state') AND c.relname = 'baton_state_free')";
/// The server's clock in microseconds since the Unix epoch.
const NOW_US: &str = "(extract(epoch from clock_timestamp()) * 1000000)::bigint";
/// How many times a step makes its key's row again when a sweep removed it between the
/// make and the lock (it was free for `sql::FREE_GRACE`): rare, so a few suffice.
const ROW_TRIES: usize = 8;

/// The PostgreSQL store.
#[derive(Debug)]
pub(crate) struct Postgres {
    pool: PgPool,
    store: String,
    wakes: Arc<Wakes>,
    /// The LISTEN task; it holds one of the pool's connections, so `close` stops it
    /// first (the pool's close waits for every connection to come back).
    listener: std::sync::Mutex<Option<AbortOnDrop<()>>>,
    sweeps: Sweeps,
}

impl Postgres {
    pub(crate) async fn open(url: &StoreUrl) -> Result<Postgres> {
        Postgres::connect(SqlConfig::from_url(url)?.server()?).await
    }

    async fn connect(config: ServerConfig) -> Result<Postgres> {
        let store = format!("PostgreSQL {}", config.shown);
        let options = PgPoolOptions::new().max_connections(8).acquire_timeout(Duration::from_secs(10)).after_connect(
            |conn, _| {
                Box::pin(async move {
                    sqlx::query(IDLE_IN_STEP).execute(conn).await?;
                    Ok(())
                })
            },
        );
        let pool = open_pool(options, config.postgres()?, &store).await?;
        create_schema(&pool, config.create, &store).await?;
        let mut listener = PgListener::connect_with(&pool).await.map_err(|e| driver_error(&store, e))?;
        listener.listen(CHANNEL).await.map_err(|e| driver_error(&store, e))?;
        let wakes = Wakes::for_store(&format!("postgres:{}", config.shown));
        let task = Rt::current().spawn(listen(listener, Arc::downgrade(&wakes)));
        Ok(Postgres {
            pool,
            store,
            wakes,
            listener: std::sync::Mutex::new(Some(AbortOnDrop(task))),
            sweeps: Sweeps::default(),
        })
    }

    fn err(&self, e: sqlx::Error) -> Error {
        driver_error(&self.store, e)
    }
}

/// What the table lacks, read from the catalog first: a role that does not own the table
/// (granted only SELECT, INSERT, UPDATE, DELETE on it) must never run DDL, which needs
/// ownership (`ALTER TABLE`, `CREATE INDEX`) or CREATE on the schema even when nothing is
/// to be done. Only what is missing is made, once; concurrent `CREATE TABLE IF NOT EXISTS`
/// can collide in the catalog, so creators take a transaction-scoped advisory lock first.
/// With `?create=false` nothing is made: a missing table or column is an error naming
/// what to create (a missing index only slows the sweep).
async fn create_schema(pool: &PgPool, create: bool, store: &str) -> Result<()> {
    let err = |e| driver_error(store, e);
    let (table, column, index): (bool, bool, bool) = sqlx::query_as(SCHEMA_STATE).fetch_one(pool).await.map_err(err)?;
    if table && column && (index || !create) {
        return Ok(());
    }
    if !create {
        let missing = if table { "has no column free_us" } else { "does not exist" };
        return Err(Error::backend(format!(
            "{store}: table baton_state {missing}, and ?create=false forbids making it; as its owner run: {SCHEMA}; \
             {FREE_COLUMN}; {FREE_INDEX}"
        )));
    }
    let mut tx = pool.begin().await.map_err(err)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('baton_state'))").execute(&mut *tx).await.map_err(err)?;
    sqlx::query(SCHEMA).execute(&mut *tx).await.map_err(err)?;
    sqlx::query(FREE_COLUMN).execute(&mut *tx).await.map_err(err)?;
    sqlx::query(FREE_INDEX).execute(&mut *tx).await.map_err(err)?;
    tx.commit().await.map_err(err)
}

/// Turns notifications into wake-ups of this process's waiters. sqlx's listener
/// reconnects by itself; notifications lost meanwhile are covered by the waiters'
/// bounded re-checks.
async fn listen(mut listener: PgListener, wakes: std::sync::Weak<Wakes>) {
    loop {
        match listener.recv().await {
            Ok(n) => {
                let Some(wakes) = wakes.upgrade() else { return };
                if let Some((family, name)) = n.payload().split_once(':')
                    && let Some(family) = Family::from_name(family)
                {
                    wakes.notify(&Key { family, name: name.to_owned() });
                }
            }
            Err(sqlx::Error::PoolClosed) => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[async_trait]
impl StateStore for Postgres {
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        within_step_bound!(self.pool, |e| self.err(e), |c| self.step_on(&mut c, key, f))
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        within_step_bound!(self.pool, |e| self.err(e), |c| self.read_on(&mut c, key))
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(WatchSub(self.wakes.subscribe(key))))
    }

    async fn close(&self) {
        let listener = self.listener.locked().take();
        if let Some(mut task) = listener {
            task.0.abort();
            // Wait until the task (and the connection it holds) is really gone.
            let _ = (&mut task.0).await;
        }
        self.pool.close().await;
    }

    fn fence(&self) -> Option<&dyn crate::store::FenceOps> {
        Some(self)
    }
}

impl Postgres {
    /// One step, on `conn`: one transaction that locks the key's row.
    async fn step_on<R: Send + 'static>(&self, conn: &mut PgConnection, key: &Key, f: Op<R>) -> Result<R> {
        let mut tx = sqlx::Connection::begin(&mut *conn).await.map_err(|e| self.err(e))?;
        let select = format!(
            "SELECT state, version, free_us, {NOW_US} FROM baton_state WHERE family = $1 AND name = $2 FOR UPDATE"
        );
        let mut row: Option<(String, i64, Option<i64>, i64)> = None;
        for _ in 0..ROW_TRIES {
            row = sqlx::query_as(&select)
                .bind(key.family.as_str())
                .bind(&key.name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
            if row.is_some() {
                break;
            }
            // First use of the key (or its row was swept): make the row, then lock it like
            // any other.
            sqlx::query("INSERT INTO baton_state (family, name, state) VALUES ($1, $2, '{}') ON CONFLICT DO NOTHING")
                .bind(key.family.as_str())
                .bind(&key.name)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        let (json, version, free, now) = row.ok_or_else(|| {
            Error::backend(format!("baton_state: the row of {key} went {ROW_TRIES} times while this step made it"))
        })?;
        let step = step(Some((json, version, free)), u64::try_from(now).unwrap_or(0), f)?;
        let update = "UPDATE baton_state SET state = $3, version = $4, free_us = $5 WHERE family = $1 AND name = $2";
        write_state::<sqlx::Postgres>(&mut tx, update, key, step.outcome()).await.map_err(|e| self.err(e))?;
        if step.wakes {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(format!("{}:{}", key.family.as_str(), key.name))
                .execute(&mut *tx)
                .await
                .map_err(|e| self.err(e))?;
        }
        tx.commit().await.map_err(|e| self.err(e))?;
        if self.sweeps.due(&step) {
            // Best effort: a sweep that fails leaves rows for the next one.
            let sweep = format!("DELETE FROM baton_state WHERE free_us < {NOW_US} - $1");
            let _ = sqlx::query(&sweep).bind(grace_us()).execute(&mut *conn).await;
        }
        // This process's waiters need not wait for the notification's round trip.
        Ok(step.committed(&self.wakes, key))
    }

    async fn read_on(&self, conn: &mut PgConnection, key: &Key) -> Result<(KeyState, u64)> {
        let sql = format!("SELECT (SELECT state FROM baton_state WHERE family = $1 AND name = $2), {NOW_US}");
        let (json, now): (Option<String>, i64) = sqlx::query_as(&sql)
            .bind(key.family.as_str())
            .bind(&key.name)
            .fetch_one(conn)
            .await
            .map_err(|e| self.err(e))?;
        Ok((decode(json.as_deref())?, u64::try_from(now).unwrap_or(0)))
    }
}

super::fence::sql_fence!(Postgres, sqlx::Postgres, super::fence::POSTGRES, within_step_bound, |s| s.pool, |e| s.err(e));
