//! The behaviour suite and the cross-process checks on `mysql://` (the MariaDB server of
//! `scripts/services`, URL in `BATON_TEST_MYSQL_URL`).
#![cfg(feature = "mysql")]

mod behaviour;

use behaviour::Store;

fn store() -> Store {
    Store { url: behaviour::crash::server_url("BATON_TEST_MYSQL_URL"), keep: None }
}

behaviour_suite!(crate::store);
cross_process_suite!(crate::store);

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
