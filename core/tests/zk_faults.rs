//! Faults on 3-member ZooKeeper ensembles of this test's own (members started and killed
//! here on ports from `BATON_PORT_RANGE`; the shared ensemble of `scripts/services` is
//! never touched): the leader SIGKILLed while a lock is held and others wait; a session
//! cut off (a proxy between client and server stops forwarding) until it expires; a quorum
//! lost.
#![cfg(feature = "zookeeper")]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use baton_testkit::behaviour::{bounded, unique};
use baton_testkit::free_port;
use tokio::time::Instant;

/// One ensemble at a time: two electing at once on a loaded 2-core machine slow each other.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Member {
    client: u16,
    child: Option<Child>,
}

/// Three members; killed (by pid) when dropped.
struct Ensemble {
    members: Vec<Member>,
    _dir: tempfile::TempDir,
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for m in &mut self.members {
            if let Some(c) = m.child.as_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// A four-letter word's answer from the member on `port` (empty when it does not answer).
fn four(port: u16, word: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(word.as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

impl Ensemble {
    fn start() -> Ensemble {
        let dir = tempfile::tempdir().unwrap();
        let ports: Vec<(u16, u16, u16)> = (0..3).map(|_| (free_port(), free_port(), free_port())).collect();
        let servers: String =
            ports.iter().enumerate().map(|(i, (_, q, e))| format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1)).collect();
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, (c, _, _))| {
                let d = dir.path().join(format!("zk{}", i + 1));
                std::fs::create_dir_all(d.join("data")).unwrap();
                std::fs::write(d.join("data/myid"), format!("{}\n", i + 1)).unwrap();
                let cfg = format!(
                    "tickTime=500\ninitLimit=10\nsyncLimit=4\ndataDir={}\nclientPort={c}\nclientPortAddress=127.0.0.1\n\
                     maxClientCnxns=0\nforceSync=no\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n{servers}",
                    d.join("data").display()
                );
                std::fs::write(d.join("zoo.cfg"), cfg).unwrap();
                let child = Command::new("java")
                    .args(["-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true"])
                    .args(["-Dzookeeper.admin.enableServer=false", "-cp"])
                    .arg("/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar")
                    .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
                    .arg(d.join("zoo.cfg"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("java (scripts/services installs zookeeper)");
                Member { client: *c, child: Some(child) }
            })
            .collect();
        Ensemble { members, _dir: dir }
    }

    fn url(&self, opts: &str) -> String {
        let hosts: Vec<String> = self.members.iter().map(|m| format!("127.0.0.1:{}", m.client)).collect();
        format!("zk://{}?{opts}", hosts.join(","))
    }

    /// The leader's index once a quorum serves (bounded).
    async fn leader(&self) -> usize {
        bounded("ensemble elects a leader", Duration::from_secs(60), async {
            loop {
                let modes: Vec<String> = self.members.iter().map(|m| four(m.client, "srvr")).collect();
                if let Some(i) = modes.iter().position(|m| m.contains("Mode: leader")) {
                    if modes.iter().filter(|m| m.contains("Mode: follower")).count() >= 1 {
                        return i;
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The leader dies while a lock is held and two clients wait: the holder keeps it or
/// learns it lost it, the waiters are granted in turn afterwards, tokens grow, and no two
/// holds overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_killed_while_held_and_waited() {
    let _one = SERIAL.lock().await;
    let mut e = Ensemble::start();
    e.leader().await;
    let url = e.url("session_timeout=6s&timeout=10s");
    let name = unique("zk-leader");
    let a = Client::connect(&url).await.unwrap();
    let g = a.lock_with(&name, LockOptions::new().lease(Duration::from_secs(5))).acquire().await.unwrap();
    let busy = Arc::new(AtomicBool::new(true));
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let (url, name, busy) = (url.clone(), name.clone(), busy.clone());
        waiters.push(tokio::spawn(async move {
            let c = Client::connect(&url).await.unwrap();
            let lock = c.lock_with(&name, LockOptions::new().lease(Duration::from_secs(5)));
            let g = bounded("waiter granted after the election", Duration::from_secs(60), async {
                loop {
                    match lock.acquire_timeout(Duration::from_secs(20)).await {
                        Ok(g) => break g,
                        Err(e) if matches!(e.kind(), ErrorKind::Connection | ErrorKind::Timeout) => {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            })
            .await;
            assert!(!busy.swap(true, Ordering::SeqCst), "two holders at once");
            tokio::time::sleep(Duration::from_millis(100)).await;
            busy.store(false, Ordering::SeqCst);
            let t = g.token();
            let _ = g.release().await;
            t
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let leader = e.leader().await;
    e.kill(leader);
    let killed = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Held through the election (or lost, and said so): never held silently by two.
    if !g.is_lost() {
        assert!(a.lock(&name).try_acquire().await.map(|x| x.is_none()).unwrap_or(true));
    }
    let t0 = g.token();
    busy.store(false, Ordering::SeqCst);
    let _ = g.release().await;
    let mut tokens = Vec::new();
    for w in waiters {
        tokens.push(w.await.unwrap());
    }
    assert!(tokens.iter().all(|t| *t > t0), "tokens grow: {t0:?} then {tokens:?}");
    assert_ne!(tokens[0], tokens[1]);
    eprintln!("both waiters granted {:?} after the leader died", killed.elapsed());
}

/// A TCP proxy that forwards until `cut` is set, then stops forwarding (both ways) and
/// accepts nobody: a network cut between one client and the ensemble.
async fn proxy(to: u16, cut: Arc<AtomicBool>) -> u16 {
    let l = tokio::net::TcpListener::bind(("127.0.0.1", free_port())).await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = l.accept().await {
            if cut.load(Ordering::SeqCst) {
                continue;
            }
            let cut = cut.clone();
            tokio::spawn(async move {
                let Ok(mut out) = tokio::net::TcpStream::connect(("127.0.0.1", to)).await else { return };
                let (mut ri, mut wi) = inbound.split();
                let (mut ro, mut wo) = out.split();
                let watch = async {
                    while !cut.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                };
                tokio::select! {
                    _ = tokio::io::copy(&mut ri, &mut wo) => {}
                    _ = tokio::io::copy(&mut ro, &mut wi) => {}
                    _ = watch => {}
                }
            });
        }
    });
    port
}

/// A holder cut off from the ensemble until its session expires: a second client gets
/// the lock with a higher token (the fencing token is what protects the resource in the
/// window before the first hears of it), the first gets its lost signal within its session
/// timeout plus one request timeout, and once the network is back it works again on a
/// new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn session_expired_by_a_cut_is_lost_then_a_new_session() {
    let _one = SERIAL.lock().await;
    let e = Ensemble::start();
    e.leader().await;
    let cut = Arc::new(AtomicBool::new(false));
    let p = proxy(e.members[0].client, cut.clone()).await;
    let a = Client::connect(&format!("zk://127.0.0.1:{p}?session_timeout=3s&timeout=2s")).await.unwrap();
    let b = Client::connect(&e.url("timeout=10s")).await.unwrap();
    let name = unique("zk-cut");
    let g = a.lock_with(&name, LockOptions::new().lease(Duration::from_secs(3))).acquire().await.unwrap();
    cut.store(true, Ordering::SeqCst);
    let t0 = Instant::now();
    let g2 = bounded("second holder after the expiry", Duration::from_secs(30), b.lock(&name).acquire()).await.unwrap();
    let second_at = t0.elapsed();
    assert!(g2.token() > g.token());
    bounded("the cut-off holder learns it lost the lock", Duration::from_secs(8), g.lost()).await;
    eprintln!("after the cut: second holder at {second_at:?}, first told it lost at {:?}", t0.elapsed());
    cut.store(false, Ordering::SeqCst);
    assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    let t2 = g2.token();
    g2.release().await.unwrap();
    let again = bounded("a new session after the expiry", Duration::from_secs(30), async {
        loop {
            match a.lock(&name).try_acquire().await {
                Ok(Some(g)) => break g,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await;
    assert!(again.token() > t2);
    again.release().await.unwrap();
}

/// Two of three members down: calls fail with `Connection` within their timeout and
/// nothing is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quorum_lost_fails_with_connection_in_time() {
    let _one = SERIAL.lock().await;
    let mut e = Ensemble::start();
    e.leader().await;
    let c = Client::connect(&e.url("timeout=2s&session_timeout=4s")).await.unwrap();
    let name = unique("zk-quorum");
    c.lock(&name).acquire().await.unwrap().release().await.unwrap();
    e.kill(1);
    e.kill(2);
    let t0 = Instant::now();
    let r = c.lock(&name).acquire_timeout(Duration::from_secs(3)).await;
    let took = t0.elapsed();
    let err = r.expect_err("granted without a quorum");
    assert!(matches!(err.kind(), ErrorKind::Connection | ErrorKind::Timeout), "{err}");
    assert!(took < Duration::from_secs(8), "failed only after {took:?}");
    let t0 = Instant::now();
    let err = c.lock(&name).try_acquire().await.expect_err("granted without a quorum");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(t0.elapsed() < Duration::from_secs(6), "failed only after {:?}", t0.elapsed());
}
