//! The companion counter of the schemes' fencing tokens: one row per name in `fence_table`
//! (`baton_lock_fence`), bumped once per fresh grant and never deleted, so tokens keep growing
//! after a lock row is deleted, a transaction rolls back or a session ends. The row also
//! says who took the last grant (and, for session locks, from which server session), which
//! `inspect` reports for schemes whose lock itself records no owner.

use super::db::{Arg, Dialect, Pool};

/// `CREATE TABLE IF NOT EXISTS` of the counter table.
pub(crate) fn schema(d: Dialect, table: &str) -> String {
    let t = d.q(table);
    match d {
        Dialect::Mysql => format!(
            "CREATE TABLE IF NOT EXISTS {t} (name {} NOT NULL PRIMARY KEY, fence BIGINT NOT NULL DEFAULT 0, \
             holder VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, session BIGINT NULL) ENGINE = InnoDB",
            d.name_type()
        ),
        _ => format!(
            "CREATE TABLE IF NOT EXISTS {t} (name TEXT NOT NULL PRIMARY KEY, fence BIGINT NOT NULL DEFAULT 0, \
             holder TEXT NULL, session BIGINT NULL)"
        ),
    }
}

/// Bumps the counter of `name` (to at least the database's clock in µs) and records the
/// grant's holder and session; returns the new token. One statement, committed on its own through the pool, which runs it again
/// when InnoDB or PostgreSQL picks it as a deadlock victim (grants of overlapping names at
/// once: a multi-lock's).
pub(crate) async fn next(
    pool: &Pool,
    table: &str,
    name: &str,
    holder: &str,
    session: Option<i64>,
) -> std::result::Result<u64, sqlx::Error> {
    let d = pool.dialect();
    let t = d.q(table);
    let session = session.unwrap_or(-1);
    let args = [Arg::S(name), Arg::S(holder), Arg::I(session)];
    let token = match d {
        // LAST_INSERT_ID(expr) hands the counter back in the statement's reply.
        Dialect::Mysql => {
            let now = d.now_us();
            let sql = format!(
                "INSERT INTO {t} (name, fence, holder, session) VALUES (?, LAST_INSERT_ID({now}), ?, ?) \
                 ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, {now})), holder = VALUES(holder), \
                 session = VALUES(session)"
            );
            i64::try_from(pool.exec(&sql, &args).await?.last_id).unwrap_or(i64::MAX)
        }
        _ => {
            let sql = format!(
                "INSERT INTO {t} (name, fence, holder, session) VALUES ({}, {}, {}, {}) ON CONFLICT (name) DO UPDATE \
                 SET fence = {}({t}.fence + 1, excluded.fence), holder = excluded.holder, \
                 session = excluded.session RETURNING fence",
                d.p(1),
                d.now_us(),
                d.p(2),
                d.p(3),
                d.greatest()
            );
            pool.one::<(i64,)>(&sql, &args).await?.0
        }
    };
    Ok(u64::try_from(token).unwrap_or(0))
}

/// Raises the counter of `name` to `token` (a claim's token above the scheme's own).
pub(crate) async fn adopt(pool: &Pool, table: &str, name: &str, token: u64) -> std::result::Result<(), sqlx::Error> {
    let d = pool.dialect();
    let sql =
        format!("UPDATE {t} SET fence = {}(fence, {}) WHERE name = {}", d.greatest(), d.p(1), d.p(2), t = d.q(table));
    let token = i64::try_from(token).unwrap_or(i64::MAX);
    pool.exec(&sql, &[Arg::I(token), Arg::S(name)]).await.map(drop)
}

/// The last token of `name`, its holder and session (`None`: never granted).
pub(crate) async fn last(
    pool: &Pool,
    table: &str,
    name: &str,
) -> std::result::Result<Option<(u64, Option<String>, i64)>, sqlx::Error> {
    let d = pool.dialect();
    let sql = format!("SELECT fence, {}, session FROM {} WHERE name = {}", d.text("holder"), d.q(table), d.p(1));
    let row: Option<(i64, Option<String>, Option<i64>)> = pool.opt(&sql, &[Arg::S(name)]).await?;
    Ok(row.map(|(f, h, s)| (u64::try_from(f).unwrap_or(0), h, s.unwrap_or(-1))))
}

/// Marks `name`'s last grant, taken in `session`, as given back (its waiters poll this).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn released(
    pool: &Pool,
    table: &str,
    name: &str,
    session: i64,
) -> std::result::Result<(), sqlx::Error> {
    let d = pool.dialect();
    let sql = format!("UPDATE {} SET session = NULL WHERE name = {} AND session = {}", d.q(table), d.p(1), d.p(2));
    pool.exec(&sql, &[Arg::S(name), Arg::I(session)]).await.map(drop)
}
