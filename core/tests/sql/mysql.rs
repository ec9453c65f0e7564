//! The behaviour suite and the cross-process checks on `mysql://` (the MariaDB server of
//! `scripts/services`, URL in `BATON_TEST_MYSQL_URL`).
#![cfg(feature = "mysql")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store { url: behaviour::crash::server_url("BATON_TEST_MYSQL_URL"), keep: None }
}

behaviour_suite!(crate::mysql::store);
cross_process_suite!(crate::mysql::store);

/// Names differing only in case or trailing spaces are different locks (names are bytes,
/// not collated text).
#[tokio::test]
async fn names_are_bytes() {
    let c = baton::Client::connect(&store().url).await.unwrap();
    let base = behaviour::unique("Case");
    let g = c.lock(&base).acquire().await.unwrap();
    for other in [base.to_lowercase(), format!("{base} ")] {
        let h = c.lock(&other).try_acquire().await.unwrap().expect("a different name");
        h.release().await.unwrap();
    }
    g.release().await.unwrap();
}

/// Many first steps on a new name at once (every one finds no row and makes it), then
/// their waits and hand-offs, all succeed: none fails with InnoDB's deadlock between inserts under gap locks. 200 tasks
/// on one client (8 connections), as the Python binding's `test_200_tasks_contend`, which
/// met it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_steps_on_a_new_name_do_not_deadlock() {
    let c = baton::Client::connect(&store().url).await.unwrap();
    let name = behaviour::unique("first-insert");
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let (c, name) = (c.clone(), name.clone());
            tokio::spawn(async move {
                // Bound: 200 hand-offs of ~10 ms each, a few times over on a loaded machine.
                let g = c.lock(&name).acquire_timeout(std::time::Duration::from_secs(100)).await?;
                g.release().await
            })
        })
        .collect();
    for t in tasks {
        behaviour::bounded("a first step", std::time::Duration::from_secs(120), t).await.unwrap().unwrap();
    }
}

/// A refused connection is named at once, for the store and for a classic SQL scheme.
#[tokio::test]
async fn refused_connection_is_named() {
    for url in ["mysql://u:hunter2@127.0.0.1:1/db", "mysql://u:hunter2@127.0.0.1:1/db?scheme=for-update"] {
        behaviour::errors::refused_connection_is_named(url).await;
    }
}

/// `?create=false` against an empty database is a `Backend` error naming the table, and
/// makes nothing (connecting ran `CREATE TABLE IF NOT EXISTS`, which needs the CREATE
/// privilege even where the table exists: now `information_schema` is read first).
#[tokio::test]
async fn create_false_makes_nothing() {
    use sqlx::Executor;
    let db = format!("baton_cf_{}", uuid::Uuid::new_v4().simple());
    let url = store().url;
    let admin = sqlx::MySqlPool::connect(&url).await.unwrap();
    admin.execute(format!("CREATE DATABASE {db}").as_str()).await.unwrap();
    let (server, _) = url.rsplit_once('/').unwrap();
    let r = baton::Client::connect(&format!("{server}/{db}?create=false")).await;
    let made: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?")
        .bind(&db)
        .fetch_one(&admin)
        .await
        .unwrap();
    admin.execute(format!("DROP DATABASE {db}").as_str()).await.unwrap();
    let e = r.expect_err("create=false on an empty database");
    assert_eq!(e.kind(), baton::ErrorKind::Backend, "{e}");
    assert!(e.to_string().contains("baton_state") && e.to_string().contains("create=false"), "{e}");
    assert_eq!(made, 0, "create=false made a table");
}
