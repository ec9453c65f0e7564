//! The behaviour suite and the etcd checks on `etcd://h1,h2,h3` (gRPC over the 3-member
//! cluster of `scripts/services`, URL in `BATON_TEST_ETCD_CLUSTER_URL`): the same locks
//! through a balanced channel over every member.
#![cfg(feature = "etcd")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite, etcd_suite};
use behaviour::Store;

fn url() -> String {
    behaviour::crash::server_url("BATON_TEST_ETCD_CLUSTER_URL")
}

fn store() -> Store {
    Store { url: url(), keep: None }
}

// Every check of `behaviour_suite!` except `lock::exclusion_counter` (contended grants):
// on the 3-member cluster every grant and release is a raft write acknowledged by a
// quorum, and on this 2-core machine 16×200 of them took ~125 s (the check now makes
// 16×64); it runs on the single etcd (`etcd.rs`, `etcd_http.rs`).
behaviour_suite!(crate::cluster::store; except contended, election);
cross_process_suite!(crate::cluster::store);
etcd_suite!(crate::cluster::url);
// 200 waiters in request order: gRPC only (see the check).
etcd_suite!(@tests crate::cluster::url; many_waiters_in_order);
