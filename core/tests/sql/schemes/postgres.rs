//! The SQL lock schemes (`?scheme=table|for-update|optimistic|advisory`) on `postgres://`
//! (the server of `scripts/services`): the behaviour suite's lock checks for each, a
//! SIGKILLed holder, and interop both ways with a plain SQL session following the
//! recipes' statements (docs/sql-schemes.md), baton's holds seen in `pg_locks`,
//! `pg_stat_activity` and the rows.
#![cfg(feature = "postgres")]

use std::time::Duration;

use baton::Client;
use baton_testkit::behaviour::{bounded, unique, with_option};
use sqlx::Connection;

/// The session id of a plain connection (`table_cut_mid_acquire`).
const SESSION_ID: &str = "SELECT pg_backend_pid()::bigint";

/// Statements waiting on the blocker's row (`table_cut_mid_acquire`; `{blocker}`: its
/// backend's pid).
const LOCK_WAITS: &str = "SELECT COUNT(*) FROM pg_stat_activity WHERE {blocker} = ANY(pg_blocking_pids(pid))";

/// The same for `state_cut_mid_acquire`.
const STATE_LOCK_WAITS: &str = LOCK_WAITS;

server_schemes!("BATON_TEST_POSTGRES_URL", sqlx::PgConnection);

#[tokio::test]
async fn odd_names_are_data() {
    for s in ["table", "for-update", "optimistic", "advisory"] {
        let names = super::odd_names_are_data(&url(s)).await;
        if s == "table" {
            let mut c = raw().await;
            let n: i64 = sqlx::query_scalar("SELECT count(*) FROM baton_lock_fence WHERE name = ANY($1)")
                .bind(&names)
                .fetch_one(&mut c)
                .await
                .unwrap();
            assert_eq!(
                n,
                names.len() as i64,
                "every odd name has its counter row, and baton_lock_fence is still there"
            );
        }
    }
}

/// The recipe's table, as a team has it (`method_lock` with a unique `method_name`, an
/// `id` and a `description`), with baton's columns added, joined by `?create=false`:
/// a plain `INSERT INTO method_lock` makes baton wait, baton's hold is a row plain SQL sees
/// and cannot insert over, and a plain `DELETE` lets baton in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_interop_with_plain_sql() {
    let mut sql = raw().await;
    let table = format!("method_lock_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!(
        "CREATE TABLE {table} (id SERIAL PRIMARY KEY, method_name VARCHAR(255) NOT NULL UNIQUE, \
         description VARCHAR(1024) NOT NULL DEFAULT 'note', owner TEXT NOT NULL DEFAULT '', expires_at BIGINT NULL, \
         hold_count BIGINT NOT NULL DEFAULT 1, token BIGINT NOT NULL DEFAULT 0)"
    ))
    .execute(&mut sql)
    .await
    .unwrap();
    let u = with_option(&url("table"), &format!("table={table}&name_column=method_name&create=false"));
    let c = Client::connect(&u).await.unwrap();
    let name = unique("method");
    // Plain SQL holds it: baton waits, and sees a holder of the table.
    sqlx::query(&format!("INSERT INTO {table} (method_name, description) VALUES ($1, 'by hand')"))
        .bind(&name)
        .execute(&mut sql)
        .await
        .unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    let info = c.inspect(&name).await.unwrap();
    assert_eq!(info.holders[0].owner, format!("sql:{table}"), "{info:?}");
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    sqlx::query(&format!("DELETE FROM {table} WHERE method_name = $1")).bind(&name).execute(&mut sql).await.unwrap();
    let g = bounded("baton after the plain DELETE", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    // Baton holds it: the row is there with its owner and token; a plain insert fails.
    let (owner, token): (String, i64) =
        sqlx::query_as(&format!("SELECT owner, token FROM {table} WHERE method_name = $1"))
            .bind(&name)
            .fetch_one(&mut sql)
            .await
            .unwrap();
    assert_eq!(token as u64, g.token().get());
    assert!(!owner.is_empty());
    let dup =
        sqlx::query(&format!("INSERT INTO {table} (method_name) VALUES ($1)")).bind(&name).execute(&mut sql).await;
    assert!(dup.unwrap_err().to_string().contains("duplicate key"), "the unique index refuses a second holder");
    g.release().await.unwrap();
    let left: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {table} WHERE method_name = $1"))
        .bind(&name)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    assert_eq!(left, 0, "release deletes the row");
    c.close().await;
    sqlx::query(&format!("DROP TABLE {table}")).execute(&mut sql).await.unwrap();
}

