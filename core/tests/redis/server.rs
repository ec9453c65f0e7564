//! The Redis store against redis-servers this test starts itself (`baton_testkit::OwnRedis`: free
//! loopback ports, a temp dir, stopped by the test), for what the shared server must
//! never see: TLS (`rediss://` with a CA and a server certificate generated here by
//! `openssl`, `?ca=`), ACL users and wrong passwords.
#![cfg(feature = "redis")]

use baton_testkit::{
    Certs, OwnRedis, SentinelSetup, TestServers, master_becomes, replica_caught_up, sentinel_trio, tools_present,
};
use std::time::Duration;

use baton::{Client, ErrorKind};
use tokio::time::Instant;

/// Well under the engine's 1 s re-check: a wake-up this fast came from pub/sub (here over
/// TLS or as an ACL user), not from polling. Generous for a loaded 2-core machine.
const WAKE: Duration = Duration::from_millis(500);

/// A failing connect gives up within its `connect_timeout` (2 s here) and the driver's
/// retries; 15 s is far above that and far below a hang.
const GIVE_UP: Duration = Duration::from_secs(15);

/// One client holds, another waits; the release wakes the waiter through the store's
/// pub/sub connection (on the same URL: TLS, ACL user) well under the 1 s re-check.
async fn hold_and_wake(url: &str) {
    let (a, b) = (Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap());
    let name = format!("wake/{}", uuid::Uuid::new_v4().simple());
    let g = a.lock(&name).acquire().await.unwrap();
    assert!(b.lock(&name).try_acquire().await.unwrap().is_none());
    let waiter = {
        let (b, name) = (b.clone(), name.clone());
        tokio::spawn(async move {
            let g = b.lock(&name).acquire().await.unwrap();
            let at = Instant::now();
            g.release().await.unwrap();
            at
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    g.release().await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap();
    let latency = granted - released;
    assert!(latency < WAKE, "woken {latency:?} after the release");
    let sem = a.semaphore(&name, 2);
    sem.acquire_many(2).await.unwrap().release().await.unwrap();
    a.close().await;
    b.close().await;
}

/// `rediss://` with the generated CA (`?ca=`): locks, pub/sub wake-ups and semaphores work
/// over TLS; a plain connection to the TLS port, a CA that did not sign the server's
/// certificate and the system roots are each a prompt `Connection` error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_generated_ca() {
    if !tools_present(&["redis-server", "openssl"]) {
        return;
    }
    let (srv, certs) = OwnRedis::start_tls();
    let tls = srv.tls_port.unwrap();
    let ca = certs.ca.display().to_string();
    hold_and_wake(&format!("rediss://127.0.0.1:{tls}?ca={ca}")).await;
    // `localhost` is in the certificate too.
    Client::connect(&format!("rediss://localhost:{tls}?ca={ca}")).await.unwrap().close().await;

    let other = Certs::generate(srv.dir.path(), "other");
    let fast = "connect_timeout=2s&timeout=2s";
    for url in [
        format!("rediss://127.0.0.1:{tls}?ca={}&{fast}", other.ca.display()),
        format!("rediss://127.0.0.1:{tls}?{fast}"),
        format!("redis://127.0.0.1:{tls}?{fast}"),
    ] {
        let t0 = Instant::now();
        let e = Client::connect(&url).await.expect_err(&url);
        assert_eq!(e.kind(), ErrorKind::Connection, "{url}: {e}");
        assert!(t0.elapsed() < GIVE_UP, "{url}: gave up after {:?}", t0.elapsed());
    }
}

/// Bad `ca` options are `InvalidArgument` naming the option, before any connection.
#[tokio::test]
async fn tls_bad_ca_options() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    for (url, needle) in [
        ("rediss://127.0.0.1:1?ca=/nonexistent/ca.pem".to_owned(), "/nonexistent/ca.pem"),
        ("rediss://127.0.0.1:1?ca=".to_owned(), "ca"),
        (format!("rediss://127.0.0.1:1?ca={}", garbage.display()), "PEM"),
        ("redis://127.0.0.1:1?ca=/tmp/ca.pem".to_owned(), "rediss://"),
        ("redis+cluster://127.0.0.1:1?ca=/tmp/ca.pem".to_owned(), "rediss+cluster://"),
        ("redis+sentinel://127.0.0.1:1/m?ca=/tmp/ca.pem".to_owned(), "rediss+sentinel://"),
        ("rediss+cluster://127.0.0.1:1?ca=/nonexistent/ca.pem".to_owned(), "/nonexistent/ca.pem"),
        ("rediss+sentinel://127.0.0.1:1/m?ca=/nonexistent/ca.pem".to_owned(), "/nonexistent/ca.pem"),
        ("redis://127.0.0.1:1?sentinel_password=hunter2".to_owned(), "Sentinel only"),
        ("rediss+cluster://127.0.0.1:1?sentinel_user=u".to_owned(), "Sentinel only"),
    ] {
        let e = Client::connect(&url).await.expect_err(&url);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}: {e}");
        assert!(e.to_string().contains(needle), "{url}: `{e}` should mention `{needle}`");
        assert!(!format!("{e} {e:?}").contains("hunter2"), "a password in {e:?}");
    }
}

