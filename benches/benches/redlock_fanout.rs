//! Redlock (`$BATON_TEST_REDLOCK_URL`) against its first node alone, and the machine's
//! fan-out floor that no Redlock round can beat.
//!
//! - `redlock_paired` / `single_node_paired`: acquire + release on Redlock and on its first
//!   node alone (`redis://`, default options), alternating one by one so that both see the
//!   same machine load; each starts once the other's late nodes answered.
//! - `quorum_of_nodes`: the same acquire + release sent to every node alone at once, timed
//!   until a quorum of them finished (the rest finish untimed: a lower bound).
//! - `node_ping` / `quorum_ping`: a PING to the first node, and a PING to every node at
//!   once until a quorum answered.
//!
//! On a host with fewer cores than nodes the floor is well above one node: compare
//! `redlock_paired` with `quorum_of_nodes` rather than with `single_node_paired` alone.

use std::time::{Duration, Instant};

use baton::{Client, Lock, StoreUrl};
use baton_benches::{connect, runtime, store_url, yardsticks};
use criterion::Criterion;
use tokio::runtime::Runtime;

fn main() {
    let Some(url) = store_url("BATON_TEST_REDLOCK_URL") else { return };
    let rt = runtime();
    let redlock = connect(&rt, &url);
    let nodes: Vec<Client> = node_urls(&url).iter().map(|u| connect(&rt, u)).collect();
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("redlock_fanout");
    g.sample_size(30);
    let (rl, one) = (redlock.lock("bench/paired"), nodes[0].lock("bench/paired-single"));
    g.bench_function("redlock_paired", |b| b.iter_custom(|n| rt.block_on(paired(&redlock, &rl, &nodes[0], &one, n)).0));
    g.bench_function("single_node_paired", |b| {
        b.iter_custom(|n| rt.block_on(paired(&redlock, &rl, &nodes[0], &one, n)).1)
    });
    let each: Vec<Lock> = nodes.iter().map(|c| c.lock("bench/fan-out")).collect();
    g.bench_function("quorum_of_nodes", |b| b.iter_custom(|n| fan_out(&rt, &each, n)));
    let (rt, redlock) = (&rt, &redlock);
    let ping = |op| move |n| rt.block_on(yardsticks(redlock, "bench/yardstick", Some(op), None, n));
    g.bench_function("node_ping", |b| b.iter_custom(ping(0)));
    g.bench_function("quorum_ping", |b| b.iter_custom(ping(1)));
    g.finish();
    c.final_summary();
    rt.block_on(async {
        redlock.close().await;
        for n in nodes {
            n.close().await;
        }
    });
}

/// On `redlock://h1,h2,…[/db]`: `redis://h1[/db]`, `redis://h2[/db]`, … with the same
/// credentials (no options: Redlock's are not the node's).
fn node_urls(url: &str) -> Vec<String> {
    let parsed = StoreUrl::parse(url).expect("a redlock:// URL");
    assert_eq!(parsed.scheme(), "redlock", "BATON_TEST_REDLOCK_URL");
    let rest = url.split_once("://").map_or("", |(_, r)| r).split('?').next().unwrap_or("");
    parsed.host_list().into_iter().map(|h| format!("redis://{}", rest.replacen(parsed.hosts(), h, 1))).collect()
}

/// `iters` acquire + release on `a` and on `b` in turn, each timed on its own; each starts
/// once the other's background steps ended (Redlock's late nodes), which are the other's
/// cost, not load.
async fn paired(ca: &Client, a: &Lock, cb: &Client, b: &Lock, iters: u64) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..iters {
        for (client, lock, total) in [(ca, a, &mut ta), (cb, b, &mut tb)] {
            let t = Instant::now();
            lock.acquire().await.expect("acquire").release().await.expect("release");
            *total += t.elapsed();
            client.settled().await;
        }
    }
    (ta, tb)
}

/// The fan-out floor with the same scripts as Redlock and none of its logic: acquire +
/// release on every node's own client at once, timed until a quorum of them finished.
fn fan_out(rt: &Runtime, locks: &[Lock], iters: u64) -> Duration {
    let need = locks.len() / 2 + 1;
    rt.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let t = Instant::now();
            let mut each = tokio::task::JoinSet::new();
            for l in locks {
                let l = l.clone();
                each.spawn(async move { l.acquire().await?.release().await });
            }
            let mut done = 0;
            while let Some(r) = each.join_next().await {
                r.expect("a bench task").expect("acquire + release on a node");
                done += 1;
                if done == need {
                    total += t.elapsed();
                }
            }
        }
        total
    })
}
