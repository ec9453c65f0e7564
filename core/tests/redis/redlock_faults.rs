//! `redlock://` with nodes failing: five redis-server processes of the test's own on
//! free ports (never the shared 7001–7005 of `scripts/services`), killed, frozen
//! (SIGSTOP) and restarted here. Shows the quorum (2 of 5 down or frozen: granted, a frozen
//! node bounded by the node timeout; 3 of 5: a clear error, never a grant), the watchdog renewing on a quorum, fencing tokens that keep growing across
//! nodes restarted empty, and the rule for restarting a crashed node (after one
//! TTL, not at once).
#![cfg(feature = "redlock")]

use baton_testkit::{OwnRedis, TestServers, behaviour, redlock_url, tools_present};
use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use behaviour::{bounded, eventually, unique};
use tokio::time::Instant;

/// Five fresh, empty nodes and the `redlock://` URL over them (`redlock_url`).
fn five() -> (Vec<OwnRedis>, String) {
    let nodes: Vec<OwnRedis> = (0..5).map(|_| OwnRedis::start_blocking()).collect();
    let url = redlock_url(&nodes);
    (nodes, url)
}

/// Two of five nodes down: a quorum (3) is left; acquire, extend and release work, and
/// the watchdog keeps renewing on the three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_five_down_still_grants() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (mut nodes, url) = five();
    nodes[0].kill();
    nodes[3].kill();
    let c = Client::connect(&url).await.expect("a client starts with nodes down");
    let name = unique("rl-two-down");
    let g = bounded("acquire with 2 of 5 down", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    for i in [1, 2, 4] {
        assert!(nodes[i].exists(&name), "node {i} holds the grant");
    }
    g.extend(Duration::from_secs(30)).await.expect("extend on a quorum");
    g.release().await.unwrap();
    assert!(![1, 2, 4].iter().any(|i| nodes[*i].exists(&name)), "released everywhere");

    // The watchdog (lease 2 s, renewed every ~667 ms) keeps the lock past two leases.
    let wd = c.lock_with(&name, LockOptions::new().lease(Duration::from_secs(2))).acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert!(!wd.is_lost(), "the watchdog renews on the 3 nodes left");
    assert!(nodes[1].exists(&name));
    wd.release().await.unwrap();
}

/// Three of five nodes down: no quorum. Acquire fails with `Connection` naming the quorum,
/// within its timeout; nothing stays held on the two nodes left; and a watchdog lock
/// held when the third node goes is reported lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_of_five_down_never_grants() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (mut nodes, url) = five();
    let c = Client::connect(&url).await.unwrap();
    let held = unique("rl-three-down-held");
    let wd = c.lock_with(&held, LockOptions::new().lease(Duration::from_secs(1))).acquire().await.unwrap();
    for i in [0, 2, 4] {
        nodes[i].kill();
    }
    let name = unique("rl-three-down");
    let t0 = Instant::now();
    let e = c.lock(&name).acquire_timeout(Duration::from_secs(3)).await.unwrap_err();
    // Bound: the 3 s timeout (a waiter rides out an unreachable quorum for up to 2 s within
    // its wait, then fails with the store's error), plus one attempt sent just before the
    // deadline and bounded by the 1 s node step limit, plus 2 s for a loaded 2-core machine
    // (4.1 s was measured there). A hung acquire would take the whole 30 s lease or more.
    assert!(t0.elapsed() < Duration::from_secs(6), "took {:?}", t0.elapsed());
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // "2 of 5 nodes answered" (fewer if a live node stalled past its timeout).
    assert!(
        e.to_string().contains("no quorum to acquire") && e.to_string().contains("of 5 nodes answered, 3 needed"),
        "{e}"
    );
    let e = c.lock(&name).try_acquire().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // The two nodes that granted gave it back.
    assert!(!nodes[1].exists(&name) && !nodes[3].exists(&name), "a partial grant stayed on a node");
    // The watchdog cannot renew on a quorum: the lock is lost by the end of its lease.
    bounded("watchdog lock lost without a quorum", Duration::from_secs(10), wd.lost()).await;
}

