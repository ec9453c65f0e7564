//! The behaviour suite and the cross-process checks on `etcd://` (gRPC; the single etcd
//! of `scripts/services`, URL in `BATON_TEST_ETCD_URL`), and the etcd store's own checks:
//! URL forms, the `clientv3/concurrency.Mutex` key layout, and interop both ways with the
//! real `etcdctl lock`. The 3-member cluster runs the same suite in `etcd_cluster.rs`.
#![cfg(feature = "etcd")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite, etcd_suite};
use behaviour::Store;

fn url() -> String {
    behaviour::crash::server_url("BATON_TEST_ETCD_URL")
}

fn store() -> Store {
    Store { url: url(), keep: None }
}

behaviour_suite!(crate::grpc::store; except election);
cross_process_suite!(crate::grpc::store);
etcd_suite!(crate::grpc::url);
// 200 waiters in request order, one woken per release (counted).
etcd_suite!(@tests crate::grpc::url; many_waiters_in_order);