/// `rediss+cluster://` with the generated CA: a 3-master cluster of the test's own
/// serving TLS (`tls-cluster yes`, so the node addresses the cluster hands out are its
/// TLS ports): locks, pub/sub wake-ups and semaphores work; the plain scheme on the TLS
/// ports is a prompt `Connection` error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_cluster_with_generated_ca() {
    if !tools_present(&["redis-server", "redis-cli", "openssl"]) {
        return;
    }
    let (nodes, certs) = OwnRedis::start_tls_cluster();
    let hosts: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.tls_port.unwrap())).collect();
    let hosts = hosts.join(",");
    hold_and_wake(&format!("rediss+cluster://{hosts}?ca={}", certs.ca.display())).await;
    let t0 = Instant::now();
    let e = Client::connect(&format!("redis+cluster://{hosts}?connect_timeout=2s")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(t0.elapsed() < GIVE_UP, "gave up after {:?}", t0.elapsed());
}

/// `rediss+sentinel://` with sentinel authentication: a master serving TLS behind
/// `requirepass` and a sentinel serving TLS behind a `requirepass` of its own (reaching
/// the master over TLS with `sentinel auth-pass`). The URL's `:password@` logs in to the
/// master, `?sentinel_password=` to the sentinel: locks, wake-ups and semaphores work.
/// A wrong or missing sentinel password, a wrong master password and the plain scheme on
/// the TLS ports are each a prompt `Connection` error; no message or `Debug` output shows
/// a password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_sentinel_with_auth() {
    if !tools_present(&["redis-server", "openssl"]) {
        return;
    }
    let (master_pw, sentinel_pw) = ("master-S3cret", "sentinel-S3cret");
    let (master, certs) = OwnRedis::start_tls_with(&["--requirepass", master_pw]);
    let setup = SentinelSetup { certs: Some(&certs), master_password: Some(master_pw), password: Some(sentinel_pw) };
    let sentinel = OwnRedis::start_sentinel_with(master.tls_port.unwrap(), 5000, &setup);
    let at = format!("127.0.0.1:{}/mymaster", sentinel.tls_port.unwrap());
    let ca = format!("ca={}", certs.ca.display());
    // A generous connect timeout: TLS handshakes with the sentinel, then the master, in a
    // debug build on a loaded 2-core CI machine once took longer than the default.
    let good = format!("rediss+sentinel://:{master_pw}@{at}?{ca}&connect_timeout=10s&sentinel_password={sentinel_pw}");
    hold_and_wake(&good).await;
    let c = Client::connect(&good).await.unwrap();
    let shown = format!("{c:?}");
    assert!(!shown.contains(master_pw) && !shown.contains(sentinel_pw), "{shown}");
    c.close().await;

    let fast = "connect_timeout=2s&timeout=2s";
    for url in [
        format!("rediss+sentinel://:{master_pw}@{at}?{ca}&{fast}&sentinel_password=wrong-hunter2"),
        format!("rediss+sentinel://:{master_pw}@{at}?{ca}&{fast}"),
        format!("rediss+sentinel://:wrong-hunter2@{at}?{ca}&{fast}&sentinel_password={sentinel_pw}"),
        format!("redis+sentinel://:{master_pw}@{at}?{fast}&sentinel_password={sentinel_pw}"),
    ] {
        refused_promptly(&url, &[ErrorKind::Connection], &["wrong-hunter2", master_pw, sentinel_pw]).await;
    }
}

