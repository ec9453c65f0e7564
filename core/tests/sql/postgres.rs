//! The behaviour suite and the cross-process checks on `postgres://` (the server of
//! `scripts/services`, URL in `BATON_TEST_POSTGRES_URL`).
#![cfg(feature = "postgres")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store { url: behaviour::crash::server_url("BATON_TEST_POSTGRES_URL"), keep: None }
}

behaviour_suite!(crate::postgres::store);
cross_process_suite!(crate::postgres::store);

/// A wrong password is a `Connection` error that does not repeat the password.
#[tokio::test]
async fn bad_password_is_not_echoed() {
    let url = store().url.replacen("postgres://postgres@", "postgres://nobody:hunter2@", 1);
    let e = baton::Client::connect(&url).await.unwrap_err();
    assert_eq!(e.kind(), baton::ErrorKind::Connection, "{e}");
    assert!(!e.to_string().contains("hunter2") && !format!("{e:?}").contains("hunter2"), "{e:?}");
}

/// A refused connection is named at once, for the store and for a classic SQL scheme.
#[tokio::test]
async fn refused_connection_is_named() {
    for url in ["postgres://u:hunter2@127.0.0.1:1/db", "postgres://u:hunter2@127.0.0.1:1/db?scheme=table"] {
        behaviour::errors::refused_connection_is_named(url).await;
    }
}

/// The URL of the test server with database `db` and user `user`.
fn url_for(user: &str, db: &str) -> String {
    let base = store().url;
    let (server, _) = base.rsplit_once('/').expect("a database in the URL");
    server.replacen("postgres://postgres@", &format!("postgres://{user}@"), 1) + "/" + db
}

/// A role granted every privilege on the tables (SELECT, INSERT, UPDATE, DELETE) but not
/// owning them, without CREATE on the schema, shares the locks: connecting runs no DDL
/// when the schema is complete (it ran `ALTER TABLE … ADD COLUMN IF NOT EXISTS` and
/// `CREATE INDEX IF NOT EXISTS` on every connect, "must be owner of table baton_state").
/// `?create=false` against an empty database is a `Backend` error naming the table, and
/// makes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_privilege_role_shares_locks() {
    use sqlx::Executor;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (db, empty, role) = (format!("baton_lp_{id}"), format!("baton_lpe_{id}"), format!("baton_lp_{id}"));
    let admin = sqlx::PgPool::connect(&store().url).await.unwrap();
    admin.execute(format!("CREATE DATABASE {db}").as_str()).await.unwrap();
    admin.execute(format!("CREATE DATABASE {empty}").as_str()).await.unwrap();
    admin.execute(format!("CREATE ROLE {role} LOGIN").as_str()).await.unwrap();
    let run = async {
        // The owner (the superuser) makes the tables.
        baton::Client::connect(&url_for("postgres", &db)).await.unwrap().close().await;
        let owner = sqlx::PgPool::connect(&url_for("postgres", &db)).await.unwrap();
        for sql in [
            "REVOKE CREATE ON SCHEMA public FROM PUBLIC".to_owned(),
            format!("GRANT USAGE ON SCHEMA public TO {role}"),
            format!("GRANT SELECT, INSERT, UPDATE, DELETE ON baton_state TO {role}"),
        ] {
            owner.execute(sql.as_str()).await.unwrap();
        }
        owner.close().await;
        let a = baton::Client::connect(&url_for(&role, &db)).await.expect("a non-owner role connects");
        let b = baton::Client::connect(&url_for(&role, &db)).await.unwrap();
        let name = behaviour::unique("least-privilege");
        let g = a.lock(&name).acquire().await.unwrap();
        assert!(b.lock(&name).try_acquire().await.unwrap().is_none(), "held by the other client");
        g.release().await.unwrap();
        let g = b.lock(&name).try_acquire().await.unwrap().expect("free after the release");
        g.release().await.unwrap();
        a.close().await;
        b.close().await;

        let e = baton::Client::connect(&format!("{}?create=false", url_for("postgres", &empty))).await.unwrap_err();
        assert_eq!(e.kind(), baton::ErrorKind::Backend, "{e}");
        assert!(e.to_string().contains("baton_state") && e.to_string().contains("create=false"), "{e}");
        let check = sqlx::PgPool::connect(&url_for("postgres", &empty)).await.unwrap();
        let made: bool =
            sqlx::query_scalar("SELECT to_regclass('baton_state') IS NOT NULL").fetch_one(&check).await.unwrap();
        assert!(!made, "create=false made the table");
        check.close().await;
    };
    behaviour::bounded("least-privilege checks", std::time::Duration::from_secs(60), run).await;
    // Clean-up (a failure above leaves them behind: their names are unique).
    for sql in [
        format!("DROP DATABASE {db} WITH (FORCE)"),
        format!("DROP DATABASE {empty} WITH (FORCE)"),
        format!("DROP ROLE {role}"),
    ] {
        admin.execute(sql.as_str()).await.unwrap();
    }
}
