//! The link a store's tasks drive themselves: on a plain `redis://` server the core's
//! asynchronous calls write their requests and read the answers on the calling task, over
//! one connection named `baton-task`. Checked against the server's view (`CLIENT LIST`) on
//! the server of `scripts/services` (`BATON_TEST_REDIS_URL`): the calls go over it once it
//! is open; 64 tasks sharing it all finish (no waiter is left unwoken); requests dropped
//! halfway leave no answer to the wrong caller; a connection the server drops costs at
//! most the calls in flight on it and is replaced; it closes with the client; and a store
//! that sends `WAIT` after its grants never uses it.
#![cfg(all(feature = "redis", unix))]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use baton::{Client, ErrorKind, LockOptions};
use baton_testkit::behaviour::{self, unique};

fn server() -> String {
    behaviour::env_server("BATON_TEST_REDIS_URL", "Redis")
}

async fn admin() -> redis::aio::MultiplexedConnection {
    let url = server();
    let base = url.split('?').next().unwrap().to_owned();
    redis::Client::open(base).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// id → last command of every `baton-task` connection of the server.
async fn tasks(admin: &mut redis::aio::MultiplexedConnection) -> BTreeMap<String, String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("normal").query_async(admin).await.unwrap();
    list.lines()
        .filter_map(|line| {
            let field = |k: &str| line.split(' ').find_map(|kv| kv.strip_prefix(k)).map(str::to_owned);
            (field("name=")? == "baton-task").then(|| (field("id=").unwrap(), field("cmd=").unwrap_or_default()))
        })
        .collect()
}

/// The `baton-task` connections not in `before`.
async fn new_tasks(
    admin: &mut redis::aio::MultiplexedConnection,
    before: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    tasks(admin).await.into_iter().filter(|(id, _)| !before.contains_key(id)).collect()
}

