//! Fenced writes at the resource (`Client::fence`, `fenced_update`) on every store that has
//! them: a holder paused past its lease wakes up with an old token, and the store itself
//! refuses its late write; the new holder's writes (several, with one token) are taken.
#![cfg(feature = "full")]

use std::time::Duration;

use baton::{Client, ErrorKind, FencingToken, LockOptions};
use baton_testkit::behaviour::bounded;
use baton_testkit::behaviour::crash::server_url;
use baton_testkit::{Relay, target_of};
use tokio::time::Instant;

fn unique(tag: &str) -> String {
    format!("fence-test/{tag}/{}", uuid::Uuid::new_v4().simple())
}

/// A holder with a short lease stops (paused: it makes no call) until its lease is gone;
/// another takes the lock and writes; the paused one's write then comes too late.
async fn paused_holder_is_refused(url: &str) {
    let (a, b) = (Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap());
    let (name, key) = (unique("lock"), unique("value"));
    let old = a.lock_with(&name, LockOptions::new().ttl(Duration::from_secs(2))).acquire().await.unwrap();
    assert!(a.fence().write(&key, "old", old.token()).await.unwrap(), "the holder writes while it holds");
    let new = b.lock(&name).acquire_timeout(Duration::from_secs(30)).await.unwrap();
    assert!(new.token() > old.token());
    let fence = b.fence();
    assert!(fence.write(&key, "new", new.token()).await.unwrap());
    assert!(fence.write(&key, "new again", new.token()).await.unwrap(), "one grant writes as often as it likes");
    assert!(!a.fence().write(&key, "stale", old.token()).await.unwrap(), "{url}: the paused holder's write was taken");
    let got = fence.read(&key).await.unwrap().unwrap();
    assert_eq!((got.value.as_str(), got.token), ("new again", new.token()), "{url}");
    assert_eq!(fence.read(&unique("absent")).await.unwrap(), None);
    assert_eq!(old.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    new.release().await.unwrap();
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn memory() {
    paused_holder_is_refused("memory://fence-test").await;
}

#[tokio::test]
async fn sqlite() {
    let dir = tempfile::tempdir().unwrap();
    paused_holder_is_refused(&format!("sqlite://{}/f.db", dir.path().display())).await;
}

#[tokio::test]
async fn postgres() {
    paused_holder_is_refused(&server_url("BATON_TEST_POSTGRES_URL")).await;
}

#[tokio::test]
async fn mysql() {
    paused_holder_is_refused(&server_url("BATON_TEST_MYSQL_URL")).await;
}

#[tokio::test]
async fn redis() {
    paused_holder_is_refused(&server_url("BATON_TEST_REDIS_URL")).await;
}

#[tokio::test]
async fn redis_cluster() {
    paused_holder_is_refused(&server_url("BATON_TEST_REDIS_CLUSTER_URL")).await;
}

#[tokio::test]
async fn etcd() {
    paused_holder_is_refused(&server_url("BATON_TEST_ETCD_URL")).await;
}

#[tokio::test]
async fn zookeeper() {
    paused_holder_is_refused(&server_url("BATON_TEST_ZK_URL")).await;
}

#[tokio::test]
async fn zookeeper_ensemble() {
    paused_holder_is_refused(&server_url("BATON_TEST_ZK_ENSEMBLE_URL")).await;
}

#[tokio::test]
async fn etcd_http() {
    paused_holder_is_refused(&server_url("BATON_TEST_ETCD_HTTP_URL")).await;
}

#[tokio::test]
async fn redlock_points_to_the_resource_store() {
    let c = Client::connect(&server_url("BATON_TEST_REDLOCK_URL")).await.unwrap();
    let e = c.fence().write("x", "v", FencingToken::new(1)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    c.close().await;
}

/// The caller's own `UPDATE`, guarded: the paused holder's statement changes no row.
async fn fenced_statement(url: &str, create: &str) {
    let (a, b) = (Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap());
    let table = format!("fence_stock_{}", uuid::Uuid::new_v4().simple());
    let name = unique("stock");
    let old = a.lock_with(&name, LockOptions::new().ttl(Duration::from_secs(2))).acquire().await.unwrap();
    run(url, &create.replace("TABLE_NAME", &table)).await;
    run(url, &format!("INSERT INTO {table} (item, n) VALUES (1, 10)")).await;
    let sell = format!("UPDATE {table} SET n = n - 1 WHERE item = 1");
    assert_eq!(a.fence().execute(&sell, old.token()).await.unwrap(), 1);
    let new = b.lock(&name).acquire_timeout(Duration::from_secs(30)).await.unwrap();
    assert_eq!(b.fence().execute(&sell, new.token()).await.unwrap(), 1);
    assert_eq!(b.fence().execute(&sell, new.token()).await.unwrap(), 1);
    assert_eq!(a.fence().execute(&sell, old.token()).await.unwrap(), 0, "{url}: the paused holder's UPDATE was taken");
    let e = a.fence().execute(&format!("DELETE FROM {table}"), old.token()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(scalar(url, &format!("SELECT n FROM {table} WHERE item = 1")).await, 7);
    run(url, &format!("DROP TABLE {table}")).await;
    new.release().await.unwrap();
    let _ = old.release().await;
}

async fn run(url: &str, sql: &str) {
    use sqlx::Connection;
    match url.split(':').next().unwrap() {
        "sqlite" => {
            let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
            sqlx::query(sql).execute(&mut c).await.unwrap();
        }
        "postgres" => {
            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query(sql).execute(&mut c).await.unwrap();
        }
        _ => {
            let mut c = sqlx::MySqlConnection::connect(url).await.unwrap();
            sqlx::query(sql).execute(&mut c).await.unwrap();
        }
    }
}

async fn scalar(url: &str, sql: &str) -> i64 {
    use sqlx::Connection;
    match url.split(':').next().unwrap() {
        "sqlite" => sqlx::query_scalar(sql).fetch_one(&mut sqlx::SqliteConnection::connect(url).await.unwrap()).await,
        "postgres" => sqlx::query_scalar(sql).fetch_one(&mut sqlx::PgConnection::connect(url).await.unwrap()).await,
        _ => sqlx::query_scalar(sql).fetch_one(&mut sqlx::MySqlConnection::connect(url).await.unwrap()).await,
    }
    .unwrap()
}

const CREATE: &str =
    "CREATE TABLE TABLE_NAME (item INT PRIMARY KEY, n BIGINT NOT NULL, fence BIGINT NOT NULL DEFAULT 0)";

#[tokio::test]
async fn sqlite_statement() {
    let dir = tempfile::tempdir().unwrap();
    fenced_statement(&format!("sqlite://{}/s.db", dir.path().display()), CREATE).await;
}

#[tokio::test]
async fn postgres_statement() {
    fenced_statement(&server_url("BATON_TEST_POSTGRES_URL"), CREATE).await;
}

#[tokio::test]
async fn mysql_statement() {
    fenced_statement(&server_url("BATON_TEST_MYSQL_URL"), CREATE).await;
}

#[tokio::test]
async fn statements_on_other_stores_are_unsupported() {
    let c = Client::connect("memory://").await.unwrap();
    let e = c.fence().execute("UPDATE t SET a = 1", FencingToken::new(1)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
}

/// A fenced statement whose route to the database is lost while it runs (it waits on a row
/// another session holds; the relay then black-holes the route: nothing answers, nothing
/// is closed) ends with a `Connection` error within the SQL step bound, as a lock step
/// does, instead of awaiting a reply that never comes.
async fn cut_route_ends(url: &str) {
    use sqlx::Connection;
    let relay = Relay::start(target_of(url)).await;
    let c = Client::connect(&relay.via(url)).await.unwrap();
    let table = format!("fence_cut_{}", uuid::Uuid::new_v4().simple());
    run(url, &CREATE.replace("TABLE_NAME", &table)).await;
    run(url, &format!("INSERT INTO {table} (item, n) VALUES (1, 10)")).await;
    let (lock_row, sell) = (
        format!("SELECT n FROM {table} WHERE item = 1 FOR UPDATE"),
        format!("UPDATE {table} SET n = n - 1 WHERE item = 1"),
    );
    let fence = c.fence();
    let t0 = Instant::now();
    // Bound: the 20 s step bound, with room for a loaded machine.
    let blocked = bounded(
        "a fenced statement on a cut route",
        Duration::from_secs(45),
        fence.execute(&sell, FencingToken::new(1)),
    );
    macro_rules! with_row_held {
        ($conn:ty) => {{
            let mut b = <$conn>::connect(url).await.unwrap();
            let mut tx = b.begin().await.unwrap();
            sqlx::query(&lock_row).execute(&mut *tx).await.unwrap();
            let cut = async {
                // The statement is sent and waits on the row by now (loopback: milliseconds).
                tokio::time::sleep(Duration::from_secs(1)).await;
                relay.cut();
                tx.commit().await.unwrap();
            };
            tokio::join!(blocked, cut).0
        }};
    }
    let r = if url.starts_with("postgres") {
        with_row_held!(sqlx::PgConnection)
    } else {
        with_row_held!(sqlx::MySqlConnection)
    };
    let took = t0.elapsed();
    eprintln!("{url}: a fenced statement on a cut route ended after {took:?}");
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{url}: {e}");
    relay.heal();
    run(url, &format!("DROP TABLE {table}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_cut_route_ends() {
    let (pg, my) = (server_url("BATON_TEST_POSTGRES_URL"), server_url("BATON_TEST_MYSQL_URL"));
    tokio::join!(cut_route_ends(&pg), cut_route_ends(&my));
}
