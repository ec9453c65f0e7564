//! The Redis store against redis-servers this test starts itself (`own_redis`: free
//! loopback ports, a temp dir, stopped by the test), for what the shared server must
//! never see: TLS (`rediss://` with a CA and a server certificate generated here by
//! `openssl`, `?ca=`), ACL users and wrong passwords.
#![cfg(feature = "redis")]

mod own_redis;

use std::time::Duration;

use baton::{Client, ErrorKind};
use own_redis::{Certs, OwnRedis, tools_present};
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
    ] {
        let e = Client::connect(&url).await.expect_err(&url);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}: {e}");
        assert!(e.to_string().contains(needle), "{url}: `{e}` should mention `{needle}`");
    }
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
        let t0 = Instant::now();
        let e = Client::connect(&url).await.expect_err(&url);
        assert!(matches!(e.kind(), ErrorKind::Connection | ErrorKind::Backend), "{url}: {e}");
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains("wrong-hunter2") && !shown.contains(pass), "a password in {shown}");
        assert!(t0.elapsed() < GIVE_UP, "{url}: gave up after {:?}", t0.elapsed());
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
