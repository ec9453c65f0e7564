//! `DrivenLink`, the connection a caller's event loop drives (the Node binding's hot path,
//! `bindings-node/src/fast/here.rs`), on the server of `scripts/services`
//! (`BATON_TEST_REDIS_URL`). A current-thread runtime stands in for Node's loop: the test
//! installs the link on its thread and a task there waits for the socket to be readable
//! (tokio's `AsyncFd` in libuv's place) and hands the answers out. Checked against the
//! server's own view (`CLIENT LIST`): the calls go over the link, a pipeline (scripts
//! loaded again after `SCRIPT FLUSH`) is answered whole, and a link the server drops fails
//! the call that meets it with `Connection`, after which calls take the usual connection.
#![cfg(all(feature = "redis", unix))]

use baton_testkit::behaviour;
use std::time::Duration;

use baton::ffi::DrivenLink;
use baton::{Client, ErrorKind, LockOptions};
use behaviour::{bounded, unique};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "Redis")
}

async fn raw() -> redis::aio::MultiplexedConnection {
    let url = server();
    let base = url.split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// `(id, last command)` of every `baton-driven` connection of the server.
async fn driven(conn: &mut redis::aio::MultiplexedConnection) -> Vec<(String, String)> {
    let list: String = redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("normal").query_async(conn).await.unwrap();
    list.lines()
        .filter_map(|line| {
            let field = |k: &str| line.split(' ').find_map(|kv| kv.strip_prefix(k)).map(str::to_owned);
            (field("name=")? == "baton-driven").then(|| (field("id=").unwrap(), field("cmd=").unwrap_or_default()))
        })
        .collect()
}

/// The event loop's part: hands out answers whenever the socket is readable, until the
/// link dies.
async fn drive(link: DrivenLink) {
    // SAFETY: the descriptor stays open while the link lives (dead or not), and `link` is
    // moved in here, so it outlives the registration.
    let fd = unsafe { AsyncFd::register_with_interest(link.fd(), Interest::READABLE) }
        .unwrap_or_else(|e| panic!("watch the link's socket: {e}"));
    loop {
        let Ok(mut ready) = fd.readable().await else { return };
        ready.clear_ready();
        if !link.on_readable() {
            return;
        }
    }
}

// One test, its steps in order: the link's server-side id is told from other links by
// being the only new one, which parallel tests opening links could break.
#[tokio::test(flavor = "current_thread")]
async fn a_driven_link_carries_the_calls_polled_where_it_is_installed() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let mut admin = raw().await;
    let before = driven(&mut admin).await;
    let client = Client::connect(&server()).await.unwrap();
    let link = baton::ffi::driven_link(&client).await.unwrap().expect("a plain redis:// server has a driven link");
    let ours: Vec<_> = driven(&mut admin).await.into_iter().filter(|c| !before.contains(c)).map(|c| c.0).collect();
    assert_eq!(ours.len(), 1, "one new baton-driven connection: {ours:?}");
    let id = ours[0].clone();
    link.install();
    let driver = tokio::spawn(drive(link.clone()));
    let last_cmd = |list: Vec<(String, String)>| list.into_iter().find(|c| c.0 == id).map(|c| c.1);

    // Calls polled on this thread go over the link.
    let lock = client.lock_with(&unique("driven"), LockOptions::new().lease(Duration::from_secs(30)));
    let limit = Duration::from_secs(10);
    let g = bounded("acquire over the link", limit, lock.acquire()).await.unwrap();
    assert_eq!(last_cmd(driven(&mut admin).await).as_deref(), Some("evalsha"));
    let first = g.token();
    bounded("release over the link", limit, g.release()).await.unwrap();
    assert_eq!(link.pending(), 0, "every request answered");

    // Scripts lost by the server: the acquire falls back to EVAL, an extension reloads them
    // with one pipeline (several answers to one request) over the link.
    let g = bounded("acquire", limit, lock.acquire()).await.unwrap();
    assert!(g.token() > first);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut admin).await.unwrap();
    bounded("extend after SCRIPT FLUSH", limit, g.extend(Duration::from_secs(20))).await.unwrap();
    assert_eq!(last_cmd(driven(&mut admin).await).as_deref(), Some("evalsha"), "reloaded, then renewed");
    bounded("release", limit, g.release()).await.unwrap();

    // The server drops the link: the call that meets it fails with Connection; the link is
    // dead, and later calls take the multiplexed connection.
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(&id).query_async(&mut admin).await.unwrap();
    let mut failed = 0;
    for _ in 0..3 {
        match bounded("acquire after the kill", limit, lock.acquire()).await {
            Ok(g) => bounded("release after the kill", limit, g.release()).await.unwrap(),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
                failed += 1;
            }
        }
    }
    assert!(failed <= 1, "only the call that met the dead link fails ({failed} did)");
    assert!(!link.is_alive());
    bounded("the driver stops with its link", limit, driver).await.unwrap();
    let g = bounded("acquire on the usual connection", limit, lock.acquire()).await.unwrap();
    bounded("release", limit, g.release()).await.unwrap();
    link.uninstall();
    link.close();
    client.close().await;
}
