//! The behaviour suite and the cross-process checks on `redis+sentinel://` (the master,
//! replica and sentinel of `scripts/services start redis-sentinel`, URL in
//! `BATON_TEST_REDIS_SENTINEL_URL`). Failovers are tested in `redis_server.rs`, on
//! servers of the test's own.
#![cfg(feature = "redis")]

mod behaviour;

use behaviour::Store;

fn server() -> String {
    match std::env::var("BATON_TEST_REDIS_SENTINEL_URL") {
        Ok(url) => url,
        Err(_) if std::env::var_os("CI").is_some() => behaviour::crash::server_url("BATON_TEST_REDIS_SENTINEL_URL"),
        Err(_) => {
            eprintln!(
                "BATON_TEST_REDIS_SENTINEL_URL is not set: skipping the Redis Sentinel tests (run `scripts/services \
                 start redis-sentinel` and source its services.env)"
            );
            std::process::exit(0);
        }
    }
}

fn store() -> Store {
    Store { url: server(), keep: None }
}

behaviour_suite!(crate::store);
cross_process_suite!(crate::store);
