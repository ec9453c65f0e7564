//! The behaviour suite on the 3-member ZooKeeper ensemble of `scripts/services`
//! (`BATON_TEST_ZK_ENSEMBLE_URL`): every write is a quorum write through whichever member
//! the session talks to.
#![cfg(feature = "zookeeper")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_ZK_ENSEMBLE_URL", "ZooKeeper ensemble", "")
}

behaviour_suite!(crate::store);
cross_process_suite!(crate::store);
