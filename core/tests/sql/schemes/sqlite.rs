//! The SQL lock schemes on `sqlite://` (a database file per test): the behaviour suite's
//! lock checks for `table` and `optimistic`, a SIGKILLed holder, plain SQL on the same file
//! both ways, and `for-update` / `advisory` refused (SQLite has neither row locks nor
//! advisory locks).
#![cfg(feature = "sqlite")]

use std::time::Duration;

use baton::{Client, ErrorKind};
use baton_testkit::behaviour::{Store, bounded, unique};
use baton_testkit::cross_process_suite;
use sqlx::{Connection, SqliteConnection};

fn store_for(scheme: &str) -> Store {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/baton.db?scheme={scheme}", dir.path().display());
    Store { url, keep: Some(Box::new(dir)) }
}

mod table {
    pub(crate) fn store() -> baton_testkit::behaviour::Store {
        crate::schemes::sqlite::store_for("table")
    }
    baton_testkit::behaviour_suite!(@locks crate::schemes::sqlite::table::store);
}

mod optimistic {
    pub(crate) fn store() -> baton_testkit::behaviour::Store {
        crate::schemes::sqlite::store_for("optimistic")
    }
    baton_testkit::behaviour_suite!(@locks crate::schemes::sqlite::optimistic::store);
}

fn table_store() -> Store {
    store_for("table")
}
cross_process_suite!(crate::schemes::sqlite::table_store);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_optimistic_holder() {
    super::killed_holder(&store_for("optimistic").url).await;
}

/// baton's own design, `table` and `optimistic` on one file exclude each other
/// (`super::designs_exclude_each_other`, `mixed_designs_never_overlap`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn designs_exclude_each_other() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = format!("sqlite://{}/baton.db", dir.path().display());
    let designs = [
        ("state", file.clone()),
        ("table", format!("{file}?scheme=table")),
        ("optimistic", format!("{file}?scheme=optimistic")),
    ];
    super::designs_exclude_each_other(&designs).await;
    super::mixed_designs_never_overlap(&designs).await;
}

/// `?exclusive=false` turns the claim off: such a scheme's grant ignores baton's own
/// design's hold (and the claim makes no `baton_state` row), while a claiming `table`
/// client still finds the name busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_false_claims_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = format!("sqlite://{}/baton.db", dir.path().display());
    let state = Client::connect(&file).await.unwrap();
    let unclaimed = Client::connect(&format!("{file}?scheme=optimistic&exclusive=false")).await.unwrap();
    let claimed = Client::connect(&format!("{file}?scheme=table")).await.unwrap();
    let name = unique("unclaimed");
    let g = state.lock(&name).try_acquire().await.unwrap().expect("a fresh name is free");
    assert!(claimed.lock(&name).try_acquire().await.unwrap().is_none(), "a claiming scheme ignored the hold");
    let g2 = unclaimed.lock(&name).try_acquire().await.unwrap().expect("exclusive=false still claimed");
    g2.release().await.unwrap();
    g.release().await.unwrap();
}

/// SQLite has no row locks and no advisory locks: those schemes are refused at connect.
#[tokio::test]
async fn session_schemes_are_unsupported() {
    for s in ["for-update", "advisory"] {
        let store = store_for(s);
        let e = Client::connect(&store.url).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains(s) && e.to_string().contains("scheme=table"), "{e}");
    }
}

#[tokio::test]
async fn other_kinds_are_unsupported() {
    for s in ["table", "optimistic"] {
        super::other_kinds_are_unsupported(&store_for(s).url, s).await;
    }
}

#[tokio::test]
async fn bad_identifiers_are_refused() {
    super::bad_identifiers_are_refused(&store_for("table").url).await;
}

#[tokio::test]
async fn odd_names_are_data() {
    for s in ["table", "optimistic"] {
        let store = store_for(s);
        let names = super::odd_names_are_data(&store.url).await;
        if s == "optimistic" {
            let path = store.url.trim_start_matches("sqlite://").split('?').next().unwrap().to_owned();
            let mut c = SqliteConnection::connect(&format!("sqlite://{path}")).await.unwrap();
            for n in &names {
                let v: i64 = sqlx::query_scalar("SELECT version FROM baton_version_lock WHERE name = ?")
                    .bind(n)
                    .fetch_one(&mut c)
                    .await
                    .unwrap();
                // Taken (the version to the lease clock in µs, as every design's tokens)
                // and given back (one more).
                assert!(v > 1_000_000, "taken and given back: {n}: version {v}");
            }
        }
    }
}

/// A plain `INSERT INTO baton_lock` by another connection on the file holds baton off
/// (held for good: it has no expiry) until a plain `DELETE`; baton's hold is a row with
/// its owner, expiry and token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_interop_with_plain_sql() {
    let store = store_for("table");
    let c = Client::connect(&store.url).await.unwrap();
    let path = store.url.trim_start_matches("sqlite://").split('?').next().unwrap().to_owned();
    let mut sql = SqliteConnection::connect(&format!("sqlite://{path}")).await.unwrap();
    let name = unique("file");
    sqlx::query("INSERT INTO baton_lock (name) VALUES (?)").bind(&name).execute(&mut sql).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    assert_eq!(c.inspect(&name).await.unwrap().holders[0].owner, "sql:baton_lock");
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    sqlx::query("DELETE FROM baton_lock WHERE name = ?").bind(&name).execute(&mut sql).await.unwrap();
    let g = bounded("baton after the plain DELETE", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let (owner, exp, token): (String, Option<i64>, i64) =
        sqlx::query_as("SELECT owner, expires_at, token FROM baton_lock WHERE name = ?")
            .bind(&name)
            .fetch_one(&mut sql)
            .await
            .unwrap();
    assert!(!owner.is_empty() && exp.is_some());
    assert_eq!(token as u64, g.token().get());
    g.release().await.unwrap();
    c.close().await;
}
