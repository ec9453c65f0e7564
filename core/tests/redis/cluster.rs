//! The behaviour suite and the cross-process checks on `redis+cluster://` (the 3-master
//! cluster of `scripts/services start redis-cluster`, URL in
//! `BATON_TEST_REDIS_CLUSTER_URL`), and the cluster's own checks: every key of one
//! primitive shares the `{name}` hash slot, names that cannot are refused up front, and
//! watchdog renewals across many slots keep every lease.
#![cfg(feature = "redis")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use behaviour::{Store, unique};

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_CLUSTER_URL", "Redis Cluster")
}

fn store() -> Store {
    Store { url: server(), keep: None }
}

behaviour_suite!(crate::cluster::store; except election);
cross_process_suite!(crate::cluster::store);

/// A plain cluster connection, to look at the keys where they live.
async fn raw() -> redis::cluster_async::ClusterConnection {
    let nodes: Vec<String> = server()
        .trim_start_matches("redis+cluster://")
        .split('?')
        .next()
        .unwrap()
        .split(',')
        .map(|h| format!("redis://{h}"))
        .collect();
    redis::cluster::ClusterClient::new(nodes).unwrap().get_async_connection().await.unwrap()
}

/// A fair lock's hash, queue, timeouts and token counter (and baton's side hash, when it
/// has one: `keys::tests::cluster_slots`) all live in the slot of the name (Redisson's
/// `{name}` naming), on whichever master owns it; the names of different locks spread
/// over the masters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_of_one_primitive_share_a_slot() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_CLUSTER_URL");
    let c = Client::connect(&server()).await.unwrap();
    let mut con = raw().await;
    let name = unique("slot");
    let g = c.fair_lock(&name).acquire().await.unwrap();
    let waiter = {
        let c2 = Client::connect(&server()).await.unwrap();
        let name = name.clone();
        tokio::spawn(async move { c2.fair_lock(&name).acquire().await.map(drop) })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let slot = |k: String| {
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("KEYSLOT").arg(k);
        cmd
    };
    let want: i64 = slot(name.clone()).query_async(&mut con).await.unwrap();
    for k in [
        format!("redisson_lock_queue:{{{name}}}"),
        format!("redisson_lock_timeout:{{{name}}}"),
        format!("redisson_lock_token:{{{name}}}"),
    ] {
        let s: i64 = slot(k.clone()).query_async(&mut con).await.unwrap();
        assert_eq!(s, want, "{k}");
        let exists: i64 = redis::cmd("EXISTS").arg(&k).query_async(&mut con).await.unwrap();
        assert_eq!(exists, 1, "{k} was not written where the cluster routes it");
    }
    g.release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("waiter hung").unwrap().unwrap();
}

/// A name with a brace but no non-empty `{tag}` would put its keys in different slots:
/// `InvalidArgument` from every kind, before any command; a `{tag}` is fine.
#[tokio::test]
async fn names_that_cannot_share_a_slot_are_refused() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_CLUSTER_URL");
    let c = Client::connect(&server()).await.unwrap();
    for bad in ["a{b", "a}b", "x{}y"] {
        let name = format!("{}{bad}", unique("brace"));
        let e = c.lock(&name).try_acquire().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("hash slot"), "{e}");
        assert_eq!(c.semaphore(&name, 1).try_acquire().await.unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(c.count_down_latch(&name).count_down().await.unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(c.inspect(&name).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    c.lock(&format!("{}{{tag}}", unique("brace"))).try_acquire().await.unwrap().expect("free").release().await.unwrap();
    let e = Client::connect(&format!("{}/3", server().split('?').next().unwrap())).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{e}");
}

/// 500 watchdog leases over many slots (one pipeline per slot, all at once) are renewed
/// without loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_leases_renewed_across_slots() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_CLUSTER_URL");
    let c = Client::connect(&server()).await.unwrap();
    let opts = LockOptions::new().lease(Duration::from_millis(1500)).renew_every(Duration::from_millis(500));
    let base = unique("many");
    let mut guards = Vec::new();
    for i in 0..500 {
        guards.push(c.lock_with(&format!("{base}/{i}"), opts.clone()).acquire().await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(guards.iter().all(|g| !g.is_lost()), "a renewed lease was lost");
    let other = Client::connect(&server()).await.unwrap();
    assert!(other.lock(&format!("{base}/499")).try_acquire().await.unwrap().is_none());
}

/// A URL whose first node is down still works, wake-ups included: the subscriber
/// connection goes to the first node that answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_node_down_still_wakes() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_CLUSTER_URL");
    let url = server().replacen("redis+cluster://", "redis+cluster://127.0.0.1:1,", 1);
    let url = format!("{url}{}connect_timeout=1s", if url.contains('?') { '&' } else { '?' });
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("first-down");
    let g = a.lock(&name).acquire().await.unwrap();
    let waiter = {
        let name = name.clone();
        tokio::spawn(async move {
            let g = b.lock(&name).acquire().await.unwrap();
            let at = tokio::time::Instant::now();
            g.release().await.unwrap();
            at
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = tokio::time::Instant::now();
    g.release().await.unwrap();
    let at = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap();
    assert!(at - released < behaviour::WAKE, "woken {:?} after the release", at - released);
}

/// `?wait_replicas=1` on a cluster whose masters have no replica: `WAIT` goes to every
/// master and answers 0, so every grant is refused (`Backend`, naming the option) and
/// given back.
#[tokio::test]
async fn wait_replicas_without_replicas_refuses_grants() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_CLUSTER_URL");
    let c = Client::connect(&format!("{}?wait_replicas=1&wait_timeout=100ms", server())).await.unwrap();
    let name = unique("wait");
    let e = c.lock(&name).try_acquire().await.map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Backend, "{e}");
    assert!(e.to_string().contains("wait_replicas"), "{e}");
    assert!(c.inspect(&name).await.unwrap().holders.is_empty(), "the refused grant is not left held");
}
