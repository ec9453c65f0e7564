//! The fault suite (issue 23): every store through the same faults, and one table of what
//! each did — store × fault → grants, overlaps, token inversions, time to the next grant.
//!
//! Run it with `cargo test -p baton --all-features --test faults -- --nocapture`; the
//! table is written to stderr (past the test harness's capture: it shows on a pass too)
//! and to `faults-table.md` in cargo's test temp dir (`target/tmp`).
//!
//! Every server is the test's own, on ports of `baton_testkit::free_port` (never the
//! shared servers of `scripts/services`): a Redis server, 3 Redlock nodes, a 3-member etcd
//! cluster, PostgreSQL, MariaDB, a SQLite file, a 3-member ZooKeeper ensemble, and a Redis
//! master + replica + sentinel for the master's loss. `memory://` is left out: it lives in
//! one process, so no fault here can reach its holder without reaching the store too.
//!
//! The faults (columns):
//! - **holder SIGKILL**: the holder is a child process (this binary re-executed,
//!   `crash::spawn_holder_process`) with a 2 s watchdog lease, SIGKILLed while a waiter here
//!   tries every 20 ms;
//! - **holder SIGSTOP past lease**: the same child stopped until the waiter is granted, then
//!   continued: its fenced write with its old token must be refused by the store (the
//!   waiter's, with the new token, taken first);
//! - **server restart**: the server killed and started again while a holder here holds
//!   (Redis: empty, no persistence; Redlock: one node of 3, empty, at once; SQL, etcd,
//!   ZooKeeper: every member, on their data);
//! - **partition**: the holder reaches the store through `baton_testkit::Relay`, which is
//!   black-holed (Redlock: 2 of the holder's 3 node routes; etcd and ZooKeeper: its one
//!   member), the waiter reaches it directly;
//! - **leader loss**: the etcd or ZooKeeper leader SIGKILLed, the Redis Sentinel master
//!   SIGKILLed (the sentinel promotes the replica), while a holder holds.
//!
//! What a cell counts:
//! - **grants**: the grants the scenario saw (the first holder's, the waiter's);
//! - **overlaps**: grants while an earlier holder still held by its own account. For a
//!   holder in this process: the waiter's successful attempt sent before the holder's lost
//!   signal fired (or answered before the holder sent its release, when it kept the lock
//!   through the fault). For a killed or stopped child: the waiter's grant answered before
//!   the child's lease could have ended by its own clock (sent + lease − the holder's
//!   drift margin and the store's, `docs/guarantees.md`);
//! - **token inversions**: a later grant whose token is not above the earlier one's;
//! - **time to next grant**: from the fault's start to the waiter's grant;
//! - for SIGSTOP, whether the paused holder's late fenced write was refused.
//!
//! Overlaps and inversions must be 0 wherever `docs/guarantees.md` claims them: every cell
//! but a Redis restarted without persistence and a Sentinel failover (asynchronous
//! replication), where a second grant is a documented possibility and is reported only.
//! A stale fenced write must be refused on every store. The table is printed first, then
//! the test fails with every broken claim.
#![cfg(all(
    feature = "redis",
    feature = "redlock",
    feature = "postgres",
    feature = "mysql",
    feature = "sqlite",
    feature = "etcd",
    feature = "zookeeper"
))]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

use std::fmt::Write as _;
use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use baton::{Client, ErrorKind, LockGuard, LockOptions};
use baton_testkit::behaviour::crash::{self, CHILD_LEASE, spawn_holder_process};
use baton_testkit::behaviour::{SLACK, bounded, unique};
use baton_testkit::{
    OwnEtcdCluster, OwnMariaDb, OwnPostgres, OwnRedis, OwnZk, Relay, master_becomes, redlock_url, sentinel_trio,
    target_of, tools_present,
};
use tokio::time::Instant;

/// The lease of the holders in this process, renewed every second: a cut or a dead server
/// is noticed within it.
const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(1);

