//! The holder cut off from its store: its lost signal must fire before anyone else is
//! granted the lock, every time. The holder reaches the store through a relay that the
//! test black-holes (`baton_testkit::Relay`: requests go unanswered, nothing is closed,
//! as when a route is lost), a waiter reaches it directly and tries every 10 ms. The
//! holder's local deadline counts from when its last *answered* renewal was sent, less the
//! drift margin, and no renewal still out moves it: so it passes before the store's own
//! expiry, which is measured from when that renewal arrived.
//!
//! Stores: a single Redis, a single-node Redlock, PostgreSQL, MySQL (the shared servers, each
//! behind a relay of the test's own), and a 3-member etcd cluster of the test's own, the
//! holder on member 1 and the waiter on member 2. Three trials each, the cut at a
//! different point of the renewal period.
#![cfg(all(feature = "redis", feature = "redlock", feature = "postgres", feature = "mysql", feature = "etcd"))]

use std::net::SocketAddr;
use std::time::Duration;

use baton::{Client, LockOptions};
use baton_testkit::behaviour::{bounded, crash::server_url, unique};
use baton_testkit::{OwnEtcdCluster, Relay, target_of, tools_present};
use tokio::time::Instant;

const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(1);

/// Three trials of: hold through `relay`, cut it, wait for the waiter's grant; the
/// holder's lost signal must have fired before the waiter's successful attempt was sent.
async fn cut_holder(store: &str, holder_url: &str, waiter_url: &str, relay: &Relay) {
    for trial in 0..3u32 {
        let name = unique(&format!("cut-holder-{store}"));
        let holder = Client::connect(holder_url).await.unwrap();
        let waiter = Client::connect(waiter_url).await.unwrap();
        let opts = LockOptions::new().lease(LEASE).renew_every(RENEW);
        let g = holder.lock_with(&name, opts).acquire().await.unwrap();
        // Past a renewal or two, the cut at another point of the period each trial.
        tokio::time::sleep(Duration::from_millis(1300 + 350 * u64::from(trial))).await;
        relay.cut();
        let cut = Instant::now();
        let lost = tokio::spawn(async move {
            g.lost().await;
            (Instant::now(), g)
        });
        // Bound: the lease, or for PostgreSQL and MySQL the 10 s after which the server
        // ends a session cut off inside a step's transaction (its row lock held till
        // then), plus room for a loaded machine.
        let (sent, w) = bounded("the waiter's grant", Duration::from_secs(30), async {
            loop {
                let sent = Instant::now();
                if let Some(w) = waiter.lock(&name).try_acquire().await.unwrap() {
                    return (sent, w);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(
            lost.is_finished(),
            "{store} trial {trial}: granted to the waiter {:?} after the cut while the holder still held",
            sent - cut
        );
        let (lost_at, g) = lost.await.unwrap();
        eprintln!(
            "{store} trial {trial}: holder lost {:?} after the cut, waiter granted {:?} after it (gap {:?})",
            lost_at - cut,
            sent - cut,
            sent - lost_at
        );
        assert!(lost_at < sent, "{store} trial {trial}: lost after the waiter's grant");
        relay.heal();
        drop(g);
        w.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    let url = server_url("BATON_TEST_REDIS_URL");
    let relay = Relay::start(target_of(&url)).await;
    cut_holder("redis", &relay.via(&url), &url, &relay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_single_node() {
    let nodes = server_url("BATON_TEST_REDLOCK_URL");
    let node = format!("redlock://{}", target_of(&nodes));
    let relay = Relay::start(target_of(&node)).await;
    cut_holder("redlock", &relay.via(&node), &node, &relay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let url = server_url("BATON_TEST_POSTGRES_URL");
    let relay = Relay::start(target_of(&url)).await;
    cut_holder("postgres", &relay.via(&url), &url, &relay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql() {
    let url = server_url("BATON_TEST_MYSQL_URL");
    let relay = Relay::start(target_of(&url)).await;
    cut_holder("mysql", &relay.via(&url), &url, &relay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster() {
    if !tools_present(&["etcd", "etcdctl"]) {
        return;
    }
    let cluster = tokio::task::spawn_blocking(OwnEtcdCluster::start).await.unwrap();
    let [m1, m2, _] = cluster.client_ports[..] else { unreachable!() };
    let relay = Relay::start(SocketAddr::from(([127, 0, 0, 1], m1))).await;
    let holder = format!("etcd://127.0.0.1:{}", relay.port);
    cut_holder("etcd", &holder, &format!("etcd://127.0.0.1:{m2}"), &relay).await;
}
