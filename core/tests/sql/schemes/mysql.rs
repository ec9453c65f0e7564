//! The SQL lock schemes on `mysql://` (the MariaDB server of `scripts/services`): the
//! behaviour suite's lock checks for each scheme, a SIGKILLed holder, and interop both ways
//! with plain SQL sessions following the recipes' statements (docs/sql-schemes.md);
//! baton's holds seen in `information_schema.innodb_trx`, `IS_USED_LOCK` and the rows.
#![cfg(feature = "mysql")]

use std::time::Duration;

use baton::Client;
use baton_testkit::behaviour::{bounded, unique, with_option};
use sqlx::Connection;

/// The session id of a plain connection (`table_cut_mid_acquire`).
const SESSION_ID: &str = "SELECT CAST(CONNECTION_ID() AS SIGNED)";

/// Statements waiting on the blocker's row (`table_cut_mid_acquire`; `{blocker}`: its
/// connection id, unused here). MariaDB lists such an autocommit insert in its process list
/// (`Update`), not always in `innodb_trx`; a second of it tells it from other clients'
/// inserts running by.
const LOCK_WAITS: &str = "SELECT COUNT(*) FROM information_schema.processlist \
                          WHERE state = 'Update' AND time >= 1 AND info LIKE 'INSERT IGNORE INTO `baton_lock`%'";

/// Steps waiting on a row lock (`state_cut_mid_acquire`; `{blocker}` unused): as for
/// `LOCK_WAITS`, MariaDB lists a step's `SELECT … FOR UPDATE` waiting on a row lock in its
/// process list (`Statistics`) but not in `innodb_trx` or `innodb_lock_waits`. Another
/// client's step waiting meanwhile on the shared server (`cut_holder` runs beside this file
/// in CI) can only make the test cut before A's step waits: then A's `SELECT` is held in
/// the relay, which the test's checks also hold for (a weaker trial, never a false failure).
const STATE_LOCK_WAITS: &str = "SELECT COUNT(*) FROM information_schema.processlist \
                                WHERE time >= 1 AND info LIKE 'SELECT state, version, %FOR UPDATE'";

server_schemes!("BATON_TEST_MYSQL_URL", sqlx::MySqlConnection);

#[tokio::test]
async fn odd_names_are_data() {
    for s in ["table", "for-update", "optimistic", "advisory"] {
        super::odd_names_are_data(&url(s)).await;
    }
}

/// The recipe's MySQL table (`id` AUTO_INCREMENT, a unique `lock_name`, a `desc`, an
/// `update_time`), with baton's columns added, joined with `?create=false`: a plain
/// `INSERT INTO` holds baton off, baton's hold is a row a plain insert collides with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_interop_with_plain_sql() {
    let mut sql = raw().await;
    let table = format!("lock_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!(
        "CREATE TABLE {table} (id INT NOT NULL AUTO_INCREMENT, lock_name VARCHAR(255) NOT NULL DEFAULT '', \
         `desc` VARCHAR(1024) NOT NULL DEFAULT 'note', \
         update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, \
         owner VARCHAR(512) NOT NULL DEFAULT '', expires_at BIGINT NULL, hold_count BIGINT NOT NULL DEFAULT 1, \
         token BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id), UNIQUE KEY uidx_lock_name (lock_name) USING BTREE) \
         ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_bin"
    ))
    .execute(&mut sql)
    .await
    .unwrap();
    let u = with_option(&url("table"), &format!("table={table}&name_column=lock_name&create=false"));
    let c = Client::connect(&u).await.unwrap();
    let name = unique("method");
    sqlx::query(&format!("INSERT INTO {table} (lock_name, `desc`) VALUES (?, 'by hand')"))
        .bind(&name)
        .execute(&mut sql)
        .await
        .unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished());
    sqlx::query(&format!("DELETE FROM {table} WHERE lock_name = ?")).bind(&name).execute(&mut sql).await.unwrap();
    let g = bounded("baton after the plain DELETE", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let token: i64 = sqlx::query_scalar(&format!("SELECT token FROM {table} WHERE lock_name = ?"))
        .bind(&name)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    assert_eq!(token as u64, g.token().get());
    let dup = sqlx::query(&format!("INSERT INTO {table} (lock_name) VALUES (?)")).bind(&name).execute(&mut sql).await;
    assert!(dup.unwrap_err().to_string().contains("Duplicate entry"), "the unique index refuses a second holder");
    g.release().await.unwrap();
    c.close().await;
    sqlx::query(&format!("DROP TABLE {table}")).execute(&mut sql).await.unwrap();
}