/// Nodes frozen (SIGSTOP) rather than killed: their sockets stay open and simply never
/// answer, so only the per-node timeout bounds each step. Two of five frozen: the grant
/// comes from the other three within a few node timeouts, and extend and release work
/// there. Three frozen: a clear `Connection` error within the acquire's bound, never a
/// grant. Once thawed, the frozen nodes run the steps queued for them in order (the late
/// acquire, then the release or the give-back after it), so no node is left holding, and
/// the lock is granted and released again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_nodes_are_bounded_by_the_node_timeout() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (nodes, url) = five();
    let c = Client::connect(&url).await.unwrap();
    let name = unique("rl-frozen");
    for i in [0, 3] {
        nodes[i].signal("STOP");
    }
    let t0 = Instant::now();
    let g = bounded("acquire with 2 of 5 frozen", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    // Bound: one attempt waits out the 500 ms node timeout on the frozen two; 3 s leaves
    // room for a loaded 2-core machine. Without the node timeout it would hang for good.
    assert!(t0.elapsed() < Duration::from_secs(3), "granted after {:?}", t0.elapsed());
    for i in [1, 2, 4] {
        assert!(nodes[i].exists(&name), "node {i} holds the grant");
    }
    g.extend(Duration::from_secs(30)).await.expect("extend on the three that answer");
    g.release().await.unwrap();
    assert!(![1, 2, 4].iter().any(|i| nodes[*i].exists(&name)), "released on the three that answer");

    nodes[4].signal("STOP");
    let other = unique("rl-frozen-no-quorum");
    let t0 = Instant::now();
    let e = c.lock(&other).acquire_timeout(Duration::from_secs(2)).await.unwrap_err();
    // Bound as in `three_of_five_down_never_grants`: the timeout, one attempt bounded by
    // the node timeout, and margin for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(6), "took {:?}", t0.elapsed());
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.to_string().contains("no quorum to acquire"), "{e}");
    assert!(!nodes[1].exists(&other) && !nodes[2].exists(&other), "a partial grant stayed on a node");

    for i in [0, 3, 4] {
        nodes[i].signal("CONT");
    }
    // The thawed nodes run what was queued for them: grants that came too late are given
    // back after them. Bound: the nodes answer within milliseconds once thawed; 10 s for
    // the give-backs still running in the background on a loaded machine.
    eventually("no node holds either name after the thaw", Duration::from_secs(10), || async {
        !(0..5).any(|i| nodes[i].exists(&name) || nodes[i].exists(&other))
    })
    .await;
    let g = bounded("acquire after the thaw", Duration::from_secs(5), c.lock(&other).acquire()).await.unwrap();
    assert!((0..5).filter(|i| nodes[*i].exists(&other)).count() >= 3, "a grant without a quorum holding it");
    g.release().await.unwrap();
    eventually("released everywhere after the thaw", Duration::from_secs(10), || async {
        !(0..5).any(|i| nodes[i].exists(&other))
    })
    .await;
    c.close().await;
}

/// A release whose turn on a node outlasts the node timeout still reaches that node. One
/// node is frozen through a grant: its acquire and the token write-back after it wait
/// there, and the release, which must come after them on that node, waits behind them
/// longer than the 500 ms node timeout. The release returns on the four that answer; once
/// the node thaws, it runs the late grant and then the release, so it does not keep the
/// hold for its 30 s lease. (A release dropped once its turn outlasted the node timeout
/// left the late grant held there: seen on CI as `frozen_nodes_are_bounded_by_the_node_timeout`
/// finding a node still holding after the thaw.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_waiting_behind_a_frozen_node_still_lands() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (nodes, url) = five();
    let c = Client::connect(&url).await.unwrap();
    let name = unique("rl-release-lands");
    // A first grant and release while all answer: connections and scripts are in place.
    c.lock(&name).acquire().await.unwrap().release().await.unwrap();
    nodes[4].signal("STOP");
    let g = bounded("acquire with one node frozen", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
    bounded("release with one node frozen", Duration::from_secs(10), g.release()).await.unwrap();
    assert!(!(0..4).any(|i| nodes[i].exists(&name)), "released on the four that answer");
    // Frozen past the node timeout (500 ms), well within the 5 s a step behind may wait.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    nodes[4].signal("CONT");
    // Bound: the thawed node answers within milliseconds; 10 s for a loaded machine, far
    // below the 30 s lease a missed release would leave.
    eventually("the thawed node gave the late grant back", Duration::from_secs(10), || async {
        !nodes[4].exists(&name)
    })
    .await;
    c.close().await;
}

