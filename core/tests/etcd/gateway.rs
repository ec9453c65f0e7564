//! The behaviour suite and the cross-process checks on `etcd+http://` (etcd's JSON
//! gateway; the single etcd of `scripts/services`, URL in `BATON_TEST_ETCD_HTTP_URL`), and
//! the etcd store's own checks: URL forms, the `clientv3/concurrency.Mutex` key layout, and
//! interop both ways with the real `etcdctl lock`.
#![cfg(feature = "etcd-http")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite, etcd_suite};
use behaviour::Store;

fn url() -> String {
    behaviour::crash::server_url("BATON_TEST_ETCD_HTTP_URL")
}

fn store() -> Store {
    Store { url: url(), keep: None }
}

behaviour_suite!(crate::gateway::store; except election);
cross_process_suite!(crate::gateway::store);
etcd_suite!(crate::gateway::url);
// 200 waiters in request order: in `etcd_http_waiters.rs`, alone (see there).
