//! A thread's own link (`baton::ffi::drive_here`): the JVM's blocking calls and Python's
//! synchronous API do their Redis I/O on the calling thread, over a connection of that
//! thread's own. Checked against the server's view (`CLIENT LIST`, connections named
//! `baton-own`) on the server of `scripts/services` (`BATON_TEST_REDIS_URL`): blocking
//! calls inside `drive_here` go over one such connection a thread, calls outside it never
//! do, a connection the server drops costs at most the call that meets it, and the
//! connections close with their thread and with the client.
#![cfg(all(feature = "redis", unix))]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use baton::ffi::drive_here;
use baton::rt::block_on;
use baton::{Client, ErrorKind, LockOptions};
use baton_testkit::behaviour::{self, unique};

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "Redis")
}

fn admin() -> redis::Connection {
    let url = server();
    let base = url.split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_connection().unwrap()
}

/// id → last command of every `baton-own` connection of the server.
fn own(admin: &mut redis::Connection) -> BTreeMap<String, String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("normal").query(admin).unwrap();
    list.lines()
        .filter_map(|line| {
            let field = |k: &str| line.split(' ').find_map(|kv| kv.strip_prefix(k)).map(str::to_owned);
            (field("name=")? == "baton-own").then(|| (field("id=").unwrap(), field("cmd=").unwrap_or_default()))
        })
        .collect()
}

/// The `baton-own` connections not in `before`.
fn new_own(admin: &mut redis::Connection, before: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    own(admin).into_iter().filter(|(id, _)| !before.contains_key(id)).collect()
}

/// Polls `cond` until it holds, for at most 10 s (the server notices a closed socket on
/// its next event-loop turn; 10 s is far beyond that on a loaded host).
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One lock cycle blocking this thread, inside `drive_here` or not; the grant's token.
fn cycle(client: &Client, name: &str, here: bool) -> baton::Result<baton::FencingToken> {
    let lock = client.lock_with(name, LockOptions::new().ttl(Duration::from_secs(30)));
    let run = || {
        block_on(async {
            let g = lock.try_acquire().await?.expect("a free lock");
            let token = g.token();
            g.release().await?;
            Ok(token)
        })
    };
    if here { drive_here(run) } else { run() }
}

#[test]
fn blocking_calls_inside_drive_here_use_the_threads_own_connection() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let _one = crate::ONE_AT_A_TIME.blocking_lock();
    let mut admin = admin();
    let before = own(&mut admin);
    let client = block_on(Client::connect(&server())).unwrap();
    let name = unique("own");

    // Outside `drive_here`: the multiplexed connection, no own link.
    let t0 = cycle(&client, &name, false).unwrap();
    assert!(new_own(&mut admin, &before).is_empty(), "no own link outside drive_here");

    // Inside: one own connection carries the calls, and stays for the next ones.
    let t1 = cycle(&client, &name, true).unwrap();
    let mine = new_own(&mut admin, &before);
    assert_eq!(mine.len(), 1, "one own connection for this thread: {mine:?}");
    let (id, last) = mine.into_iter().next().unwrap();
    assert_eq!(last, "evalsha", "the release's script went over it");
    let t2 = cycle(&client, &name, true).unwrap();
    assert_eq!(new_own(&mut admin, &before).keys().collect::<Vec<_>>(), vec![&id], "the same connection again");
    assert!(t0 < t1 && t1 < t2, "tokens grow across both paths: {t0} {t1} {t2}");

    // The server drops it: calls outside never met it; inside, at most the call that meets
    // it fails (Connection), and the next opens a new own connection.
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(&id).query(&mut admin).unwrap();
    cycle(&client, &name, false).expect("outside drive_here the dead link is never used");
    let mut failed = 0;
    for _ in 0..3 {
        if let Err(e) = cycle(&client, &name, true) {
            assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
            failed += 1;
        }
    }
    assert!(failed <= 1, "only the call that met the dead link fails ({failed} did)");
    let fresh = new_own(&mut admin, &before);
    assert_eq!(fresh.len(), 1, "a new own connection in place of the killed one: {fresh:?}");
    assert!(!fresh.contains_key(&id));

    // One connection a thread; each closes when its thread ends.
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (client, name) = (client.clone(), format!("{name}-t{i}"));
            std::thread::spawn(move || {
                for _ in 0..20 {
                    cycle(&client, &name, true).unwrap();
                }
            })
        })
        .collect();
    let mut peak = 0;
    for t in threads {
        peak = peak.max(new_own(&mut admin, &before).len());
        t.join().unwrap();
    }
    assert!(peak <= 5, "at most one own connection a thread: {peak}");
    eventually("the threads' connections close when they end", || new_own(&mut admin, &before).len() == 1);

    // Closing the client closes this thread's own connection too.
    block_on(async {
        client.close().await;
        Ok(())
    })
    .unwrap();
    eventually("the client's own connections close with it", || new_own(&mut admin, &before).is_empty());
    let e = cycle(&client, &name, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
}

/// A server that stops answering (a black-holed route, `Relay::cut`): a call over the
/// own connection fails with `Connection` once the request timeout (`?timeout=1s`) has
/// passed, not later, and once the route heals the same connection carries calls again
/// (the late answers go to the requests that gave up on them).
#[test]
fn a_silent_server_times_out_the_own_connection_and_it_recovers() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let _one = crate::ONE_AT_A_TIME.blocking_lock();
    let relays = tokio::runtime::Runtime::new().unwrap();
    let relay = relays.block_on(baton_testkit::Relay::start(baton_testkit::target_of(&server())));
    let url = relay.via(&server());
    let url = format!("{url}{}timeout=1s", if url.contains('?') { '&' } else { '?' });
    let client = block_on(Client::connect(&url)).unwrap();
    let name = unique("own-cut");
    cycle(&client, &name, true).unwrap();

    relay.cut();
    let t0 = Instant::now();
    let e = cycle(&client, &name, true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // The URL's 1 s, not the 10 s default; 5 s covers a loaded host.
    assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}", t0.elapsed());

    relay.heal();
    let mut ok = false;
    for i in 0..5 {
        // A fresh name: the request that timed out is delivered now and may take `name`.
        if cycle(&client, &format!("{name}-{i}"), true).is_ok() {
            ok = true;
            break;
        }
    }
    assert!(ok, "calls work again once the route heals");
    block_on(async {
        client.close().await;
        Ok(())
    })
    .unwrap();
}
