//! Cluster faults on a 3-member etcd cluster of this test's own (members started and
//! killed here, on ports 4x379/4x380 of loopback; the shared cluster of
//! `scripts/services` is never touched): the leader is SIGKILLed while a lock is held and
//! others wait. The holder keeps the lock or gets the lost signal (never loses it
//! silently), the waiters are granted after the election, and no two holders ever
//! overlap (fencing tokens and a shared log of hold intervals).
#![cfg(feature = "etcd")]

mod behaviour;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton::{Client, LockOptions};
use behaviour::{bounded, unique};
use tokio::time::Instant;

const MEMBERS: [(&str, u16, u16); 3] = [("f1", 42379, 42380), ("f2", 42479, 42480), ("f3", 42579, 42580)];

/// The members; killed (by pid) when dropped.
struct Cluster {
    children: Vec<Option<Child>>,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn endpoints() -> String {
    MEMBERS.iter().map(|(_, c, _)| format!("127.0.0.1:{c}")).collect::<Vec<_>>().join(",")
}

fn start() -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let initial = MEMBERS.iter().map(|(n, _, p)| format!("{n}=http://127.0.0.1:{p}")).collect::<Vec<_>>().join(",");
    let children = MEMBERS
        .iter()
        .map(|(n, c, p)| {
            let child = Command::new("etcd")
                .args(["--logger=zap", "--log-level=error", "--name", n])
                .arg(format!("--data-dir={}", dir.path().join(n).display()))
                .arg(format!("--listen-client-urls=http://127.0.0.1:{c}"))
                .arg(format!("--advertise-client-urls=http://127.0.0.1:{c}"))
                .arg(format!("--listen-peer-urls=http://127.0.0.1:{p}"))
                .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{p}"))
                .arg(format!("--initial-cluster={initial}"))
                .arg("--initial-cluster-state=new")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("etcd");
            Some(child)
        })
        .collect();
    Cluster { children, _dir: dir }
}

/// The index of the leader (`etcdctl endpoint status`), once the cluster has one.
fn leader() -> Option<usize> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([&format!("--endpoints={}", endpoints()), "--command-timeout=2s", "endpoint", "status", "-w", "json"])
        .output()
        .ok()?;
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let arr = j.as_array()?;
    arr.iter()
        .position(|m| {
            m["Status"]["leader"].as_u64().is_some() && m["Status"]["leader"] == m["Status"]["header"]["member_id"]
        })
        .and_then(|i| {
            let ep = arr[i]["Endpoint"].as_str()?;
            MEMBERS.iter().position(|(_, c, _)| ep.ends_with(&format!(":{c}")))
        })
}

/// One hold: token, and when it began and ended (by this process's clock).
type Log = Arc<Mutex<Vec<(u64, Instant, Instant)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_killed_while_held() {
    let mut cluster = start();
    // Up: a leader within 15 s (election timeouts of a fresh cluster on a loaded machine).
    let t0 = Instant::now();
    let lead = loop {
        if let Some(l) = leader() {
            break l;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "the test cluster elected no leader");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The leader first in the URL: every client talks to it until it dies, so the waiters
    // must fail over to another member to be granted.
    let mut eps: Vec<String> = MEMBERS.iter().map(|(_, c, _)| format!("127.0.0.1:{c}")).collect();
    eps.rotate_left(lead);
    let url = format!("etcd://{}?timeout=3s&connect_timeout=2s", eps.join(","));
    let name = unique("faults");
    let log: Log = Arc::default();
    let holder = Client::connect(&url).await.unwrap();
    let opts = LockOptions::new().lease(Duration::from_secs(3)).renew_every(Duration::from_secs(1));
    let g = holder.lock_with(&name, opts.clone()).acquire().await.unwrap();
    let held_from = Instant::now();
    // Two waiters, each a client of its own, each logging its hold.
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let (url, name, log, opts) = (url.clone(), name.clone(), log.clone(), opts.clone());
        waiters.push(tokio::spawn(async move {
            let c = Client::connect(&url).await.unwrap();
            // Bounded by the test's overall bound; retried through the failover.
            let g = loop {
                match c.lock_with(&name, opts.clone()).acquire_timeout(Duration::from_secs(20)).await {
                    Ok(g) => break g,
                    Err(e) if e.kind() == baton::ErrorKind::Connection => continue,
                    Err(e) => panic!("waiter: {e}"),
                }
            };
            let from = Instant::now();
            tokio::time::sleep(Duration::from_millis(300)).await;
            let lost = g.is_lost();
            let to = Instant::now();
            let token = g.token().get();
            let _ = g.release().await;
            if !lost {
                log.lock().unwrap().push((token, from, to));
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // SIGKILL the leader.
    if let Some(mut c) = cluster.children[lead].take() {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    // The holder keeps it through the election (its lease outlives it) or is told.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let lost = g.is_lost();
    let held_to = Instant::now();
    let token = g.token().get();
    let released = g.release().await;
    if lost {
        assert!(released.is_err(), "a lost lock released without error");
    } else {
        released.expect("the holder kept its lock through the election, and releases it");
        log.lock().unwrap().push((token, held_from, held_to));
    }
    bounded("waiters granted after the election", Duration::from_secs(60), async {
        for w in waiters {
            w.await.unwrap();
        }
    })
    .await;
    let mut log = log.lock().unwrap().clone();
    assert!(log.len() >= 2, "the waiters were not granted: {log:?}");
    log.sort_by_key(|(t, _, _)| *t);
    for w in log.windows(2) {
        assert!(w[0].0 < w[1].0, "two grants with one token: {log:?}");
        // A later token's hold starts after the earlier one ended: never two holders.
        assert!(w[1].1 >= w[0].2, "holds overlap: {:?} and {:?}", w[0], w[1]);
    }
    eprintln!(
        "leader {} killed; holds (token, ms after the first): {:?}",
        MEMBERS[lead].0,
        log.iter().map(|(t, f, _)| (*t, f.duration_since(held_from).as_millis())).collect::<Vec<_>>()
    );
}
