//! Tokens never go back, even when the store lost a name's counter (a restart without
//! persistence, a failover to a replica that lagged, state removed while free): the rule
//! is "above the last token and at least the store's clock in µs". Here the counter is
//! removed by hand on the shared servers; `redis_server.rs` restarts and fails over
//! servers of its own.
#![cfg(feature = "full")]

use baton::Client;
use baton_testkit::behaviour::crash::server_url;

fn unique(tag: &str) -> String {
    format!("tokens-test/{tag}/{}", uuid::Uuid::new_v4().simple())
}

async fn fresh_token(c: &Client, name: &str) -> u64 {
    let g = c.lock(name).acquire().await.unwrap();
    let t = g.token().get();
    g.release().await.unwrap();
    t
}

/// A token is at least the clock in µs since the Unix epoch (the store's and ours agree to
/// well within a minute on loopback).
fn near_now_us(t: u64) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64;
    t + 60_000_000 > now && t < now + 60_000_000
}

#[tokio::test]
async fn redis_counter_lost() {
    let url = server_url("BATON_TEST_REDIS_URL");
    // `free=keep`: the counter stays after the release (a free name's state goes by default).
    for scheme in ["?free=keep", "?scheme=simple&free=keep"] {
        let c = Client::connect(&format!("{url}{scheme}")).await.unwrap();
        let name = unique("redis");
        let t1 = fresh_token(&c, &name).await;
        assert!(near_now_us(t1), "{t1}");
        let mut con = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        let gone: i64 =
            redis::cmd("DEL").arg(format!("redisson_lock_token:{{{name}}}")).query_async(&mut con).await.unwrap();
        assert_eq!(gone, 1, "the counter key is where docs/redis-layout.md says");
        let t2 = fresh_token(&c, &name).await;
        assert!(t2 > t1, "{scheme}: {t2} after the counter was lost, {t1} before");
        // Grants faster than the clock still get distinct, growing tokens.
        let mut last = t2;
        for _ in 0..20 {
            let t = fresh_token(&c, &name).await;
            assert!(t > last);
            last = t;
        }
        c.close().await;
    }
}

/// The SQL stores: the name's row deleted (as a sweep deletes a free name's) and the next
/// token still above the last.
async fn sql_counter_lost(url: &str) {
    let c = Client::connect(url).await.unwrap();
    let name = unique("sql");
    let t1 = fresh_token(&c, &name).await;
    let delete = format!("DELETE FROM baton_state WHERE name = '{name}'");
    match url.split(':').next().unwrap() {
        "sqlite" => {
            use sqlx::Connection;
            let mut db = sqlx::SqliteConnection::connect(url).await.unwrap();
            sqlx::query(&delete).execute(&mut db).await.unwrap();
        }
        "postgres" => {
            use sqlx::Connection;
            let mut db = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query(&delete).execute(&mut db).await.unwrap();
        }
        _ => {
            use sqlx::Connection;
            let mut db = sqlx::MySqlConnection::connect(url).await.unwrap();
            sqlx::query(&delete).execute(&mut db).await.unwrap();
        }
    }
    let t2 = fresh_token(&c, &name).await;
    assert!(t2 > t1, "{url}: {t2} after the row was deleted, {t1} before");
    c.close().await;
}

#[tokio::test]
async fn sqlite_counter_lost() {
    let dir = tempfile::tempdir().unwrap();
    sql_counter_lost(&format!("sqlite://{}/t.db", dir.path().display())).await;
}

#[tokio::test]
async fn postgres_counter_lost() {
    sql_counter_lost(&server_url("BATON_TEST_POSTGRES_URL")).await;
}

#[tokio::test]
async fn mysql_counter_lost() {
    sql_counter_lost(&server_url("BATON_TEST_MYSQL_URL")).await;
}
