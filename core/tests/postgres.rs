//! The behaviour suite and the cross-process checks on `postgres://` (the server of
//! `scripts/services`, URL in `BATON_TEST_POSTGRES_URL`).
#![cfg(feature = "postgres")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store { url: behaviour::crash::server_url("BATON_TEST_POSTGRES_URL"), keep: None }
}

behaviour_suite!(crate::store);
cross_process_suite!(crate::store);

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