/// Lock cycles until `cond` holds, for at most 10 s (the link opens in the background on
/// a blocking-pool thread; 10 s is far beyond that on a loaded host).
async fn cycles_until(client: &Client, name: &str, mut cond: impl AsyncFnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond().await {
        assert!(Instant::now() < until, "not within 10 s");
        // A call that meets a link the server just dropped may fail; the next ones open a new one.
        let _ = cycle(client, name).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn cycle(client: &Client, name: &str) -> baton::Result<baton::FencingToken> {
    let g = client.lock_with(name, LockOptions::new().ttl(Duration::from_secs(30))).try_acquire().await?;
    let g = g.expect("a free lock");
    let token = g.token();
    g.release().await?;
    Ok(token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_calls_share_one_task_driven_connection() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let mut admin = admin().await;
    let before = tasks(&mut admin).await;
    let client = Client::connect(&server()).await.unwrap();
    let name = unique("task");

    // The first call opens it in the background; the calls then go over it.
    cycles_until(&client, &name, async || new_tasks(&mut admin, &before).await.len() == 1).await;
    let (id, _) = new_tasks(&mut admin, &before).await.into_iter().next().unwrap();
    let mut last = cycle(&client, &name).await.unwrap();
    for _ in 0..20 {
        let t = cycle(&client, &name).await.unwrap();
        assert!(t > last, "tokens grow");
        last = t;
    }
    let now = new_tasks(&mut admin, &before).await;
    assert_eq!(now.keys().collect::<Vec<_>>(), vec![&id], "one connection, the same: {now:?}");
    assert_eq!(now[&id], "evalsha", "the release's script went over it");

    // 64 tasks at once, each on its own name, share it; every call finishes, well within
    // the 30 s bound (a waiter nobody wakes would sit to its request timeout, 3 s, and
    // fail). Answers reach their own callers: each task's tokens grow.
    let t0 = Instant::now();
    let runs: Vec<_> = (0..64)
        .map(|i| {
            let (client, name) = (client.clone(), format!("{name}-{i}"));
            tokio::spawn(async move {
                let mut last = cycle(&client, &name).await.unwrap();
                let mut slowest = Duration::ZERO;
                for _ in 0..50 {
                    let t0 = Instant::now();
                    let t = cycle(&client, &name).await.unwrap();
                    slowest = slowest.max(t0.elapsed());
                    assert!(t > last, "tokens grow on {name}");
                    last = t;
                }
                slowest
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    for r in runs {
        slowest =
            slowest.max(tokio::time::timeout(Duration::from_secs(30), r).await.expect("64 tasks finish").unwrap());
    }
    eprintln!("64 tasks × 50 cycles in {:?}, the slowest cycle {slowest:?}", t0.elapsed());
    // A cycle is two requests; even on a loaded host each takes milliseconds. Seconds would
    // be a waiter left unwoken (each waiter reads the socket itself every 10 ms at most).
    assert!(slowest < Duration::from_secs(5), "a cycle took {slowest:?}");
    assert_eq!(new_tasks(&mut admin, &before).await.keys().collect::<Vec<_>>(), vec![&id], "still the one connection");

    // Requests dropped halfway (a timeout of 0–40 µs around each call, from 32 tasks at
    // once, so that no waiter spins its answer in before the timeout): their answers
    // still come, in order, and are dropped; none reaches a later caller.
    let runs: Vec<_> = (0..32u64)
        .map(|t| {
            let (client, name) = (client.clone(), format!("{name}-cut-{t}"));
            tokio::spawn(async move {
                let mut dropped = 0;
                for i in 0..20u64 {
                    let lock = client.lock(&name);
                    match tokio::time::timeout(Duration::from_micros((t + i) % 5 * 10), lock.try_acquire()).await {
                        Ok(Ok(Some(g))) => g.release().await.unwrap(),
                        Ok(Ok(None)) => {}
                        Ok(Err(e)) => panic!("{e}"),
                        Err(_) => dropped += 1,
                    }
                    let probe = client.inspect(&format!("{name}-probe-{i}")).await.unwrap();
                    assert!(
                        !probe.is_held() && probe.holders.is_empty(),
                        "a fresh name's inspection is its own answer"
                    );
                }
                dropped
            })
        })
        .collect();
    let mut dropped = 0;
    for r in runs {
        dropped += tokio::time::timeout(Duration::from_secs(30), r).await.expect("the tasks finish").unwrap();
    }
    eprintln!("{dropped} of 640 calls dropped halfway");
    assert!(dropped > 0, "some calls were dropped halfway");
    assert!(cycle(&client, &name).await.unwrap() > last);

    // The server drops it: at most the calls in flight fail (Connection), and a new one opens.
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(&id).query_async(&mut admin).await.unwrap();
    let mut failed = 0;
    for _ in 0..3 {
        if let Err(e) = cycle(&client, &name).await {
            assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
            failed += 1;
        }
    }
    assert!(failed <= 1, "only the call that met the dead link fails ({failed} did)");
    cycles_until(&client, &name, async || {
        let now = new_tasks(&mut admin, &before).await;
        now.len() == 1 && !now.contains_key(&id)
    })
    .await;

    // Closing the client closes it.
    client.close().await;
    let until = Instant::now() + Duration::from_secs(10);
    while !new_tasks(&mut admin, &before).await.is_empty() {
        assert!(Instant::now() < until, "the connection closes with the client");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(cycle(&client, &name).await.unwrap_err().kind(), ErrorKind::Closed);
}

/// `?wait_replicas=`: `WAIT` counts the writes of the connection it goes on, so a grant
/// and its `WAIT` both take the multiplexed connection; no `baton-task` link opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_waits_for_replicas_opens_none() {
    baton_testkit::needs_server!("BATON_TEST_REDIS_URL");
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let mut admin = admin().await;
    let before = tasks(&mut admin).await;
    let url = server();
    let sep = if url.contains('?') { '&' } else { '?' };
    // No replica here: each grant's WAIT times out at 10 ms and the grant is given back.
    let client = Client::connect(&format!("{url}{sep}wait_replicas=1&wait_timeout=10ms")).await.unwrap();
    let name = unique("task-wait");
    for _ in 0..10 {
        let e = cycle(&client, &name).await.unwrap_err();
        assert!(e.to_string().contains("confirmed"), "{e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(new_tasks(&mut admin, &before).await.is_empty(), "no tasks' link with wait_replicas");
    client.close().await;
}