/// Connecting to `url` fails with one of `kinds` within `GIVE_UP`, and neither the
/// message nor `Debug` shows any of `secrets`.
async fn refused_promptly(url: &str, kinds: &[ErrorKind], secrets: &[&str]) {
    let t0 = Instant::now();
    let e = Client::connect(url).await.expect_err(url);
    assert!(kinds.contains(&e.kind()), "{url}: {e}");
    let shown = format!("{e} {e:?}");
    for secret in secrets {
        assert!(!shown.contains(secret), "a password in {shown}");
    }
    assert!(t0.elapsed() < GIVE_UP, "{url}: gave up after {:?}", t0.elapsed());
}

/// An ACL user (`ACL SETUSER`) logs in with `redis://user:pass@…` and everything works,
/// pub/sub included; a wrong password, an unknown user and a disabled user are
/// `Connection` errors, and a user without rights on the keys a `Backend` one — no
/// message or `Debug` ever shows a password. The same user over TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_users_and_passwords() {
    if !tools_present(&["redis-server", "openssl"]) {
        return;
    }
    let (srv, certs) = OwnRedis::start_tls();
    let mut admin = srv.admin();
    let pass = "s3cret-Pass-4711";
    let acl = |args: &[&str]| {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER").arg(args);
        cmd
    };
    let _: () = acl(&["baton-user", "on", &format!(">{pass}"), "~*", "&*", "+@all"]).query(&mut admin).unwrap();
    let _: () = acl(&["off-user", "off", &format!(">{pass}"), "~*", "&*", "+@all"]).query(&mut admin).unwrap();
    let _: () = acl(&["narrow", "on", &format!(">{pass}"), "~other:*", "&*", "+@all"]).query(&mut admin).unwrap();
    let port = srv.port;
    let good = format!("redis://baton-user:{pass}@127.0.0.1:{port}");
    hold_and_wake(&good).await;
    let c = Client::connect(&good).await.unwrap();
    assert!(!format!("{c:?}").contains(pass), "{c:?}");
    c.close().await;
    hold_and_wake(&format!("rediss://baton-user:{pass}@127.0.0.1:{}?ca={}", srv.tls_port.unwrap(), certs.ca.display()))
        .await;

    let fast = "connect_timeout=2s&timeout=2s";
    for url in [
        format!("redis://baton-user:wrong-hunter2@127.0.0.1:{port}?{fast}"),
        format!("redis://nobody:{pass}@127.0.0.1:{port}?{fast}"),
        format!("redis://off-user:{pass}@127.0.0.1:{port}?{fast}"),
        format!("redis://:wrong-hunter2@127.0.0.1:{port}?{fast}"),
    ] {
        refused_promptly(&url, &[ErrorKind::Connection, ErrorKind::Backend], &["wrong-hunter2", pass]).await;
    }
    // Logged in, but no rights on these keys: the command fails, as `Backend`.
    let c = Client::connect(&format!("redis://narrow:{pass}@127.0.0.1:{port}")).await.unwrap();
    let e = c.lock("mine").try_acquire().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Backend, "{e}");
    let shown = format!("{e} {e:?}");
    assert!(shown.contains("NOPERM") || shown.to_lowercase().contains("permission"), "{shown}");
    assert!(!shown.contains(pass), "a password in {shown}");
    c.close().await;
}

/// Generous bound for a lost signal: the lease (renewals stop working when the hold is
/// gone) + one renewal period + the time a reconnect takes on a loaded machine.
const LOST_SLACK: Duration = Duration::from_secs(4);