const STORES: [&str; 7] = ["redis", "redlock", "etcd", "postgres", "mysql", "sqlite", "zk"];
const FAULTS: [&str; 5] = ["holder SIGKILL", "holder SIGSTOP past lease", "server restart", "partition", "leader loss"];
const KILL: usize = 0;
const STOP: usize = 1;
const RESTART: usize = 2;
const PARTITION: usize = 3;
const LEADER: usize = 4;

/// What one scenario measured.
#[derive(Clone, Debug)]
struct Cell {
    grants: u32,
    overlaps: u32,
    inversions: u32,
    /// From the fault's start to the waiter's grant.
    next_grant: Duration,
    /// The holder kept the lock through the fault; the waiter's grant followed its release.
    kept: bool,
    /// SIGSTOP: whether the paused holder's late fenced write was taken.
    stale_write_taken: Option<bool>,
}

#[derive(Clone, Debug)]
enum Outcome {
    Measured(Cell),
    /// Does not apply; a word of why (the legend says more).
    NotApplicable(&'static str),
    Failed(String),
}

/// The table: `[store][fault]`, filled as the scenarios end.
type Table = Arc<Mutex<Vec<Vec<Option<Outcome>>>>>;

fn set(table: &Table, store: usize, fault: usize, outcome: Outcome) {
    eprintln!("{} × {}: {outcome:?}", STORES[store], FAULTS[fault]);
    table.lock().unwrap()[store][fault] = Some(outcome);
}

/// Whether `docs/guarantees.md` claims no second grant for this store under this fault: all
/// but a Redis restarted without persistence (every hold is lost) and a Sentinel failover
/// (a grant the replica had not received is lost).
fn overlap_claimed(store: usize, fault: usize) -> bool {
    !(STORES[store] == "redis" && (fault == RESTART || fault == LEADER))
}

/// The part of a lease that a holder does not count on (`docs/guarantees.md`, "Every
/// store"): 2 % + 50 ms, plus the store's own margin (`extra`).
fn holder_margin(lease: Duration, extra: Duration) -> Duration {
    lease / 50 + Duration::from_millis(50) + extra
}

/// etcd reuses a keep-alive sent up to a tenth of a renewal period earlier (≤ 250 ms).
const ETCD_MARGIN: Duration = Duration::from_millis(250);
/// Redlock's drift between its nodes: 1 % of the lease + 2 ms.
fn redlock_margin() -> Duration {
    CHILD_LEASE / 100 + Duration::from_millis(2)
}

/// The waiter's grant: when its successful attempt was sent and answered.
struct Granted {
    sent: Instant,
    answered: Instant,
    answered_wall: SystemTime,
    guard: LockGuard,
    client: Client,
}

/// How long one of the waiter's tries may take: tries take milliseconds, a Redlock try
/// with a node down at most its 500 ms node timeout; 2 s leaves room for a loaded machine.
const TRY_BOUND: Duration = Duration::from_secs(2);

/// The waiter: a `try_acquire` every 20 ms until granted (bounded by the caller), with a
/// fresh client after an error (the store may be restarting or failing over).
async fn poll_grant(url: String, name: String) -> Granted {
    let mut client: Option<Client> = None;
    loop {
        let c = match &client {
            Some(c) => c.clone(),
            None => match Client::connect(&url).await {
                Ok(c) => {
                    client = Some(c.clone());
                    c
                }
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let sent = Instant::now();
        // Each try bounded: the overlap check dates a grant from its try's sending, and a
        // try sent before an outage and answered after it (ZooKeeper's client holds a
        // request through a restart of its ensemble) would date a grant made after the
        // outage from before it. Dropped, a try leaves nothing (a cancelled acquire gives
        // back what it took); the client reconnects by itself, so it is kept.
        match tokio::time::timeout(TRY_BOUND, c.lock(&name).try_acquire()).await {
            Ok(Ok(Some(guard))) => {
                return Granted { sent, answered: Instant::now(), answered_wall: SystemTime::now(), guard, client: c };
            }
            Ok(Ok(None)) | Err(_) => {}
            Ok(Err(_)) => client = None,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGKILL (`stop` false) or SIGSTOP past the lease (`stop` true) of a holder process on
/// `url`; `fence_url` is the resource's store for the fenced writes (default `url`),
/// `margin` the holder's and the store's margins on the child's lease.
async fn child_fault(url: &str, fence_url: Option<&str>, margin: Duration, stop: bool) -> Outcome {
    let name = unique("faults/child");
    let key = unique("faults/resource");
    let mut env = vec![("BATON_CHILD_FENCE_KEY", key.as_str())];
    if let Some(f) = fence_url {
        env.push(("BATON_CHILD_FENCE_URL", f));
    }
    let mut holder = spawn_holder_process(url, &name, if stop { "paused" } else { "lock" }, &env).await;
    // By the child's own clock its lease lasts at least until then (it may renew later).
    let due = holder.sent + CHILD_LEASE - margin;
    let waiter = tokio::spawn(poll_grant(url.to_owned(), name.clone()));
    // A few of the waiter's tries while the child runs (each must find the lock held), and
    // the fault before the child's first renewal (at a third of the lease).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fault_at = Instant::now();
    if stop {
        holder.signal("STOP");
    } else {
        holder.child.kill().unwrap();
        holder.child.wait().unwrap();
    }
    // Bound: the lease, the waiter's 20 ms tries, and a loaded machine's slack.
    let got = bounded("the waiter's grant after the holder's fault", CHILD_LEASE + SLACK, waiter).await.unwrap();
    let next_grant = got.answered - fault_at;
    let overlaps = u32::from(got.answered_wall < due);
    let inversions = u32::from(got.guard.token().get() <= holder.token);
    let stale_write_taken = if stop {
        let resource = match fence_url {
            Some(f) => Client::connect(f).await.unwrap(),
            None => got.client.clone(),
        };
        let wrote = resource.fence().write(&key, "waiter", got.guard.token()).await.unwrap();
        assert!(wrote, "{url}: the new holder's fenced write was refused");
        let stale = holder.resume_and_write().await;
        // The resource keeps the new holder's value.
        let kept = resource.fence().read(&key).await.unwrap().expect("the fenced value");
        assert_eq!(kept.token, got.guard.token(), "{url}: the resource's last writer");
        Some(stale)
    } else {
        None
    };
    got.guard.release().await.unwrap();
    Outcome::Measured(Cell { grants: 2, overlaps, inversions, next_grant, kept: false, stale_write_taken })
}

/// A holder here (on `holder_url`) holds through `fault` while a waiter (on `waiter_url`)
/// tries every 20 ms. Once the fault is done: the waiter's grant, the holder's lost signal
/// or `window`, whichever first; a holder still holding then releases (it kept the lock).
/// `bound`: the longest the waiter may take after that (the stores' session and lease
/// limits, and a loaded machine).
async fn held_through(
    holder_url: &str,
    waiter_url: &str,
    fault: impl Future<Output = ()>,
    window: Duration,
    bound: Duration,
) -> Outcome {
    let name = unique("faults/held");
    let holder = Client::connect(holder_url).await.unwrap();
    let g = holder.lock_with(&name, LockOptions::new().lease(LEASE).renew_every(RENEW)).acquire().await.unwrap();
    let token = g.token();
    // Past a renewal: the fault meets a hold in its steady state.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let lost = g.lost_signal();
    let lost_at = tokio::spawn({
        let lost = lost.clone();
        async move {
            lost.wait().await;
            Instant::now()
        }
    });
    let mut waiter = tokio::spawn(poll_grant(waiter_url.to_owned(), name.clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let fault_at = Instant::now();
    fault.await;
    let done = Instant::now();
    while !waiter.is_finished() && !lost.is_lost() && done.elapsed() < window {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut release_sent = None;
    let mut g = Some(g);
    if !waiter.is_finished() && !lost.is_lost() {
        // The holder kept the lock through the fault: its release lets the waiter in.
        let sent = Instant::now();
        let released = g.take().unwrap().release();
        match bounded("the holder's release", Duration::from_secs(20), released).await {
            Ok(()) => release_sent = Some(sent),
            // Lost meanwhile: the lost signal tells when.
            Err(e) if e.kind() == ErrorKind::LockLost => {}
            Err(e) => panic!("the holder kept the lock through the fault, but its release failed: {e}"),
        }
    }
    let got = bounded("the waiter's grant", bound, &mut waiter).await.unwrap();
    let lost_at = if release_sent.is_none() && lost.is_lost() {
        Some(lost_at.await.unwrap())
    } else {
        lost_at.abort();
        None
    };
    let ended = lost_at.is_some_and(|l| l < got.sent) || release_sent.is_some_and(|r| r < got.answered);
    let cell = Cell {
        grants: 2,
        overlaps: u32::from(!ended),
        inversions: u32::from(got.guard.token() <= token),
        next_grant: got.answered - fault_at,
        kept: release_sent.is_some(),
        stale_write_taken: None,
    };
    if let Some(l) = lost_at {
        eprintln!(
            "  holder lost {:?} after the fault, waiter's try sent {:?} after it",
            l - fault_at,
            got.sent - fault_at
        );
    }
    let _ = bounded("the waiter's release", Duration::from_secs(20), got.guard.release()).await;
    drop(g);
    Outcome::Measured(cell)
}

/// `url` with every `127.0.0.1:<node port>` of `relays` replaced by the relay's port.
fn via_all(url: &str, relays: &[(u16, &Relay)]) -> String {
    relays.iter().fold(url.to_owned(), |u, (port, r)| {
        u.replacen(&format!("127.0.0.1:{port}"), &format!("127.0.0.1:{}", r.port), 1)
    })
}

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// The window after a fault in which the holder must lose the lock or be deemed to have
/// kept it: its lease and a renewal, and a loaded machine's stall.
const WINDOW: Duration = Duration::from_secs(6);

/// The holder-process faults of store `s` on `url` (SIGKILL, SIGSTOP), fenced writes on
/// `fence_url` (default `url`), `extra` the store's own margin on a lease.
async fn holder_processes(t: &Table, s: usize, url: &str, fence_url: Option<&str>, extra: Duration) {
    let m = holder_margin(CHILD_LEASE, extra);
    set(t, s, KILL, child_fault(url, fence_url, m, false).await);
    set(t, s, STOP, child_fault(url, fence_url, m, true).await);
}

/// Every fault of a store on one server at `url` but a leader's loss: the holder processes,
/// the holder's route to the server cut, and `restart`. `bound`: the waiter's, after each.
async fn one_server(t: &Table, s: usize, url: &str, restart: impl Future<Output = ()>, bound: Duration) {
    holder_processes(t, s, url, None, Duration::ZERO).await;
    let relay = Relay::start(target_of(url)).await;
    let cut = async { relay.cut() };
    set(t, s, PARTITION, held_through(&relay.via(url), url, cut, WINDOW, bound).await);
    set(t, s, RESTART, held_through(url, url, restart, WINDOW, bound).await);
}

async fn redis_row(t: Table, mut server: OwnRedis) {
    const S: usize = 0;
    let url = format!("{}?timeout=1s&connect_timeout=1s", server.url());
    let restart = async { server.restart().await.unwrap() };
    one_server(&t, S, &url, restart, Duration::from_secs(20)).await;
    drop(server);
    let (mut master, replica, sentinel) = sentinel_trio().await;
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster?timeout=1s&connect_timeout=1s", sentinel.port);
    let failover = async {
        master.kill();
        master_becomes(&sentinel, replica.port).await;
    };
    // Bound: the failover (1 s down-after and the election) and the lease.
    set(&t, S, LEADER, held_through(&url, &url, failover, WINDOW, Duration::from_secs(30)).await);
}

async fn redlock_row(t: Table, mut nodes: Vec<OwnRedis>) {
    const S: usize = 1;
    let url = redlock_url(&nodes);
    // Redlock has no fenced writes of its own: the resource is a Redis (node 1's server).
    holder_processes(&t, S, &url, Some(&nodes[0].url()), redlock_margin()).await;
    let relays = [Relay::start(local(nodes[0].port)).await, Relay::start(local(nodes[1].port)).await];
    let holder_url = via_all(&url, &[(nodes[0].port, &relays[0]), (nodes[1].port, &relays[1])]);
    let cut = async { relays.iter().for_each(Relay::cut) };
    set(&t, S, PARTITION, held_through(&holder_url, &url, cut, WINDOW, Duration::from_secs(20)).await);
    let restart = async { nodes[2].restart().await.unwrap() };
    set(&t, S, RESTART, held_through(&url, &url, restart, WINDOW, Duration::from_secs(20)).await);
    set(&t, S, LEADER, Outcome::NotApplicable("no leader"));
}

async fn etcd_row(t: Table, cluster: OwnEtcdCluster) {
    const S: usize = 2;
    let ports = cluster.client_ports.clone();
    // Its calls block (processes, `etcdctl`): run off the runtime's threads.
    let cluster = Arc::new(Mutex::new(cluster));
    let blocking = |f: fn(&mut OwnEtcdCluster) -> Option<usize>| {
        let c = cluster.clone();
        async move { tokio::task::spawn_blocking(move || f(&mut c.lock().unwrap())).await.unwrap() }
    };
    let eps = |order: &[usize]| order.iter().map(|i| format!("127.0.0.1:{}", ports[*i])).collect::<Vec<_>>().join(",");
    let opts = "timeout=3s&connect_timeout=2s";
    let url = format!("etcd://{}?{opts}", eps(&[0, 1, 2]));
    holder_processes(&t, S, &url, None, ETCD_MARGIN).await;
    // The holder on member 1 alone, through the relay; the waiter on members 2 and 3.
    let relay = Relay::start(local(ports[0])).await;
    let holder_url = format!("etcd://127.0.0.1:{}?{opts}", relay.port);
    let cut = async { relay.cut() };
    let waiter_url = format!("etcd://{}?{opts}", eps(&[1, 2]));
    set(&t, S, PARTITION, held_through(&holder_url, &waiter_url, cut, WINDOW, Duration::from_secs(20)).await);
    drop(relay);
    let restart = blocking(|c| {
        (0..3).for_each(|i| c.kill(i));
        c.restart_killed();
        None
    });
    // Bound: the members' start and election, and the lease etcd extends on a new leader.
    let restart = async {
        restart.await;
    };
    set(&t, S, RESTART, held_through(&url, &url, restart, WINDOW, Duration::from_secs(40)).await);
    let lead = bounded("an etcd leader", Duration::from_secs(20), async {
        loop {
            if let Some(l) = blocking(|c| c.leader()).await {
                return l;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    // Holder and waiter talk to the leader first: both must fail over.
    let mut order = vec![0, 1, 2];
    order.rotate_left(lead);
    let url = format!("etcd://{}?{opts}", eps(&order));
    let kill = async { cluster.lock().unwrap().kill(lead) };
    set(&t, S, LEADER, held_through(&url, &url, kill, WINDOW, Duration::from_secs(40)).await);
}

/// Bound for the SQL stores' waiter: a session cut inside a step's transaction keeps the
/// key's row locked until the server ends it (10 s), then the lease.
const SQL_BOUND: Duration = Duration::from_secs(30);

async fn postgres_row(t: Table, pg: OwnPostgres) {
    const S: usize = 3;
    let url = pg.url();
    let restart = async {
        pg.kill().await.unwrap();
        pg.start_again().await.unwrap();
    };
    one_server(&t, S, &url, restart, SQL_BOUND).await;
    set(&t, S, LEADER, Outcome::NotApplicable("one primary"));
}

async fn mysql_row(t: Table, mut db: OwnMariaDb) {
    const S: usize = 4;
    let url = db.url();
    let restart = async {
        db.kill();
        db.start_again().await.unwrap();
    };
    one_server(&t, S, &url, restart, SQL_BOUND).await;
    set(&t, S, LEADER, Outcome::NotApplicable("one primary"));
}

async fn sqlite_row(t: Table) {
    const S: usize = 5;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/faults.db", dir.path().display());
    holder_processes(&t, S, &url, None, Duration::ZERO).await;
    set(&t, S, RESTART, Outcome::NotApplicable("no server"));
    set(&t, S, PARTITION, Outcome::NotApplicable("no network"));
    set(&t, S, LEADER, Outcome::NotApplicable("no leader"));
}

async fn zk_row(t: Table, mut e: OwnZk) {
    const S: usize = 6;
    let url = format!("{}?session_timeout=6s&timeout=10s", e.url());
    holder_processes(&t, S, &url, None, Duration::ZERO).await;
    // The holder on member 1 alone, through the relay; the waiter on the ensemble.
    let relay = Relay::start(local(e.port(0))).await;
    let holder_url = format!("zk://127.0.0.1:{}?session_timeout=3s&timeout=2s", relay.port);
    let cut = async { relay.cut() };
    set(&t, S, PARTITION, held_through(&holder_url, &url, cut, WINDOW, Duration::from_secs(30)).await);
    drop(relay);
    let restart = async {
        for i in 0..3 {
            e.kill(i);
        }
        e.restart_killed().await.unwrap();
    };
    // Bound: three JVMs starting and electing on a loaded machine, then the lease.
    set(&t, S, RESTART, held_through(&url, &url, restart, WINDOW, Duration::from_secs(60)).await);
    let lead = e.leader().await.unwrap();
    let kill = async { e.kill(lead) };
    set(&t, S, LEADER, held_through(&url, &url, kill, WINDOW, Duration::from_secs(60)).await);
}

/// A cell of the table.
fn show(store: usize, fault: usize, o: &Option<Outcome>) -> String {
    match o {
        None => "not run".into(),
        Some(Outcome::NotApplicable(why)) => format!("n/a ({why})"),
        Some(Outcome::Failed(_)) => "**FAILED**".into(),
        Some(Outcome::Measured(c)) => {
            let mark = if c.overlaps > 0 && !overlap_claimed(store, fault) { "†" } else { "" };
            let mut s =
                format!("{}/{}{mark}/{} {:.2} s", c.grants, c.overlaps, c.inversions, c.next_grant.as_secs_f64());
            if c.kept {
                s.push_str(" (kept)");
            }
            match c.stale_write_taken {
                Some(false) => s.push_str(", stale write refused"),
                Some(true) => s.push_str(", **stale write taken**"),
                None => {}
            }
            s
        }
    }
}

/// The table in Markdown, its legend, and the broken claims.
fn render(table: &[Vec<Option<Outcome>>]) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut broken = Vec::new();
    writeln!(out, "| store | {} |", FAULTS.join(" | ")).unwrap();
    writeln!(out, "|---|{}", "---|".repeat(FAULTS.len())).unwrap();
    for (s, row) in table.iter().enumerate() {
        let cells: Vec<String> = row.iter().enumerate().map(|(f, o)| show(s, f, o)).collect();
        writeln!(out, "| {} | {} |", STORES[s], cells.join(" | ")).unwrap();
        for (f, o) in row.iter().enumerate() {
            let at = format!("{} × {}", STORES[s], FAULTS[f]);
            match o {
                None => broken.push(format!("{at}: not run")),
                Some(Outcome::Failed(e)) => broken.push(format!("{at}: failed: {e}")),
                Some(Outcome::NotApplicable(_)) => {}
                Some(Outcome::Measured(c)) => {
                    if c.overlaps > 0 && overlap_claimed(s, f) {
                        broken.push(format!("{at}: {} overlap(s)", c.overlaps));
                    }
                    if c.inversions > 0 {
                        broken.push(format!("{at}: {} token inversion(s)", c.inversions));
                    }
                    if c.stale_write_taken == Some(true) {
                        broken.push(format!("{at}: the paused holder's stale fenced write was taken"));
                    }
                    if (f == KILL || f == STOP) && c.next_grant > CHILD_LEASE + SLACK {
                        broken.push(format!("{at}: next grant only after {:?}", c.next_grant));
                    }
                }
            }
        }
    }
    let window = WINDOW.as_secs();
    write!(
        out,
        "\nCells: grants/overlaps/token inversions, then the time from the fault's start to the waiter's grant. \
         (kept): the holder kept the lock through the fault; it released it {window} s after the fault \
         ended, and the waiter's grant followed (that time is the fault's length + {window} s). \
         †: an overlap `docs/guarantees.md` does not rule out (a Redis restarted without persistence, a \
         Sentinel failover: asynchronous replication). n/a: no leader (independent masters, or one \
         primary), no server or no network (a file on this machine).\n"
    )
    .unwrap();
    (out, broken)
}

type Row = Pin<Box<dyn Future<Output = ()> + Send>>;

/// `rows` one after another, each in a task of its own: a failed check fails its row's
/// remaining cells, not the table.
async fn run_rows(table: Table, rows: Vec<(&str, Row)>) {
    for (store, row) in rows {
        let s = STORES.iter().position(|&n| n == store).expect("a store of STORES");
        let started = Instant::now();
        if let Err(e) = tokio::spawn(row).await {
            let msg = match e.try_into_panic() {
                Ok(p) => p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            for cell in table.lock().unwrap()[s].iter_mut().filter(|c| c.is_none()) {
                *cell = Some(Outcome::Failed(msg.clone()));
            }
        }
        eprintln!("{store} done in {:?}", started.elapsed());
    }
}

/// Every store through every fault (two stores at a time, each store's faults one after
/// another), then the table; fails on any broken claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fault_table() {
    if !tools_present(&["redis-server", "etcd", "etcdctl", "java"]) {
        return;
    }
    let t0 = Instant::now();
    let table: Table = Arc::new(Mutex::new(vec![vec![None; FAULTS.len()]; STORES.len()]));
    // The servers start side by side.
    let (pg, db, zk, etcd) = tokio::join!(
        OwnPostgres::start(),
        OwnMariaDb::start(),
        OwnZk::start(),
        tokio::task::spawn_blocking(OwnEtcdCluster::start)
    );
    let (pg, db, zk, etcd) = (pg.unwrap(), db.unwrap(), zk.unwrap(), etcd.unwrap());
    let redis = OwnRedis::start().await.unwrap();
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(OwnRedis::start().await.unwrap());
    }
    eprintln!("servers up after {:?}", t0.elapsed());
    // Two lanes side by side, each a store at a time: a scenario mostly waits on leases,
    // restarts and elections, on servers of its own. Rows took (s, 2-core machine, one at a
    // time): Redis 25, Redlock 16, etcd 25, PostgreSQL 16, MySQL 16, SQLite 4, ZooKeeper 23;
    // so each lane is about half of the time.
    let t = || table.clone();
    let lane_a: Vec<(&str, Row)> = vec![
        ("redis", Box::pin(redis_row(t(), redis))),
        ("zk", Box::pin(zk_row(t(), zk))),
        ("mysql", Box::pin(mysql_row(t(), db))),
    ];
    let lane_b: Vec<(&str, Row)> = vec![
        ("etcd", Box::pin(etcd_row(t(), etcd))),
        ("redlock", Box::pin(redlock_row(t(), nodes))),
        ("postgres", Box::pin(postgres_row(t(), pg))),
        ("sqlite", Box::pin(sqlite_row(t()))),
    ];
    tokio::join!(run_rows(t(), lane_a), run_rows(t(), lane_b));
    let (text, broken) = render(&table.lock().unwrap());
    let text = format!("{text}\n(measured in {:.0} s)\n", t0.elapsed().as_secs_f64());
    // Past the harness's capture: the table shows on a pass too.
    let _ = std::io::stderr().write_all(format!("\n{text}").as_bytes());
    let _ = std::fs::write(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("faults-table.md"), &text);
    assert!(broken.is_empty(), "broken claims:\n{}", broken.join("\n"));
}

/// The child side of the holder-process faults, run only by them (ignored, so that it never
/// counts as a passing test on its own).
#[tokio::test]
#[ignore = "helper process of fault_table"]
async fn child_holder() {
    crash::child_holder().await;
}
