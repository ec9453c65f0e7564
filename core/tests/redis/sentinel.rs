//! The behaviour suite and the cross-process checks on `redis+sentinel://` (the master,
//! replica and sentinel of `scripts/services start redis-sentinel`, URL in
//! `BATON_TEST_REDIS_SENTINEL_URL`). Failovers are tested in `redis_server.rs`, on
//! servers of the test's own.
#![cfg(feature = "redis")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_REDIS_SENTINEL_URL", "Redis Sentinel", "")
}

behaviour_suite!(crate::sentinel::store; except election);
cross_process_suite!(crate::sentinel::store);