/// The server is restarted (SIGKILL, down 1 s, back empty: no persistence) while locks
/// are held: each guard's lost signal fires once its hold is gone — while the server is
/// down the renewals fail and the lease runs out; after it is back they find nothing.
/// Both layouts (Redisson hash and `?scheme=simple`) and a semaphore permit. Then the
/// same clients keep working: scripts are loaded again, the subscriber connection is
/// back, and a release wakes a waiter through pub/sub again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_while_held_fires_lost() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let mut srv = OwnRedis::start_blocking();
    let base = format!("{}?timeout=1s&connect_timeout=1s", srv.url());
    let (a, s) =
        (Client::connect(&base).await.unwrap(), Client::connect(&format!("{base}&scheme=simple")).await.unwrap());
    let lease = Duration::from_secs(3);
    let opts = baton::LockOptions::new().lease(lease).renew_every(Duration::from_millis(500));
    let held = vec![
        a.lock_with("r", opts.clone()).acquire().await.unwrap(),
        s.lock_with("s", opts.clone()).acquire().await.unwrap(),
    ];
    let permit = a.semaphore_with("p", 1, opts.clone()).acquire().await.unwrap();
    // A waiter subscribed before the restart (its hold-up `w` goes with the restart).
    let other = Client::connect(&base).await.unwrap();
    let blocker = other.lock("w").acquire().await.unwrap();
    let waiter = {
        let a = a.clone();
        tokio::spawn(async move { a.lock("w").acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(held.iter().all(|g| !g.is_lost()) && !permit.is_lost(), "lost before the restart");
    let killed = Instant::now();
    let mut srv = tokio::task::spawn_blocking(move || {
        srv.restart_after(Duration::from_secs(1));
        srv
    })
    .await
    .unwrap();
    for g in &held {
        tokio::time::timeout(lease + LOST_SLACK, g.lost()).await.expect("no lost signal after the restart");
    }
    tokio::time::timeout(lease + LOST_SLACK, permit.lost()).await.expect("no lost signal for the permit");
    eprintln!("lost signals {:?} after the kill", killed.elapsed());
    for g in held {
        assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    }
    // The waiter either gets `w` (its holder's hold went with the restart) or, when one
    // of its re-checks met the dead connection, fails with `Connection` (the engine does
    // not retry a waiter's store errors) — never hangs; the same client then gets `w`.
    let w = match tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap() {
        Ok(w) => w,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
            tokio::time::timeout(Duration::from_secs(5), a.lock("w").acquire()).await.expect("hung").unwrap()
        }
    };
    w.release().await.unwrap();
    drop(blocker);
    // Everything works again on the restarted server, pub/sub wake-ups included.
    hold_and_wake(&base).await;
    hold_and_wake(&format!("{base}&scheme=simple")).await;
    let g = a.lock("r").try_acquire().await.unwrap().expect("free after the restart");
    g.release().await.unwrap();
    srv.kill();
}

/// A client's connections are cut (`CLIENT KILL USER`) again and again while it takes and
/// releases a lock: some calls fail with `Connection`, none hangs, and no hold is left
/// behind — once the cutting stops, the lock is free within the client's 2 s lease, and
/// stays free (nothing keeps renewing an orphan). Once with a new handle per attempt, once
/// re-using one handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cut_mid_acquire_leaves_no_orphan() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let srv = OwnRedis::start_blocking();
    let mut admin = srv.admin();
    let _: () =
        redis::cmd("ACL").arg(&["SETUSER", "cut", "on", ">cut-pass", "~*", "&*", "+@all"]).query(&mut admin).unwrap();
    for scheme in ["redisson", "simple"] {
        for same_handle in [false, true] {
            let url =
                format!("redis://cut:cut-pass@127.0.0.1:{}?timeout=1s&connect_timeout=1s&scheme={scheme}", srv.port);
            let b = Client::connect(&url).await.unwrap();
            let name = format!("cut/{}", uuid::Uuid::new_v4().simple());
            let opts = baton::LockOptions::new().lease(Duration::from_secs(2)).renew_every(Duration::from_millis(500));
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let cutter = {
                let stop = stop.clone();
                let url = srv.url();
                std::thread::spawn(move || {
                    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                    let mut kills = 0u32;
                    let mut n = 0u64;
                    // Bounded: 20 s at most, whatever the other side does.
                    let t0 = std::time::Instant::now();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(20) {
                        n += 1;
                        let k: u32 = redis::cmd("CLIENT").arg(&["KILL", "USER", "cut"]).query(&mut con).unwrap_or(0);
                        kills += k;
                        std::thread::sleep(Duration::from_micros(500 + (n * 7919 % 5000)));
                    }
                    kills
                })
            };
            let handle = b.lock_with(&name, opts.clone());
            let (mut granted, mut failed) = (0u32, 0u32);
            let t0 = Instant::now();
            for _ in 0..150 {
                if t0.elapsed() > Duration::from_secs(12) {
                    break;
                }
                let h = if same_handle { handle.clone() } else { b.lock_with(&name, opts.clone()) };
                match tokio::time::timeout(Duration::from_secs(5), h.try_acquire()).await.expect("try_acquire hung") {
                    Ok(Some(g)) => {
                        granted += 1;
                        let _ = tokio::time::timeout(Duration::from_secs(5), g.release()).await.expect("release hung");
                    }
                    Ok(None) => {}
                    Err(e) => {
                        assert!(matches!(e.kind(), ErrorKind::Connection | ErrorKind::Backend), "{e}");
                        failed += 1;
                    }
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let kills = tokio::task::spawn_blocking(move || cutter.join().unwrap()).await.unwrap();
            eprintln!(
                "{scheme} same_handle={same_handle}: {granted} granted, {failed} failed, {kills} connections cut"
            );
            assert!(kills > 0, "nothing was cut");
            // Free within the 2 s lease (+ slack for a loaded machine), and it stays free.
            let c = Client::connect(&format!("{}?scheme={scheme}", srv.url())).await.unwrap();
            let freed = Instant::now();
            loop {
                if let Some(g) = c.lock(&name).try_acquire().await.unwrap() {
                    g.release().await.unwrap();
                    break;
                }
                if freed.elapsed() >= Duration::from_secs(4) {
                    let info = c.inspect(&name).await.unwrap();
                    panic!("{scheme} same_handle={same_handle}: an orphan hold outlived the lease: {:?}", info.holders);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(2500)).await;
            let info = c.inspect(&name).await.unwrap();
            assert!(!info.is_held(), "{scheme} same_handle={same_handle}: still held by {:?}", info.holders);
            b.close().await;
            c.close().await;
        }
    }
}

/// A client of the sentinels' master once they name a usable one: right after a failover a
/// sentinel can still answer that it knows none (`MasterNameNotFoundBySentinel`) while the
/// new master's flags settle. Bounded: 15 s.
async fn connect_after_failover(url: &str) -> Client {
    let t0 = Instant::now();
    loop {
        match Client::connect(url).await {
            Ok(c) => return c,
            Err(e) if e.kind() == ErrorKind::Connection && t0.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("no master after the failover within 15 s: {e}"),
        }
    }
}

/// `redis+sentinel://`: the master is SIGKILLed while a lock is held (its grant replicated
/// first, `WAIT 1`); the sentinel promotes the replica; the client moves to the new
/// master on its next failing call, the watchdog keeps the replicated hold (no lost
/// signal), and locks, releases and pub/sub wake-ups work there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failover_keeps_working() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (mut master, replica, sentinel) = sentinel_trio().await;
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster?timeout=1s&connect_timeout=1s", sentinel.port);
    let c = Client::connect(&url).await.unwrap();
    // A lease well above the failover (1 s down-after + election, ~2–4 s here).
    let opts = baton::LockOptions::new().lease(Duration::from_secs(10)).renew_every(Duration::from_millis(500));
    let g = c.lock_with("held", opts).acquire().await.unwrap();
    // The replica itself must hold the grant before the master dies. (`WAIT` on another
    // connection proves nothing: it counts that connection's own writes, here none.)
    // Bounded: 100 reads, 50 ms apart.
    let mut on_replica = replica.admin();
    let replicated = (0..100).any(|_| {
        let n: i64 = redis::cmd("HEXISTS").arg("held").arg(g.owner()).query(&mut on_replica).unwrap();
        n == 1 || {
            std::thread::sleep(Duration::from_millis(50));
            false
        }
    });
    assert!(replicated, "the grant did not reach the replica within 5 s");
    let killed = Instant::now();
    master.kill();
    master_becomes(&sentinel, replica.port).await;
    eprintln!("failover after {:?}", killed.elapsed());
    // Renewals go to the new master once one fails on the dead one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!g.is_lost(), "the replicated hold was lost in the failover");
    let other = connect_after_failover(&url).await;
    assert!(other.lock("held").try_acquire().await.unwrap().is_none(), "the new master lost the hold");
    let info = other.inspect("held").await.unwrap();
    assert_eq!(info.holders.first().map(|h| h.owner.as_str()), Some(g.owner()));
    g.release().await.unwrap();
    hold_and_wake(&url).await;
    // The first client's own subscriber moved too: its waiter is woken by pub/sub.
    let held = other.lock("again").acquire().await.unwrap();
    let waiter = {
        let c = c.clone();
        tokio::spawn(async move {
            let g = c.lock("again").acquire().await.unwrap();
            let at = Instant::now();
            g.release().await.unwrap();
            at
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let at = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap();
    assert!(at - released < WAKE, "woken {:?} after the release", at - released);
}

/// The asynchronous-replication hazard: a grant the replica never received (it is frozen
/// with SIGSTOP and its link cut while the lock is taken) is gone after the failover. The holder's lost
/// signal fires (its renewal finds nothing on the new master), another client is granted
/// the same lock at once; the counter's last write was lost too, yet the new grant's
/// token is above the lost one's: a token is never below the server's clock in µs
/// (docs/redis-layout.md, "Fencing tokens").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failover_loses_unreplicated_grant() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (mut master, replica, sentinel) = sentinel_trio().await;
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster?timeout=1s&connect_timeout=1s", sentinel.port);
    let c = Client::connect(&url).await.unwrap();
    // One grant both sides have, so the counter exists on the replica.
    c.lock("x").acquire().await.unwrap().release().await.unwrap();
    replica_caught_up(&master, &replica);
    // Freeze the replica and cut its link: nothing written from here on reaches it (what
    // was already sent sits in its socket and is read after SIGCONT, so the cut matters).
    replica.signal("STOP");
    let cut: i64 = redis::cmd("CLIENT").arg(&["KILL", "TYPE", "replica"]).query(&mut master.admin()).unwrap();
    assert_eq!(cut, 1);
    let opts = baton::LockOptions::new().lease(Duration::from_secs(10)).renew_every(Duration::from_millis(500));
    let g = c.lock_with("x", opts).acquire().await.unwrap();
    let lost_token = g.token();
    master.kill();
    replica.signal("CONT");
    master_becomes(&sentinel, replica.port).await;
    tokio::time::timeout(Duration::from_secs(15), g.lost()).await.expect("no lost signal for the lost grant");
    let other = connect_after_failover(&url).await;
    let g2 = other.lock("x").try_acquire().await.unwrap().expect("the lost grant still blocks");
    assert!(g2.token() > lost_token, "token {} after the failover; the lost grant had {lost_token}", g2.token());
    g2.release().await.unwrap();
    assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::LockLost);
}

/// `?wait_replicas=1`: the same cut replica as above, but a grant the replica has not
/// confirmed is refused (`Backend`, naming the option) and given back, not left held; once
/// the replica is back, grants are confirmed, and such a grant survives the master's loss
/// (the promoted replica has it: nobody else is granted, the holder is not lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_wait_replicas_refuses_an_unreplicated_grant() {
    let (mut master, replica, sentinel) = sentinel_trio().await;
    let url = format!(
        // 1.5 s for the replica's ack: generous on a loaded host (300 ms was too short on CI);
        // the command timeout outlasts it (WAIT holds the connection).
        "redis+sentinel://127.0.0.1:{}/mymaster?timeout=3s&connect_timeout=1s&wait_replicas=1&wait_timeout=1500ms",
        sentinel.port
    );
    let c = Client::connect(&url).await.unwrap();
    c.lock("w").acquire().await.unwrap().release().await.unwrap();
    replica.signal("STOP");
    let cut: i64 = redis::cmd("CLIENT").arg(&["KILL", "TYPE", "replica"]).query(&mut master.admin()).unwrap();
    assert_eq!(cut, 1);
    for kind in ["lock", "semaphore"] {
        let e = match kind {
            "lock" => c.lock("w").try_acquire().await.map(drop).unwrap_err(),
            _ => c.semaphore("w/s", 2).try_acquire().await.map(drop).unwrap_err(),
        };
        assert_eq!(e.kind(), ErrorKind::Backend, "{kind}: {e}");
        assert!(e.to_string().contains("wait_replicas") && e.to_string().contains("0 confirmed"), "{kind}: {e}");
    }
    let seen = c.inspect("w").await.unwrap();
    assert!(seen.holders.is_empty(), "the refused grant was given back: {seen:?}");
    assert_eq!(c.semaphore("w/s", 2).available().await.unwrap(), 2);
    replica.signal("CONT");
    // The replica reconnects and resyncs (bounded: 30 tries, each at most 2.5 s).
    let mut g = None;
    for _ in 0..30 {
        match c.lock("w").try_acquire().await {
            Ok(Some(held)) => {
                g = Some(held);
                break;
            }
            Ok(None) => panic!("`w` is held by nobody"),
            Err(e) if e.kind() == ErrorKind::Backend => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let g = g.expect("no confirmed grant within 30 tries of the replica's return");
    master.kill();
    master_becomes(&sentinel, replica.port).await;
    let other = connect_after_failover(&url.replace("&wait_replicas=1&wait_timeout=1500ms", "")).await;
    assert!(other.lock("w").try_acquire().await.unwrap().is_none(), "the confirmed grant survived the failover");
    assert!(!g.is_lost());
    g.release().await.unwrap();
}

/// A server restarted without persistence loses every counter: tokens still grow, in every
/// layout (the token rule: above the last one and at least the server's `TIME` in µs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_grow_through_a_restart_without_persistence() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let mut srv = OwnRedis::start_blocking();
    let mut before = Vec::new();
    for scheme in ["", "?scheme=simple"] {
        let c = Client::connect(&format!("{}{scheme}", srv.url())).await.unwrap();
        before.push(token_of_each_kind(&c).await);
        c.close().await;
    }
    srv.restart_after(Duration::from_millis(200));
    for (i, scheme) in ["", "?scheme=simple"].iter().enumerate() {
        let c = Client::connect(&format!("{}{scheme}", srv.url())).await.unwrap();
        let after = token_of_each_kind(&c).await;
        for (b, a) in before[i].iter().zip(&after) {
            assert!(a > b, "{scheme}: token {a} after the restart, {b} before");
        }
        c.close().await;
    }
}

/// One fresh grant's token of a lock, a read-write lock and a semaphore.
async fn token_of_each_kind(c: &Client) -> Vec<u64> {
    let l = c.lock("tok/l").acquire().await.unwrap();
    let w = c.rw_lock("tok/rw").write().await.unwrap();
    let p = c.semaphore("tok/s", 2).acquire().await.unwrap();
    let out = vec![l.token().get(), w.token().get(), p.token().get()];
    l.release().await.unwrap();
    w.release().await.unwrap();
    p.release().await.unwrap();
    out
}

/// `?scheme=simple` on a server that sends keyspace notifications
/// (`notify-keyspace-events Kgx`): a release done the redis-py way, which publishes
/// nothing itself, wakes a baton waiter through the notification, well under the 1 s
/// re-check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_waiter_woken_by_keyspace_notification() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let srv = OwnRedis::start_blocking();
    let _: () = redis::cmd("CONFIG").arg(&["SET", "notify-keyspace-events", "Kgx"]).query(&mut srv.admin()).unwrap();
    let c = Client::connect(&format!("{}?scheme=simple", srv.url())).await.unwrap();
    let mut admin = srv.admin();
    for round in 0..3 {
        let name = format!("py/{round}");
        let token = uuid::Uuid::new_v4().simple().to_string();
        let set: Option<String> =
            redis::cmd("SET").arg(&name).arg(&token).arg("NX").arg("PX").arg(30_000).query(&mut admin).unwrap();
        assert!(set.is_some());
        let waiter = {
            let (c, name) = (c.clone(), name.clone());
            tokio::spawn(async move {
                let g = c.lock(&name).acquire().await.unwrap();
                let at = Instant::now();
                g.release().await.unwrap();
                at
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let released = Instant::now();
        let deleted: i64 = redis::cmd("EVAL")
            .arg("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0")
            .arg(1)
            .arg(&name)
            .arg(&token)
            .query(&mut admin)
            .unwrap();
        assert_eq!(deleted, 1);
        let at = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap();
        assert!(at - released < WAKE, "round {round}: woken {:?} after the redis-py release", at - released);
    }
}

/// `redis+cluster://` on a cluster of the test's own: the node the subscriber connection
/// was on dies; a new waiter's subscription moves to another node, and a release on a
/// surviving master's slot wakes it through pub/sub, well under the 1 s re-check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_subscriber_moves_off_a_dead_node() {
    if !tools_present(&["redis-server", "redis-cli"]) {
        return;
    }
    let mut nodes = tokio::task::spawn_blocking(OwnRedis::start_cluster).await.unwrap();
    let hosts: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
    let url = format!("redis+cluster://{}?timeout=1s&connect_timeout=1s", hosts.join(","));
    let (waiter_client, holder) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    // A name whose slot the first node does not serve.
    let first = nodes[0].port;
    let mut admin = nodes[1].admin();
    let slots: Vec<(i64, i64, i64)> = {
        let raw: Vec<redis::Value> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut admin).unwrap();
        raw.iter()
            .map(|r| {
                let redis::Value::Array(r) = r else { panic!("{r:?}") };
                let lo: i64 = redis::from_redis_value(r[0].clone()).unwrap();
                let hi: i64 = redis::from_redis_value(r[1].clone()).unwrap();
                let redis::Value::Array(node) = &r[2] else { panic!("{r:?}") };
                let port: i64 = redis::from_redis_value(node[1].clone()).unwrap();
                (lo, hi, port)
            })
            .collect()
    };
    let name = (0..1000)
        .map(|i| format!("moved/{i}"))
        .find(|n| {
            let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(n).query(&mut admin).unwrap();
            slots.iter().any(|(lo, hi, port)| (*lo..=*hi).contains(&slot) && *port != i64::from(first))
        })
        .expect("a name off the first node");
    nodes[0].kill();
    let g = tokio::time::timeout(Duration::from_secs(20), holder.lock(&name).acquire())
        .await
        .expect("acquire hung with a node down")
        .unwrap();
    let waiter = {
        let (c, name) = (waiter_client.clone(), name.clone());
        tokio::spawn(async move {
            let g = c.lock(&name).acquire().await.unwrap();
            let at = Instant::now();
            g.release().await.unwrap();
            at
        })
    };
    // The waiter's first subscription fails on the dead node, then moves (≤ connect
    // timeout + retries).
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!waiter.is_finished(), "the waiter got in while the lock was held");
    let released = Instant::now();
    g.release().await.unwrap();
    let at = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("waiter hung").unwrap();
    assert!(at - released < WAKE, "woken {:?} after the release", at - released);
}

/// A server that forgot the scripts (`SCRIPT FLUSH`, a restart) gets them again: single
/// calls and pipelined renewals both keep working. On a server of its own: a flush on the
/// shared one would race the other tests' renewals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_reloaded_after_flush() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let srv = OwnRedis::start_blocking();
    let c = Client::connect(&srv.url()).await.unwrap();
    let mut raw = redis::Client::open(srv.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let name = format!("flush/{}", uuid::Uuid::new_v4().simple());
    let opts = baton::LockOptions::new().lease(Duration::from_millis(900)).renew_every(Duration::from_millis(300));
    let g = c.lock_with(&name, opts).acquire().await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    // Renewals (pipelined) across the flush keep the lease.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!g.is_lost());
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    let sem = c.semaphore(&name, 2);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut raw).await.unwrap();
    sem.acquire().await.unwrap().release().await.unwrap();
    c.close().await;
}
