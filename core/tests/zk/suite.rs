//! The behaviour suite and the cross-process checks on `zk://` (the standalone ZooKeeper of
//! `scripts/services`, URL in `BATON_TEST_ZK_URL`). The 3-member ensemble runs the same
//! suite in `zk_ensemble.rs`; Curator's layouts and faults are in `zk_layout.rs`.
#![cfg(feature = "zookeeper")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_ZK_URL", "ZooKeeper", "")
}

// Every check of `behaviour_suite!` but the two whose "dead" waiter is a runtime shut
// down (`fair::vanished_waiter_is_skipped`, `rw::vanished_writer_unblocks_readers`): the
// ZooKeeper client closes its session when its last handle goes while its task can still
// run, and the server then deletes the waiter's node at once, so those checks race with
// the runtime's shutdown. A waiter that really vanishes (its node left behind) is checked
// in `zk_layout.rs`; a SIGKILLed holder process by `cross_process_suite!`.
behaviour_suite!(crate::suite::store; except vanished, election);
cross_process_suite!(crate::suite::store);
