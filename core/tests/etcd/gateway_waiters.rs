//! 200 waiters on one name over `etcd+http://` (etcd's JSON gateway), in request order,
//! one woken per release (counted): a test binary of its own, so that it never runs beside
//! the rest of the suite — 200 HTTP watch streams at once load the gateway so much that
//! concurrent checks got `503` answers and ran out of their bounds.
#![cfg(feature = "etcd-http")]

use baton_testkit::behaviour;
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_waiters_in_order() {
    // Bound: queueing 200 waiters over the gateway took ~55 s and their hand-offs ~25 s at
    // a load average of ~10 on 2 cores; generous beyond that.
    behaviour::bounded(
        "many_waiters_in_order over the gateway",
        std::time::Duration::from_secs(300),
        baton_testkit::etcd::many_waiters_in_order(&behaviour::crash::server_url("BATON_TEST_ETCD_HTTP_URL")),
    )
    .await;
}
