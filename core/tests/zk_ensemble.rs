//! The behaviour suite on the 3-member ZooKeeper ensemble of `scripts/services`
//! (`BATON_TEST_ZK_ENSEMBLE_URL`): every write is a quorum write through whichever member
//! the session talks to.
#![cfg(feature = "zookeeper")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_ZK_ENSEMBLE_URL", "ZooKeeper ensemble", "")
}

// Every check of `behaviour_suite!` but the two whose "dead" waiter is a runtime shut
// down (`fair::vanished_waiter_is_skipped`, `rw::vanished_writer_unblocks_readers`): the
// ZooKeeper client closes its session when its last handle goes while its task can still
// run, and the server then deletes the waiter's node at once, so those checks race with
// the runtime's shutdown. A waiter that really vanishes (its node left behind) is checked
// in `zk_layout.rs`; a SIGKILLed holder process by `cross_process_suite!`.
behaviour_suite!(crate::store; except vanished);
cross_process_suite!(crate::store);
