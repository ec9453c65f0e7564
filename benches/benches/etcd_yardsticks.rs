//! etcd (`$BATON_TEST_ETCD_URL`, gRPC, and `$BATON_TEST_ETCD_HTTP_URL`, the JSON gateway):
//! baton's lock against the store's own round trips with the same client (its transport
//! and session), the yardsticks its speed is judged by (`baton_benches::yardstick_group`).
//! The store's round: one txn as an uncontended grant writes it (create-if-absent under
//! the session lease), then one delete.

use criterion::Criterion;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    baton_benches::yardstick_group(&mut c, "BATON_TEST_ETCD_URL", "etcd");
    baton_benches::yardstick_group(&mut c, "BATON_TEST_ETCD_HTTP_URL", "etcd_http");
    c.final_summary();
}
