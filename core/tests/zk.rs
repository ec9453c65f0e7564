//! The behaviour suite and the cross-process checks on `zk://` (the standalone ZooKeeper of
//! `scripts/services`, URL in `BATON_TEST_ZK_URL`). The 3-member ensemble runs the same
//! suite in `zk_ensemble.rs`; Curator's layouts and faults are in `zk_layout.rs`.
#![cfg(feature = "zookeeper")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_ZK_URL", "ZooKeeper", "")
}

behaviour_suite!(crate::store);
cross_process_suite!(crate::store);