/// A split vote: another client holds two nodes and one node is down, so every round ends
/// with two grants and two refusals, a quorum for neither. The round's grants are given
/// back and the round tried again after `retry_delay` (+ `retry_jitter`, 0 here), exactly
/// `retry_count` times, then the answer is busy: the retry bound, pinned by the rounds
/// counted on a node (each round runs the acquire script there and the give-back after
/// it) and by the time taken (at least the three pauses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_vote_is_retried_retry_count_times_then_busy() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (mut nodes, url) = five();
    let url = url.replace("retry_delay=20ms&retry_jitter=20ms", "retry_delay=200ms&retry_jitter=0ms&retry_count=3");
    let c = Client::connect(&url).await.unwrap();
    let name = unique("rl-split");
    // Connections and scripts in place first, so that only the rounds below are counted.
    c.lock(&name).acquire().await.unwrap().release().await.unwrap();
    c.settled().await;
    nodes[4].kill();
    // Another client's hold on nodes 0 and 1 (Redisson's layout: its owner's hold count).
    for i in [0, 1] {
        let mut admin = nodes[i].admin();
        let _: () = redis::pipe().hset(&name, "other-client:1", 1).pexpire(&name, 30_000).query(&mut admin).unwrap();
    }
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut nodes[2].admin()).unwrap();
    let t0 = Instant::now();
    let got = bounded("try_acquire on a split vote", Duration::from_secs(20), c.lock(&name).try_acquire()).await;
    let took = t0.elapsed();
    assert!(got.unwrap().is_none(), "two grants of five are no grant");
    c.settled().await;
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut nodes[2].admin()).unwrap();
    let calls = |cmd: &str| {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{cmd}:calls=")))
            .map_or(0, |rest| rest.split(',').next().unwrap().parse::<u64>().unwrap())
    };
    // 1 round + 3 retries, each an acquire script and its give-back on this node.
    assert_eq!(calls("evalsha"), 8, "{stats}");
    // Three pauses of 200 ms between the four rounds; the upper bound is `bounded`'s.
    assert!(took >= Duration::from_millis(600), "retried without pausing: {took:?}");
    assert!(!nodes[2].exists(&name), "the split round's grant was given back");
    c.close().await;
}

/// A permit released by id from another client while one node is slow (frozen for
/// 400 ms, well within the node timeout): the grant returns only once every node answered,
/// the slow one too, so the release from the other client's connection reaches each node
/// after the grant there. Were the grant returned on the first quorum (4 of 5), the
/// release could run on the slow node before the grant it gives back, which would then
/// stay held there and be found by a second release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_released_by_id_elsewhere_stays_released_on_a_slow_node() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (nodes, url) = five();
    let url = url.replace("node_timeout=500ms", "node_timeout=3s");
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    let name = unique("rl-slow-permit");
    // The zset of held permits (`RPermitExpirableSemaphore`'s `{N}:timeout`).
    let key = format!("{{semaphore:{name}}}:timeout");
    let sem = a.permit_semaphore(&name, 2);
    nodes[0].signal("STOP");
    let thaw = {
        let pid = nodes[0].pid().expect("running");
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            let ok = std::process::Command::new("kill").args(["-CONT", &pid.to_string()]).status().unwrap().success();
            assert!(ok, "kill -CONT {pid}");
        })
    };
    let p = bounded("acquire with a slow node", Duration::from_secs(10), sem.acquire()).await.unwrap();
    thaw.join().unwrap();
    assert!(nodes[0].exists(&key), "the grant returned before the slow node answered");
    let id = p.id().to_owned();
    std::mem::forget(p);
    b.permit_semaphore(&name, 2).release(&id).await.unwrap();
    let e = b.permit_semaphore(&name, 2).release(&id).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld, "{e}");
    // Bound: the release's steps not waited for end within milliseconds; 10 s for a
    // loaded machine.
    eventually("no node holds the permit", Duration::from_secs(10), || async {
        !(0..5).any(|i| nodes[i].exists(&key))
    })
    .await;
    a.close().await;
    b.close().await;
}

