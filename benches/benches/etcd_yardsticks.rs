//! etcd (`$BATON_TEST_ETCD_URL`, gRPC, and `$BATON_TEST_ETCD_HTTP_URL`, the JSON gateway):
//! baton's lock against the store's own round trips with the same client (its transport
//! and session), the yardsticks its speed is judged by.
//!
//! - `acquire_release` against `store_round`: one txn as an uncontended grant writes it,
//!   then one delete.
//! - `handoff` against `store_first` (the txn alone) and `store_first_paused` (the txn
//!   after the same pause as the hand-off's release: a store's first request after a quiet
//!   spell is slower than in a busy loop, its threads and the CPUs having gone idle).

use baton_benches::{SETTLE, acquire_release, connect, handoff, runtime, store_url, yardsticks};
use criterion::Criterion;

const NAME: &str = "bench/yardstick";

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for (var, group) in [("BATON_TEST_ETCD_URL", "etcd"), ("BATON_TEST_ETCD_HTTP_URL", "etcd_http")] {
        let Some(url) = store_url(var) else { continue };
        let rt = runtime();
        let client = connect(&rt, &url);
        let mut g = c.benchmark_group(group);
        g.sample_size(20);
        let lock = client.lock("bench/etcd/uncontended");
        g.bench_function("acquire_release", |b| b.iter_custom(|n| rt.block_on(acquire_release(&lock, n))));
        let (rt, client) = (&rt, &client);
        let yard = |op, pause| move |n| rt.block_on(yardsticks(client, NAME, op, pause, n));
        g.bench_function("store_round", |b| b.iter_custom(yard(None, None)));
        g.bench_function("store_first", |b| b.iter_custom(yard(Some(0), None)));
        g.bench_function("handoff", |b| b.iter_custom(|n| rt.block_on(handoff(client, "bench/etcd/handoff", n))));
        g.bench_function("store_first_paused", |b| b.iter_custom(yard(Some(0), Some(SETTLE))));
        g.finish();
        rt.block_on(client.close());
    }
    c.final_summary();
}