/// A plain `SELECT … FOR UPDATE` holds baton off until COMMIT; baton's hold is an open
/// InnoDB transaction of its session (`information_schema.innodb_trx`), behind which a
/// plain `FOR UPDATE` waits for `innodb_lock_wait_timeout` and then fails (1205).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_update_interop_with_plain_sql() {
    let c = Client::connect(&url("for-update")).await.unwrap();
    let name = unique("row");
    c.lock(&name).acquire().await.unwrap().release().await.unwrap();
    let mut sql = raw().await;
    let mut tx = sql.begin().await.unwrap();
    sqlx::query("SELECT name FROM baton_row_lock WHERE name = ? FOR UPDATE")
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
    let session: i64 = sqlx::query_scalar("SELECT session FROM baton_lock_fence WHERE name = ?")
        .bind(&name)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    let trx: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = ?")
            .bind(session)
            .fetch_one(&mut sql)
            .await
            .unwrap();
    assert_eq!(trx, 1, "baton's hold is an open transaction of its session");
    sqlx::query("SET SESSION innodb_lock_wait_timeout = 1").execute(&mut sql).await.unwrap();
    let mut tx = sql.begin().await.unwrap();
    let t0 = tokio::time::Instant::now();
    let e = sqlx::query("SELECT name FROM baton_row_lock WHERE name = ? FOR UPDATE")
        .bind(&name)
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("Lock wait timeout"), "{e}");
    assert!(t0.elapsed() >= Duration::from_millis(900), "{:?}", t0.elapsed());
    tx.rollback().await.unwrap();
    g.release().await.unwrap();
    c.close().await;
}

/// `GET_LOCK(name, 0)` in a plain session holds baton off; baton's hold is the named lock
/// `IS_USED_LOCK` reports; a name over 64 characters is `baton:` + its MD5; the `mysql`
/// client's `GET_LOCK(name, 10)` waits for baton's release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_interop_with_plain_sql() {
    let c = Client::connect(&url("advisory")).await.unwrap();
    let name = unique("adv");
    let mut sql = raw().await;
    let got: i64 = sqlx::query_scalar("SELECT GET_LOCK(?, 0)").bind(&name).fetch_one(&mut sql).await.unwrap();
    assert_eq!(got, 1);
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    let info = c.inspect(&name).await.unwrap();
    assert!(info.holders[0].owner.starts_with("mysql:connection:"), "{info:?}");
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    sqlx::query("SELECT RELEASE_LOCK(?)").bind(&name).execute(&mut sql).await.unwrap();
    let g = bounded("baton after RELEASE_LOCK", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let used: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(?)").bind(&name).fetch_one(&mut sql).await.unwrap();
    assert!(used.is_some(), "baton's hold is the named lock");
    // The mysql client waits for baton, as a team's script would.
    let (user, rest) =
        base().trim_start_matches("mysql://").split_once('@').map(|(a, b)| (a.to_owned(), b.to_owned())).unwrap();
    let (user, pass) = user.split_once(':').unwrap();
    let (hostport, db) = rest.split_once('/').unwrap();
    let (host, port) = hostport.split_once(':').unwrap();
    let cli = tokio::process::Command::new("mysql")
        .env("MYSQL_PWD", pass)
        .args(["--no-defaults", "--protocol=tcp", "-h", host, "-P", port, "-u", user, "-N", "-B", db, "-e"])
        .arg(format!("SELECT GET_LOCK('{name}', 10), 'got it'"))
        .output();
    let cli = tokio::spawn(cli);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!cli.is_finished(), "mysql did not wait for baton");
    g.release().await.unwrap();
    let out = bounded("mysql after baton's release", Duration::from_secs(15), cli).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("1\tgot it"), "{out:?}");
    // A name longer than MySQL's 64 characters.
    let long = format!("{name}/{}", "x".repeat(80));
    let g = c.lock(&long).acquire().await.unwrap();
    let used: Option<i64> = sqlx::query_scalar("SELECT IS_USED_LOCK(CONCAT('baton:', MD5(?)))")
        .bind(&long)
        .fetch_one(&mut sql)
        .await
        .unwrap();
    assert!(used.is_some(), "a long name is held as baton:<md5>");
    g.release().await.unwrap();
    c.close().await;
}

