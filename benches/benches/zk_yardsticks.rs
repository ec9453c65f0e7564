//! ZooKeeper (`$BATON_TEST_ZK_URL`): baton's lock against the requests Curator's
//! `InterProcessMutex` makes for one uncontended cycle — the protected ephemeral-sequential
//! `create`, the parent's `getChildren`, the node's `delete` — timed with the same client
//! and session (`baton_benches::yardstick_group`).

use criterion::Criterion;

fn main() {
    let mut c = Criterion::default().configure_from_args();
    baton_benches::yardstick_group(&mut c, "BATON_TEST_ZK_URL", "zk");
    c.final_summary();
}
