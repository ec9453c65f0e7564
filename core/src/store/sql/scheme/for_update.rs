//! `?scheme=for-update`: the exclusive row lock. Each name has a row (inserted on first
//! use, never deleted); a hold is a transaction, on a connection pinned to it, that ran
//! `SELECT … FOR UPDATE SKIP LOCKED` on the row and got it (nothing back: busy — baton
//! never blocks inside the database, so MySQL's `innodb_lock_wait_timeout` never applies
//! to it; a plain SQL session waiting in `SELECT … FOR UPDATE` behind baton does wait, up
//! to that timeout). Commit releases; a closed connection or the lease running out
//! (`idle_in_transaction_session_timeout`, `wait_timeout`) rolls it back on the server.

use async_trait::async_trait;

use super::config::SchemeConfig;
use super::db::{Arg, Conn, Dialect, Pool};
use super::pinned::{Held, Session, set_lease};
use super::{Conns, create, fence};
use crate::error::Result;

pub(crate) struct ForUpdate {
    d: Dialect,
    /// Names whose row is known to exist (cleared when it grows large).
    rows: std::sync::Mutex<std::collections::HashSet<String>>,
    exists: String,
    insert: String,
    lock: String,
    table: String,
}

impl ForUpdate {
    pub(crate) async fn open(c: &Conns, cfg: &SchemeConfig) -> Result<ForUpdate> {
        let d = c.pool.dialect();
        let (t, name) = (d.q(&cfg.names.table), d.q(&cfg.names.name));
        let tail = if d == Dialect::Mysql { " ENGINE = InnoDB" } else { "" };
        let schema = format!("CREATE TABLE IF NOT EXISTS {t} ({name} {} NOT NULL PRIMARY KEY){tail}", d.name_type());
        create(c, cfg, &[schema, fence::schema(d, &cfg.names.fence_table)]).await?;
        Ok(ForUpdate {
            d,
            rows: std::sync::Mutex::default(),
            exists: format!("SELECT COUNT(*) FROM {t} WHERE {name} = {}", d.p(1)),
            insert: format!("{} {t} ({name}) VALUES ({}){}", d.insert_ignore(), d.p(1), d.on_conflict_nothing()),
            lock: format!("SELECT 1, {} FROM {t} WHERE {name} = {} FOR UPDATE SKIP LOCKED", session(d), d.p(1)),
            table: cfg.names.table.clone(),
        })
    }

    /// Makes the name's row if it is missing, in a statement of its own (an insert inside
    /// the locking transaction would take InnoDB gap locks that deadlock).
    async fn ensure_row(&self, pool: &Pool, name: &str) -> sqlx::Result<Row> {
        use crate::sync::LockExt;
        if self.rows.locked().contains(name) {
            return Ok(Row::Was);
        }
        let (n,): (i64,) = pool.one(&self.exists, &[Arg::S(name)]).await?;
        let row = if n > 0 {
            Row::Was
        } else {
            #[cfg(feature = "mysql")]
            let made = if self.d == Dialect::Mysql {
                self.insert_no_wait(pool, name).await?
            } else {
                pool.exec(&self.insert, &[Arg::S(name)]).await.map(|_| Row::Made)?
            };
            #[cfg(not(feature = "mysql"))]
            let made = pool.exec(&self.insert, &[Arg::S(name)]).await.map(|_| Row::Made)?;
            made
        };
        if row != Row::Unsure {
            let mut rows = self.rows.locked();
            if rows.len() >= 10_000 {
                rows.clear();
            }
            rows.insert(name.to_owned());
        }
        Ok(row)
    }
}

/// What [`ForUpdate::ensure_row`] knows of a name's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    /// It was there already.
    Was,
    /// This call made it (or found it made by another in the meantime).
    Made,
    /// MySQL's insert met another session's lock: the row may be another session's
    /// uncommitted insert, or missing, the lock a gap lock on where it would go (a
    /// duplicate check's, a locking read of a missing row). Not remembered; the attempt
    /// counts as busy and the next one looks again.
    Unsure,
}