/// A try never waits inside the database, not even on a name's first use: a session that
/// made the row and holds it (here a plain one, its insert not yet committed; in the lab,
/// another first-time contender between baton's count and insert) makes the `INSERT
/// IGNORE` of the row wait for its lock, up to `innodb_lock_wait_timeout` (50 s) before
/// the fix, which runs that insert with no lock wait (the row exists: busy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_update_try_never_waits_on_a_row_made_and_held_by_another() {
    let c = Client::connect(&url("for-update")).await.unwrap();
    let name = unique("first-use");
    let mut sql = raw().await;
    sqlx::query("BEGIN").execute(&mut sql).await.unwrap();
    sqlx::query("INSERT INTO baton_row_lock (name) VALUES (?)").bind(&name).execute(&mut sql).await.unwrap();
    let got = bounded("a try beside a held first row", Duration::from_secs(10), c.lock(&name).try_acquire()).await;
    assert!(got.unwrap().is_none(), "granted while another session holds the row");
    sqlx::query("COMMIT").execute(&mut sql).await.unwrap();
    let g = c.lock(&name).try_acquire().await.unwrap().expect("free once the session committed");
    g.release().await.unwrap();
    sql.close().await.unwrap();
    c.close().await;
}

/// A first insert that meets a gap lock does not make a missing row look present: a plain
/// session's locking read of the missing row locks the gap where it would go, so baton's
/// no-wait insert of the row fails (busy); once that session ends, baton makes the row and
/// takes the lock. Before the fix the row was remembered as there, and every later attempt
/// in that client was busy for good (CI: a multi-lock on a fresh table never granted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn for_update_gap_lock_never_fakes_a_row() {
    let c = Client::connect(&url("for-update")).await.unwrap();
    let name = unique("gap");
    let mut sql = raw().await;
    let mut tx = sql.begin().await.unwrap();
    let found = sqlx::query("SELECT name FROM baton_row_lock WHERE name = ? FOR UPDATE")
        .bind(&name)
        .fetch_optional(&mut *tx)
        .await
        .unwrap();
    assert!(found.is_none(), "the name is new");
    let got = bounded("a try beside a gap lock", Duration::from_secs(10), c.lock(&name).try_acquire()).await;
    assert!(got.unwrap().is_none(), "granted without the row");
    tx.commit().await.unwrap();
    let g = bounded("a try once the gap is free", Duration::from_secs(10), c.lock(&name).try_acquire())
        .await
        .unwrap()
        .expect("free once the plain session ended");
    g.release().await.unwrap();
    sql.close().await.unwrap();
    c.close().await;
}

/// `KILL CONNECTION` of the holder's session under `advisory` and `for-update`: the
/// holder's lost signal fires within 1 s (`super::killed_session_is_lost_at_once`);
/// it fired only at the next renewal before the pinned connection was watched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_session_is_lost_at_once() {
    for s in ["advisory", "for-update"] {
        super::killed_session_is_lost_at_once(&url(s), s, |name| async move {
            let mut c = raw().await;
            let id: i64 = sqlx::query_scalar("SELECT session FROM baton_lock_fence WHERE name = ?")
                .bind(&name)
                .fetch_one(&mut c)
                .await
                .unwrap();
            sqlx::query(&format!("KILL CONNECTION {id}")).execute(&mut c).await.unwrap();
        })
        .await;
    }
}