/// Fencing tokens strictly grow across grants while nodes are restarted empty between
/// them: two of five each time (any two quorums share a node that kept its counter), and
/// a grant taken while a node was down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_grow_across_nodes_restarted_empty() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let (mut nodes, url) = five();
    let name = unique("rl-fence-restart");
    let mut seen = Vec::new();
    for round in 0..6 {
        // A fresh client each time: nothing is remembered in the process.
        let c = Client::connect(&url).await.unwrap();
        let g = bounded("grant", Duration::from_secs(10), c.lock(&name).acquire()).await.unwrap();
        seen.push(g.token().get());
        g.release().await.unwrap();
        c.close().await;
        // Two different nodes lose everything before the next grant.
        for i in [round % 5, (round + 2) % 5] {
            nodes[i].restart_after(Duration::ZERO);
        }
    }
    // A grant with node 0 down, then nodes 1 and 2 restarted empty and node 0 back empty:
    // only nodes 3 and 4 remember the last token.
    nodes[0].kill();
    let c = Client::connect(&url).await.unwrap();
    let g = c.lock(&name).acquire().await.unwrap();
    seen.push(g.token().get());
    g.release().await.unwrap();
    nodes[0].run().unwrap();
    nodes[1].restart_after(Duration::ZERO);
    nodes[2].restart_after(Duration::ZERO);
    // A fresh client: `c`'s connections to the restarted nodes would fail once each.
    let c = Client::connect(&url).await.unwrap();
    let g = c.lock(&name).acquire().await.unwrap();
    seen.push(g.token().get());
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "tokens not strictly increasing: {seen:?}");
    // The write-back leaves the token (or more) on every node, the restarted ones included: at
    // once on those that answered within the quorum, in the background on the others
    // (bound: 15 s; the background step is limited to 5 s, and takes milliseconds
    // unless a loaded machine stalls it).
    let counter = |n: &OwnRedis| -> Option<u64> {
        redis::cmd("GET").arg(format!("redisson_lock_token:{{{name}}}")).query(&mut n.admin()).unwrap()
    };
    let token = g.token().get();
    for (i, n) in nodes.iter().enumerate() {
        // At least the token: a node that answered after the quorum set its counter from
        // its own clock, which the write-back (a max-register) does not lower.
        eventually(&format!("node {i}'s counter at {token} or above"), Duration::from_secs(15), || {
            let c = counter(n);
            async move { c.is_some_and(|c| c >= token) }
        })
        .await;
    }
}

/// The operators' rule: "after a crash, restart a Redis node only after one TTL". A holds a
/// 3 s lock granted by exactly nodes 0, 1, 2 (3 and 4 were down and come back empty).
/// Node 2 crashes:
/// - restarted at once (empty), it lets B in on nodes 2, 3, 4 while A's lease still runs:
///   two holders — exclusion is lost, and only the fencing token (B's above A's, read
///   from nodes 0 and 1) tells them apart;
/// - restarted after one TTL, B gets in only once A's lease has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_a_node_at_once_breaks_exclusion_after_one_ttl_does_not() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    const TTL: Duration = Duration::from_secs(3);
    let (mut nodes, url) = five();
    let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
    for at_once in [true, false] {
        let name = unique("rl-restart-rule");
        nodes[3].kill();
        nodes[4].kill();
        let ga = a.lock_with(&name, LockOptions::new().ttl(TTL)).acquire().await.unwrap();
        let granted_a = Instant::now();
        // A's steps on nodes 3 and 4 may still be trying when the quorum decided, and
        // would land on them once they are back: wait out their node timeout (500 ms)
        // so that A holds exactly 0, 1 and 2.
        tokio::time::sleep(Duration::from_millis(700)).await;
        nodes[3].run().unwrap();
        nodes[4].run().unwrap();
        nodes[2].kill();
        let crashed = Instant::now();
        if at_once {
            nodes[2].run().unwrap();
        }
        // B tries every 20 ms (bounded: 5 s) until it gets in.
        let mut gb = None;
        let t0 = Instant::now();
        while gb.is_none() && t0.elapsed() < Duration::from_secs(5) {
            if !at_once && crashed.elapsed() >= TTL && !nodes_up(&nodes[2]) {
                // One TTL after the crash, node 2 comes back, empty.
                nodes[2].run().unwrap();
            }
            match b.lock(&name).try_acquire().await {
                Ok(Some(g)) => gb = Some((g, granted_a.elapsed())),
                // No quorum yet (node 2 down, 0 and 1 held by A).
                Ok(None) => {}
                Err(e) => assert_eq!(e.kind(), ErrorKind::Connection, "{e}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (gb, after) = gb.expect("B gets the lock within 5 s");
        assert!(gb.token() > ga.token(), "B's token {} not above A's {}", gb.token().get(), ga.token().get());
        if at_once {
            // Margin: A's lease has 3 s, 0.7 s of it spent before the crash; B got in well
            // before it ended.
            assert!(after < TTL - Duration::from_millis(300), "B got in after {after:?}");
            assert!(!ga.is_lost(), "A still believes it holds the lock: two holders");
        } else {
            assert!(after >= TTL, "B got in after {after:?}, before A's lease ended");
        }
        drop(gb);
        drop(ga);
        if !nodes_up(&nodes[2]) {
            nodes[2].run().unwrap();
        }
    }
}

/// Whether the node answers PING.
fn nodes_up(n: &OwnRedis) -> bool {
    redis::Client::open(n.url())
        .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
        .is_ok()
}