#[cfg(feature = "mysql")]
impl ForUpdate {
    /// MySQL's `INSERT IGNORE` of the name's row without waiting: its duplicate check
    /// takes a shared lock on an existing row, so when another client made the row between
    /// our count and our insert and already holds it (`FOR UPDATE`), the insert would wait
    /// for the hold to end (up to `innodb_lock_wait_timeout`, 50 s by default; the lab's
    /// race of 4 first-time contenders saw a "try" blocked for the holder's whole lease).
    /// The session's lock wait is 0 for that one statement (MariaDB: no wait; MySQL clamps
    /// it to its minimum, 1 s). A lock wait timeout does not prove the row exists: taking
    /// it for "exists" once made a missing row look present forever, every attempt busy
    /// (a fresh table, whose few rows leave wide gaps, hit that in CI).
    async fn insert_no_wait(&self, pool: &Pool, name: &str) -> sqlx::Result<Row> {
        let mut conn = pool.conn().await?;
        conn.ex().exec("SET SESSION innodb_lock_wait_timeout = 0", &[]).await?;
        let done = conn.ex().exec(&self.insert, &[Arg::S(name)]).await;
        if conn
            .ex()
            .exec("SET SESSION innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout", &[])
            .await
            .is_err()
        {
            // Never back to the pool with no lock wait at all.
            conn.close().await;
        }
        match done {
            Err(sqlx::Error::Database(d))
                if d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>().is_some_and(|e| e.number() == 1205) =>
            {
                Ok(Row::Unsure)
            }
            r => r.map(|_| Row::Made),
        }
    }
}

/// The server's id of the session, as SQL.
pub(crate) fn session(d: Dialect) -> &'static str {
    if d == Dialect::Mysql { "CAST(CONNECTION_ID() AS SIGNED)" } else { "pg_backend_pid()::bigint" }
}

/// Restores MySQL's idle limit before the connection goes back to the pool.
#[cfg(feature = "mysql")]
pub(crate) const MYSQL_RESET: &str = "SET SESSION wait_timeout = @@GLOBAL.wait_timeout";

#[async_trait]
impl Session for ForUpdate {
    async fn take(&self, conns: &Conns, conn: Conn, name: &str, lease_ms: u64) -> sqlx::Result<Option<(Held, i64)>> {
        if self.ensure_row(&conns.pool, name).await? == Row::Unsure {
            // No locking read of a row that may be missing: on MySQL it would take a gap
            // lock, on which other sessions' first inserts fail in turn.
            return Ok(None);
        }
        let mut held = Held::Tx(conn.begin().await?);
        let got: Option<(i32, i64)> = held.ex().opt(&self.lock, &[Arg::S(name)]).await?;
        match (got, held) {
            (Some((_, session)), mut held) => {
                set_lease(self.d, &mut held, lease_ms, "idle_in_transaction_session_timeout", true).await?;
                Ok(Some((held, session)))
            }
            (None, Held::Tx(t)) => t.rollback().await.map(|()| None),
            (None, Held::Conn(_)) => Ok(None),
        }
    }

    async fn keep(&self, held: &mut Held, lease_ms: u64) -> sqlx::Result<()> {
        set_lease(self.d, held, lease_ms, "idle_in_transaction_session_timeout", true).await
    }

    async fn give_back(&self, mut held: Held, _name: &str) -> sqlx::Result<()> {
        #[cfg(feature = "mysql")]
        if self.d == Dialect::Mysql {
            held.ex().exec(MYSQL_RESET, &[]).await?;
        }
        match held {
            Held::Tx(t) => t.commit().await,
            Held::Conn(_) => Ok(()),
        }
    }

    async fn holder(&self, pool: &Pool, name: &str) -> sqlx::Result<Option<i64>> {
        if self.ensure_row(pool, name).await? != Row::Was {
            // Made just now, or not known to be there (no locking read of a missing row).
            return Ok(None);
        }
        // A row this transaction cannot lock at once is locked by another one.
        let mut tx = pool.begin().await?;
        let got: Option<(i32, i64)> = tx.ex().opt(&self.lock, &[Arg::S(name)]).await?;
        tx.rollback().await?;
        Ok(got.is_none().then_some(-1))
    }

    fn foreign(&self, _session: i64) -> String {
        format!("sql:{}", self.table)
    }

    /// Probing a row lock takes it for a moment, which would make other attempts see
    /// busy: waiters poll the counter row instead.
    fn cheap_holder(&self) -> bool {
        false
    }
}
