//! `Client::fence` on the SQL stores: the table `baton_fence(name, value, fence)`, made on
//! first use. A write is the guarded `UPDATE … WHERE name = ? AND fence <= ?` (a row
//! written by a later holder is left alone), or, for a new name, an insert that a
//! concurrent insert makes a no-op (the guarded update then decides). The caller's own
//! statements (`Fence::execute`) run as given, already guarded by `fenced_update`.

/// One dialect's statements.
pub(crate) struct Dialect {
    pub(crate) create: &'static str,
    /// Binds: value, token, name, token.
    pub(crate) update: &'static str,
    /// Binds: name, value, token; changes no row when the name exists.
    pub(crate) insert: &'static str,
    /// Binds: name.
    pub(crate) select: &'static str,
}

/// Implements `FenceOps` for a SQL store of driver `$db`: `$pool` and `$err` (sqlx error →
/// baton error) are expressions on `$s`, the store; `$on` is how a step runs on one pooled
/// connection (`within_step_bound` for a server, whose route may be lost; `on_pooled` for
/// a file).
macro_rules! sql_fence {
    ($store:ty, $db:ty, $d:expr, $on:ident, |$s:ident| $pool:expr, $err:expr) => {
        impl $store {
            async fn fence_update(
                c: &mut sqlx::pool::PoolConnection<$db>,
                key: &str,
                value: &str,
                token: i64,
            ) -> std::result::Result<bool, sqlx::Error> {
                let q = sqlx::query($d.update).bind(value).bind(token).bind(key).bind(token);
                Ok(q.execute(&mut **c).await?.rows_affected() > 0)
            }

            async fn fence_try_write(
                c: &mut sqlx::pool::PoolConnection<$db>,
                key: &str,
                value: &str,
                token: i64,
            ) -> std::result::Result<bool, sqlx::Error> {
                if Self::fence_update(c, key, value, token).await? {
                    return Ok(true);
                }
                let insert = sqlx::query($d.insert).bind(key).bind(value).bind(token).execute(&mut **c).await?;
                Ok(insert.rows_affected() > 0 || Self::fence_update(c, key, value, token).await?)
            }
        }

        #[async_trait::async_trait]
        impl crate::store::FenceOps for $store {
            async fn write(&self, key: &str, value: &str, token: u64) -> crate::error::Result<bool> {
                let token = i64::try_from(token).map_err(|_| {
                    crate::error::Error::invalid_argument(format!("token {token} does not fit a SQL BIGINT"))
                })?;
                let $s = self;
                $on!($pool, $err, |c| async {
                    $crate::store::sql::fence::with_table!(
                        c,
                        $d.create,
                        $err,
                        Self::fence_try_write(&mut c, key, value, token).await
                    )
                })
            }

            async fn read(&self, key: &str) -> crate::error::Result<Option<(String, u64)>> {
                let $s = self;
                let got: Option<(String, i64)> = $on!($pool, $err, |c| async {
                    $crate::store::sql::fence::with_table!(
                        c,
                        $d.create,
                        $err,
                        sqlx::query_as($d.select).bind(key).fetch_optional(&mut *c).await
                    )
                })?;
                Ok(got.map(|(v, t)| (v, u64::try_from(t).unwrap_or(0))))
            }

            async fn execute(&self, statement: &str) -> crate::error::Result<u64> {
                let $s = self;
                $on!($pool, $err, |c| async {
                    sqlx::query(statement).execute(&mut *c).await.map(|d| d.rows_affected()).map_err($err)
                })
            }
        }
    };
}

pub(crate) use sql_fence;

/// `$call`, a step on the pooled connection `$c`; on a database error (the table missing,
/// first of all) makes the table with `$create` and runs the step once more.
macro_rules! with_table {
    ($c:ident, $create:expr, $err:expr, $call:expr) => {
        match $call {
            Err(sqlx::Error::Database(_)) => {
                let _ = sqlx::query($create).execute(&mut *$c).await;
                $call.map_err($err)
            }
            r => r.map_err($err),
        }
    };
}

pub(crate) use with_table;

#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: Dialect = Dialect {
    create: "CREATE TABLE IF NOT EXISTS baton_fence (name TEXT PRIMARY KEY, value TEXT NOT NULL, fence INTEGER NOT NULL)",
    update: "UPDATE baton_fence SET value = ?, fence = ? WHERE name = ? AND fence <= ?",
    insert: "INSERT OR IGNORE INTO baton_fence (name, value, fence) VALUES (?, ?, ?)",
    select: "SELECT value, fence FROM baton_fence WHERE name = ?",
};

#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: Dialect = Dialect {
    create: "CREATE TABLE IF NOT EXISTS baton_fence (name TEXT PRIMARY KEY, value TEXT NOT NULL, fence BIGINT NOT NULL)",
    update: "UPDATE baton_fence SET value = $1, fence = $2 WHERE name = $3 AND fence <= $4",
    insert: "INSERT INTO baton_fence (name, value, fence) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
    select: "SELECT value, fence FROM baton_fence WHERE name = $1",
};

#[cfg(feature = "mysql")]
pub(crate) const MYSQL: Dialect = Dialect {
    create: "CREATE TABLE IF NOT EXISTS baton_fence \
             (name VARBINARY(510) PRIMARY KEY, value LONGTEXT NOT NULL, fence BIGINT NOT NULL) ENGINE = InnoDB",
    update: "UPDATE baton_fence SET value = ?, fence = ? WHERE name = ? AND fence <= ?",
    insert: "INSERT IGNORE INTO baton_fence (name, value, fence) VALUES (?, ?, ?)",
    select: "SELECT CAST(value AS CHAR), fence FROM baton_fence WHERE name = ?",
};