/// A plain session's `SELECT … FOR UPDATE` holds baton off until it commits; baton's hold
/// makes a plain `FOR UPDATE NOWAIT` fail and shows as a session idle in a transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_update_interop_with_plain_sql() {
    let c = Client::connect(&url("for-update")).await.unwrap();
    let name = unique("row");
    // Baton makes the row on first use.
    c.lock(&name).acquire().await.unwrap().release().await.unwrap();
    let mut sql = raw().await;
    let mut tx = sql.begin().await.unwrap();
    sqlx::query("SELECT name FROM baton_row_lock WHERE name = $1 FOR UPDATE")
        .bind(&name)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    tx.commit().await.unwrap();
    let g = bounded("baton after the plain COMMIT", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let mut tx = sql.begin().await.unwrap();
    let e = sqlx::query("SELECT name FROM baton_row_lock WHERE name = $1 FOR UPDATE NOWAIT")
        .bind(&name)
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("could not obtain lock"), "{e}");
    tx.rollback().await.unwrap();
    let pid: i64 = sqlx::query_scalar("SELECT session FROM baton_lock_fence WHERE name = $1")
        .bind(&name)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    let state: String = sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE pid = $1")
        .bind(pid as i32)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    assert_eq!(state, "idle in transaction");
    g.release().await.unwrap();
    c.close().await;
}

/// `SELECT pg_advisory_lock(<baton's key>)` in psql holds baton off; baton's hold is the
/// advisory lock `pg_locks` lists, which a plain `pg_try_advisory_lock` cannot take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_interop_with_plain_sql() {
    let c = Client::connect(&url("advisory")).await.unwrap();
    let name = unique("adv");
    let mut sql = raw().await;
    let key: i64 = sqlx::query_scalar("SELECT ('x' || substr(md5($1), 1, 16))::bit(64)::bigint")
        .bind(&name)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)").bind(key).execute(&mut sql).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    let info = c.inspect(&name).await.unwrap();
    assert!(info.holders[0].owner.starts_with("postgres:pid:"), "{info:?}");
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    sqlx::query("SELECT pg_advisory_unlock($1)").bind(key).execute(&mut sql).await.unwrap();
    let g = bounded("baton after pg_advisory_unlock", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let took: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)").bind(key).fetch_one(&mut sql).await.unwrap();
    assert!(!took, "baton's hold is the same advisory lock");
    let listed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
         AND classid::bigint = ($1 >> 32) & 4294967295 AND objid::bigint = $1 & 4294967295",
    )
    .bind(key)
    .fetch_one(&mut sql)
    .await
    .unwrap();
    assert_eq!(listed, 1);
    // psql, as a team's script would: it waits for baton's release.
    let psql = tokio::process::Command::new("psql")
        .args(["-X", "-q", "-tA", "-d", &base(), "-c"])
        .arg(format!("SELECT pg_advisory_lock({key}); SELECT 'got it'"))
        .output();
    let psql = tokio::spawn(psql);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!psql.is_finished(), "psql did not wait for baton");
    g.release().await.unwrap();
    let out = bounded("psql after baton's release", Duration::from_secs(10), psql).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("got it"), "{out:?}");
    c.close().await;
}

/// The optimistic scheme's row: each change bumps the version; a plain `UPDATE … WHERE
/// version = <read>` holding it (owner set) holds baton off, and baton's token is the version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimistic_interop_with_plain_sql() {
    let c = Client::connect(&url("optimistic")).await.unwrap();
    let name = unique("version");
    let g = c.lock(&name).acquire().await.unwrap();
    let mut sql = raw().await;
    let (version, owner): (i64, Option<String>) =
        sqlx::query_as("SELECT version, owner FROM baton_version_lock WHERE name = $1")
            .bind(&name)
            .fetch_one(&mut sql)
            .await
            .unwrap();
    assert_eq!(version as u64, g.token().get());
    assert!(owner.is_some());
    g.release().await.unwrap();
    let v: i64 = sqlx::query_scalar("SELECT version FROM baton_version_lock WHERE name = $1")
        .bind(&name)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    let n = sqlx::query(
        "UPDATE baton_version_lock SET owner = 'script', version = version + 1 WHERE name = $1 AND version = $2",
    )
    .bind(&name)
    .bind(v)
    .execute(&mut sql)
    .await
    .unwrap()
    .rows_affected();
    assert_eq!(n, 1);
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    sqlx::query("UPDATE baton_version_lock SET owner = NULL, version = version + 1 WHERE name = $1")
        .bind(&name)
        .execute(&mut sql)
        .await
        .unwrap();
    let g = bounded("baton after the plain release", Duration::from_secs(5), c.lock(&name).acquire()).await.unwrap();
    assert!(g.token().get() > v as u64 + 1);
    g.release().await.unwrap();
    c.close().await;
}

/// `pg_terminate_backend` of the holder's session under `advisory` and `for-update`: the
/// holder's lost signal fires within 1 s (`super::killed_session_is_lost_at_once`);
/// it fired only at the next renewal before the pinned connection was watched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_session_is_lost_at_once() {
    for s in ["advisory", "for-update"] {
        super::killed_session_is_lost_at_once(&url(s), s, |name| async move {
            let mut c = raw().await;
            let pid: i64 = sqlx::query_scalar("SELECT session FROM baton_lock_fence WHERE name = $1")
                .bind(&name)
                .fetch_one(&mut c)
                .await
                .unwrap();
            let ended: bool =
                sqlx::query_scalar("SELECT pg_terminate_backend($1)").bind(pid as i32).fetch_one(&mut c).await.unwrap();
            assert!(ended, "no backend {pid}");
        })
        .await;
    }
}
