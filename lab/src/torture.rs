//! The torture harness: every scheme through the same scripted faults, in the same
//! order, each fault observing the properties it can break. A property is ✓ when every
//! fault that applies left it intact, ✗ with the first fault that broke it.
//!
//! Determinism: faults between steps are hooks and gates (`hooks`), never sleeps. Only
//! expiry is waited for, and then by polling for the successor's grant (bounded), never
//! by sleeping a guessed time — except where the scheme judges expiry by the client's
//! clock (`getset-timestamp`'s takeover race sleeps past the timestamp it must see expired).
//! Holders that must *not* lose their lease hold it for [`LONG_TTL`], far beyond anything
//! a loaded machine delays a scenario by; holders meant to lose it hold [`Config::ttl`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use crate::clock::Clock;
use crate::fence::FencedResource;
use crate::hooks::{Hooks, Point};
use crate::lab_lock::LabLock;
use crate::matrix::{Cell, Flaw, Matrix, Property, Row};
use crate::raw::Raw;
use crate::scheme::{Database, Scheme};
use crate::sql::{self, Databases};
use baton::StoreUrl;
use baton::{Error, ErrorKind, Result};
use baton_servers::{OwnMariaDb, OwnPostgres, own_mariadb_available, own_postgres_available};
use baton_servers::{OwnRedis, faketime_available, faketime_lib, redis_server_available};
use baton_servers::{OwnZk, zookeeper_available};

/// The lease of holders that must keep theirs through a scenario.
const LONG_TTL: Duration = Duration::from_secs(30);
/// How far `getset-timestamp`'s second client's clock runs ahead.
const CLOCK_JUMP: Duration = Duration::from_secs(60);
/// How far a server's wall clock steps forward in the server-clock fault: past
/// [`LONG_TTL`], so that every lease on it ends at once.
const SERVER_CLOCK_STEP: Duration = Duration::from_secs(60);
/// How long a grant may take with one Redlock node frozen: the node timeout (1 s for the
/// lab's leases) bounds the frozen node's share; 10 s leaves room for a loaded machine.
const FROZEN_NODE_BOUND: Duration = Duration::from_secs(10);
/// Independent nodes behind the `redlock` row.
const REDLOCK_NODES: usize = 3;
/// Clients racing for one free lock, and how many times.
const RACERS: usize = 4;
const RACE_ROUNDS: usize = 3;

/// What to run, and where.
#[derive(Debug, Clone)]
pub struct Config {
    /// The Redis server of the single-node faults; `None`: a `redis-server` of the lab's
    /// own. Faults that kill, restart or fail over a server always use the lab's own.
    pub url: Option<String>,
    /// The lease of holders that are paused or crashed on purpose (short: the run waits
    /// it out several times).
    pub ttl: Duration,
    /// The rows to run, in order.
    pub schemes: Vec<Scheme>,
    /// The PostgreSQL server of the `postgres-*` rows (`postgres://…`, without `?scheme=`);
    /// `None`: those rows are not run. Lock names are the run's own, their rows deleted
    /// afterwards.
    pub postgres_url: Option<String>,
    /// The MySQL or MariaDB server of the `mysql-*` rows (`mysql://…`), as `postgres_url`.
    pub mysql_url: Option<String>,
    /// The `baton` CLI, for the fault that needs a second process on this machine (its
    /// wall clock stepped under libfaketime: the SQLite rows); `None`: that fault is not
    /// run. `baton lab` passes itself.
    pub baton_bin: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            url: None,
            ttl: Duration::from_millis(300),
            schemes: Scheme::ALL.to_vec(),
            postgres_url: None,
            mysql_url: None,
            baton_bin: None,
        }
    }
}

/// Runs every scheme of `config` through every fault and returns the matrix.
///
/// # Errors
/// `Unsupported` when there is neither a `--url` nor `redis-server` on `PATH`;
/// `InvalidArgument` for a zero ttl, a URL that is not `redis://`/`rediss://`, or an SQL
/// URL that is not its database's (or names a `?scheme=`);
/// `Connection`/`Backend` when a server fails outside the faults the lab causes.
pub async fn run(config: &Config) -> Result<Matrix> {
    if config.ttl.is_zero() || config.ttl > Duration::from_secs(10) {
        return Err(Error::new(ErrorKind::InvalidArgument, "lab: the ttl must be between 1 ms and 10 s"));
    }
    let mut databases = Databases::new(config.postgres_url.as_ref(), config.mysql_url.as_ref())?;
    let mut own_sql = OwnSql::default();
    let own_servers = redis_server_available();
    let (_own, url, server) = match &config.url {
        Some(url) => {
            let parsed = StoreUrl::parse(url)?;
            if !matches!(parsed.scheme(), "redis" | "rediss") {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("lab: {parsed} is not a single Redis server (redis:// or rediss://)"),
                ));
            }
            (None, url.clone(), parsed.to_string())
        }
        None if own_servers => {
            let own = OwnRedis::start().await?;
            let url = own.url();
            (Some(own), url.clone(), format!("{url} (the lab's own redis-server)"))
        }
        None => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "lab: needs redis-server on PATH (the lab starts its own servers) or a Redis URL (--url)",
            ));
        }
    };
    let run_id = format!("baton-lab:{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let mut rows = Vec::new();
    for &scheme in &config.schemes {
        let lab = Lab {
            scheme,
            urls: vec![url.clone()],
            resource: url.clone(),
            run_id: run_id.clone(),
            ttl: config.ttl,
            baton_bin: config.baton_bin.clone(),
        };
        let row = match scheme {
            Scheme::Redlock if !own_servers => {
                not_run(scheme, "needs redis-server on PATH (its nodes are the lab's own)")
            }
            Scheme::Redlock => redlock_row(lab).await?,
            Scheme::Zookeeper if !zookeeper_available() => not_run(
                scheme,
                "needs java and Debian's zookeeper package (/usr/share/java/zookeeper.jar): its ensemble is the lab's own",
            ),
            Scheme::Zookeeper => {
                let row = zk_row(lab).await;
                clean(&url, &run_id).await;
                row?
            }
            _ if scheme.sql().is_some() => {
                let Some((db, _)) = scheme.sql() else { unreachable!() };
                match databases.base(db) {
                    Err(reason) => not_run(scheme, reason),
                    Ok(base) => {
                        databases.mark_used(db);
                        let row = sql_row(lab, &base, &mut own_sql).await;
                        clean(&url, &run_id).await;
                        sql::clean(db, &base, &run_id).await;
                        row?
                    }
                }
            }
            _ => {
                let row = single_node_row(&lab, own_servers).await;
                clean(&url, &run_id).await;
                row?
            }
        };
        rows.push(row);
    }
    Ok(Matrix {
        server,
        ttl_ms: u64::try_from(config.ttl.as_millis()).unwrap_or(u64::MAX),
        databases: databases.used(),
        rows,
    })
}

fn not_run(scheme: Scheme, reason: &str) -> Row {
    Row { scheme, cells: std::array::from_fn(|_| Cell::NotRun { reason: reason.to_owned() }) }
}

async fn single_node_row(lab: &Lab, own_servers: bool) -> Result<Row> {
    let mut f = Findings::default();
    safety_faults(lab, &mut f).await?;
    if own_servers {
        server_clock_step(lab, 1, &mut f).await?;
        promoted_replica(lab.scheme, &lab.name("failover"), &mut f).await?;
        restart_without_persistence(lab.scheme, &lab.name("restart"), &mut f).await?;
    } else {
        f.not_run(Property::SurvivesNodeLoss, "needs redis-server on PATH (the lab kills and restarts its own)");
    }
    Ok(f.row(lab.scheme))
}

/// [`REDLOCK_NODES`] fresh servers of the lab's own, for a Redlock fault.
async fn redlock_nodes() -> Result<Vec<OwnRedis>> {
    let mut nodes = Vec::with_capacity(REDLOCK_NODES);
    for _ in 0..REDLOCK_NODES {
        nodes.push(OwnRedis::start().await?);
    }
    Ok(nodes)
}

async fn redlock_row(mut lab: Lab) -> Result<Row> {
    let nodes = redlock_nodes().await?;
    lab.urls = nodes.iter().map(OwnRedis::url).collect();
    let mut f = Findings::default();
    safety_faults(&lab, &mut f).await?;
    drop(nodes);
    server_clock_step(&lab, REDLOCK_NODES, &mut f).await?;
    redlock_node_loss(&lab, &mut f).await?;
    redlock_frozen_node(&lab, &mut f).await?;
    Ok(f.row(Scheme::Redlock))
}

/// An SQL row: baton's lock on `base` with the row's `?scheme=`, through the same safety
/// faults (its fenced resource on the lab's Redis), then the loss of its one server, on a
/// server of the lab's own ([`server_loss`]).
async fn sql_row(mut lab: Lab, base: &str, own: &mut OwnSql) -> Result<Row> {
    lab.urls = vec![sql::row_url(base, lab.scheme)];
    let mut f = Findings::default();
    safety_faults(&lab, &mut f).await?;
    match lab.scheme.sql() {
        Some((Database::Sqlite, _)) => {
            machine_clock_step(&lab, &mut f).await?;
            f.not_run(
                Property::SurvivesNodeLoss,
                "an embedded file, no server to lose: the lock lives and dies with its one machine",
            );
        }
        Some((db, _)) => match own.server(db).await {
            Err(reason) => f.not_run(Property::SurvivesNodeLoss, &reason),
            Ok(server) => server_loss(&lab, server, &mut f).await?,
        },
        None => {}
    }
    Ok(f.row(lab.scheme))
}

/// The database servers of the lab's own, started on first use (one per database for the
/// whole run: each row kills and restarts it). A server that does not start makes the
/// node-loss cells of its rows `–` with the error, once, instead of failing the run.
#[derive(Default)]
struct OwnSql {
    postgres: Option<std::result::Result<OwnPostgres, String>>,
    mariadb: Option<std::result::Result<OwnMariaDb, String>>,
}

/// One own server, whichever database.
enum OwnServer<'a> {
    Postgres(&'a OwnPostgres),
    MariaDb(&'a mut OwnMariaDb),
}

/// A start failure as one line of a reason.
fn did_not_start(what: &str, e: &Error) -> String {
    format!("the lab's own {what} did not start: {}", e.to_string().replace('\n', "; "))
}

impl OwnSql {
    /// The server of `db`, or why there is none.
    async fn server(&mut self, db: Database) -> std::result::Result<OwnServer<'_>, String> {
        match db {
            Database::Postgres if !own_postgres_available() => Err(
                "needs PostgreSQL's server binaries (/usr/lib/postgresql/*/bin; runuser as root): the lab kills its own server"
                    .into(),
            ),
            Database::Postgres => {
                if self.postgres.is_none() {
                    self.postgres = Some(OwnPostgres::start().await.map_err(|e| did_not_start("PostgreSQL", &e)));
                }
                match self.postgres.as_ref() {
                    Some(Ok(s)) => Ok(OwnServer::Postgres(s)),
                    Some(Err(reason)) => Err(reason.clone()),
                    None => Err(String::new()),
                }
            }
            Database::Mysql if !own_mariadb_available() => {
                Err("needs mariadbd and mariadb-install-db on PATH: the lab kills its own server".into())
            }
            Database::Mysql => {
                if self.mariadb.is_none() {
                    self.mariadb = Some(OwnMariaDb::start().await.map_err(|e| did_not_start("MariaDB", &e)));
                }
                match self.mariadb.as_mut() {
                    Some(Ok(s)) => Ok(OwnServer::MariaDb(s)),
                    Some(Err(reason)) => Err(reason.clone()),
                    None => Err(String::new()),
                }
            }
            Database::Sqlite => Err("no server".into()),
        }
    }
}

impl OwnServer<'_> {
    fn url(&self) -> String {
        match self {
            OwnServer::Postgres(s) => s.url(),
            OwnServer::MariaDb(s) => s.url(),
        }
    }

    async fn kill(&mut self) -> Result<()> {
        match self {
            OwnServer::Postgres(s) => s.kill().await,
            OwnServer::MariaDb(s) => {
                s.kill();
                Ok(())
            }
        }
    }

    async fn start_again(&mut self) -> Result<()> {
        match self {
            OwnServer::Postgres(s) => s.start_again().await,
            OwnServer::MariaDb(s) => s.start_again().await,
        }
    }
}

/// How long a client tries the lock while the one server is down. Its pool retries a
/// refused connect until its own 10 s acquire timeout; with the server dead nothing can
/// grant, so a short bound only shortens the run and can never turn the verdict.
const DOWN_ATTEMPT: Duration = Duration::from_secs(1);
/// A's lease in the server-loss fault: far beyond a kill and a restart on a loaded machine
/// (each start is bounded by 30 s), so a row scheme's hold is still live when B asks. The
/// server and the name are the fault's own: nothing else waits on it.
const SERVER_LOSS_TTL: Duration = Duration::from_secs(300);

/// The one database server is killed while A holds the lock (a lease far longer than the
/// fault, [`SERVER_LOSS_TTL`]), then started again:
///
/// - while it is down, a client tries (for [`DOWN_ATTEMPT`]): nobody can be granted anything — one server is one
///   node, and losing it stops the service (✗ `UnavailableAfterNodeLoss` for every
///   scheme, which the schemes built on rows show);
/// - once it is back, B asks at once. The row schemes (`table`, `optimistic`, baton's own
///   state rows) keep the hold in a committed row: B is refused. The session schemes
///   (`for-update`, `advisory`) hold by a session, which died with the server: B is
///   granted while A, not told before its next renewal, still counts on its lease —
///   the restart forgot the hold (✗ `RestartForgotLock`, reported first). Their tokens come
///   from the counter table, which survives, so B's token is larger (checked here: else
///   ✗ fenced) and a fenced resource still refuses A; with a watchdog lease the lost
///   signal reaches A at its next renewal (core/tests/sql/schemes/faults.rs checks it; the
///   lab's holders hold a fixed ttl, renewed by nobody).
async fn server_loss(lab: &Lab, mut server: OwnServer<'_>, f: &mut Findings) -> Result<()> {
    let url = sql::row_url(&server.url(), lab.scheme);
    let name = lab.name("server-loss");
    let open = || lab.scheme.open(std::slice::from_ref(&url), &name, Hooks::none(), Arc::new(Clock::system()));
    let mut a = open().await?;
    must_acquire(&mut a, SERVER_LOSS_TTL, lab.scheme).await?;
    server.kill().await?;
    let down = tokio::time::timeout(DOWN_ATTEMPT, async {
        let mut b = open().await?;
        let granted = b.acquire(LONG_TTL).await;
        b.crash();
        granted
    })
    .await;
    let unavailable = !matches!(down, Ok(Ok(true)));
    server.start_again().await?;
    let mut b = open().await?;
    let granted = b.acquire(LONG_TTL).await?;
    if granted {
        if b.token() <= a.token() {
            // The counter table outlives a restart: tokens must keep growing.
            f.broke(
                Property::Fenced,
                Flaw::StaleWriteAccepted,
                "B, granted after the server's restart, got a token no larger than A's",
            );
        }
        f.broke(
            Property::SurvivesNodeLoss,
            Flaw::RestartForgotLock,
            "the server was killed and restarted: A's session, and its hold, died with it; B was granted at once \
             while A still counted on its lease",
        );
        b.release().await?;
    }
    if unavailable {
        let outlived = if granted { "" } else { " (A's hold outlived the restart: B was refused after it)" };
        f.broke(
            Property::SurvivesNodeLoss,
            Flaw::UnavailableAfterNodeLoss,
            format!("the one server was killed: nobody could take the lock until it came back{outlived}"),
        );
    } else {
        f.kept(Property::SurvivesNodeLoss);
    }
    a.crash();
    Ok(())
}

/// The faults that need no server to die, in the order their verdicts are reported.
async fn safety_faults(lab: &Lab, f: &mut Findings) -> Result<()> {
    let tokens = carries_tokens(lab).await?;
    race(lab, f).await?;
    takeover_race(lab, f).await?;
    crash_between_steps(lab, f).await?;
    let expires = crash_holding(lab, f).await?;
    clock_jump(lab, f).await?;
    if expires {
        paused_holder(lab, f).await?;
        check_then_delete(lab, f).await?;
    }
    retried_release(lab, f).await?;
    if !tokens {
        // Shown by the paused holder when its lock expires; said plainly when it never does.
        f.broke(
            Property::Fenced,
            Flaw::NoToken,
            "grants carry no token: a resource cannot tell a stale holder's write from the holder's",
        );
    }
    Ok(())
}

/// One scheme on its server(s) for one run.
struct Lab {
    scheme: Scheme,
    urls: Vec<String>,
    /// The Redis server of the fenced resource (the lock's own store for Redis schemes).
    resource: String,
    run_id: String,
    ttl: Duration,
    baton_bin: Option<PathBuf>,
}

impl Lab {
    /// A lock name of this run, scheme and fault.
    fn name(&self, fault: &str) -> String {
        format!("{}:{}:{fault}", self.run_id, self.scheme)
    }

    async fn client(&self, name: &str, hooks: Hooks) -> Result<Box<dyn LabLock>> {
        self.scheme.open(&self.urls, name, hooks, Arc::new(Clock::system())).await
    }

    /// How long a successor may poll for a lock held for `ttl` by a holder that went
    /// silent: several ttls and five seconds more, for a loaded 2-core CI machine.
    fn expiry_limit(ttl: Duration) -> Duration {
        ttl * 4 + Duration::from_secs(5)
    }

    /// Polls `lock` until it is granted (`true`) or the expiry limit of a `ttl` hold
    /// passed (`false`).
    async fn acquire_within(&self, lock: &mut Box<dyn LabLock>, ttl: Duration) -> Result<bool> {
        let deadline = tokio::time::Instant::now() + Lab::expiry_limit(ttl);
        loop {
            if lock.acquire(LONG_TTL).await? {
                return Ok(true);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `PTTL` of the key `name` on the first server, for reasons (`?` when unreadable;
    /// `None` for the stores whose lock is not a Redis key).
    async fn pttl(&self, name: &str) -> Option<String> {
        let url = self.urls.first().filter(|u| u.starts_with("redis://") || u.starts_with("rediss://"))?;
        let Ok(mut raw) = Raw::open(url, name).await else { return Some("?".into()) };
        Some(raw.query::<i64>(&raw.cmd("PTTL")).await.map_or_else(|_| "?".into(), |t| t.to_string()))
    }
}

/// The first verdict per property.
#[derive(Default)]
struct Findings {
    broken: [Option<Cell>; 5],
    kept: [bool; 5],
    not_run: [Option<String>; 5],
}

impl Findings {
    fn kept(&mut self, p: Property) {
        self.kept[p as usize] = true;
    }

    fn broke(&mut self, p: Property, flaw: Flaw, reason: impl Into<String>) {
        let slot = &mut self.broken[p as usize];
        if slot.is_none() {
            *slot = Some(Cell::Broken { flaw, reason: reason.into() });
        }
    }

    fn not_run(&mut self, p: Property, reason: &str) {
        self.not_run[p as usize] = Some(reason.to_owned());
    }

    /// Both properties a successor's lost lock breaks: the release that freed it, and the
    /// overlap with the client granted next.
    fn freed_successor(&mut self, flaw: Flaw, how: &str) {
        self.broke(Property::NoForeignUnlock, flaw, format!("{how} deleted B's lock"));
        self.broke(Property::MutualExclusion, flaw, format!("{how} freed B's lock: C was granted while B held it"));
    }

    fn row(self, scheme: Scheme) -> Row {
        let Findings { broken, kept, not_run } = self;
        let mut broken = broken.into_iter();
        let mut not_run = not_run.into_iter();
        Row {
            scheme,
            cells: std::array::from_fn(|i| {
                let (b, n) = (broken.next().flatten(), not_run.next().flatten());
                match (b, kept[i], n) {
                    (Some(b), _, _) => b,
                    (None, true, _) => Cell::Kept,
                    (None, false, n) => Cell::NotRun { reason: n.unwrap_or_else(|| "no fault applies".into()) },
                }
            }),
        }
    }
}

/// Whether a grant of the scheme carries a fencing token.
async fn carries_tokens(lab: &Lab) -> Result<bool> {
    let mut a = lab.client(&lab.name("token"), Hooks::none()).await?;
    must_acquire(&mut a, LONG_TTL, lab.scheme).await?;
    let tokens = a.token().is_some();
    a.release().await?;
    Ok(tokens)
}

/// Clients racing for a free lock: at most one is granted it.
async fn race(lab: &Lab, f: &mut Findings) -> Result<()> {
    for round in 0..RACE_ROUNDS {
        let name = lab.name(&format!("race{round}"));
        let mut racers = Vec::new();
        for _ in 0..RACERS {
            racers.push(lab.client(&name, Hooks::none()).await?);
        }
        let results = join_all(racers.iter_mut().map(|c| c.acquire(LONG_TTL))).await;
        let outcomes = racers.into_iter().zip(results).collect();
        winners(outcomes, f, &format!("of {RACERS} clients racing for the free lock")).await?;
    }
    f.kept(Property::MutualExclusion);
    Ok(())
}

/// Two clients read the same expired timestamp, then both `GETSET` (the window of
/// the takeover): only the one that sees the timestamp it read back wins.
async fn takeover_race(lab: &Lab, f: &mut Findings) -> Result<()> {
    if !lab.scheme.points().contains(&Point::AfterGet) {
        return Ok(());
    }
    let name = lab.name("takeover");
    let mut dead = lab.client(&name, Hooks::none()).await?;
    must_acquire(&mut dead, lab.ttl, lab.scheme).await?;
    dead.crash();
    // The timestamp is judged by the client's clock: nothing on the server to poll.
    tokio::time::sleep(lab.ttl + Duration::from_millis(50)).await;
    let mut takers = Vec::new();
    for _ in 0..2 {
        let (hooks, gate) = Hooks::pause_at(Point::AfterGet);
        let mut c = lab.client(&name, hooks).await?;
        let task = tokio::spawn(async move {
            let r = c.acquire(LONG_TTL).await;
            (c, r)
        });
        reach(&gate, lab.scheme).await?;
        takers.push((task, gate));
    }
    let mut outcomes = Vec::new();
    for (task, gate) in takers {
        gate.open();
        outcomes.push(task.await.map_err(|e| Error::new(ErrorKind::Backend, format!("lab: a taker failed: {e}")))?);
    }
    winners(outcomes, f, "of 2 clients taking over the same expired lock").await
}

/// Counts (and releases) the granted clients of a race: more than one breaks mutual exclusion.
async fn winners(outcomes: Vec<(Box<dyn LabLock>, Result<bool>)>, f: &mut Findings, who: &str) -> Result<()> {
    let mut granted = 0;
    for (mut c, r) in outcomes {
        if r? {
            granted += 1;
            c.release().await?;
        }
    }
    if granted > 1 {
        f.broke(Property::MutualExclusion, Flaw::RaceDoubleGrant, format!("{granted} {who} were granted it"));
    }
    Ok(())
}

/// A grant of a free lock, which must come. A few tries: on a loaded machine a
/// Redlock round with a short ttl can run out of validity (or a node out of its
/// timeout) before a quorum answers; anything else is a broken setup.
async fn must_acquire(lock: &mut Box<dyn LabLock>, ttl: Duration, scheme: Scheme) -> Result<()> {
    let mut last = None;
    for _ in 0..5 {
        match lock.acquire(ttl).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) if matches!(e.kind(), ErrorKind::Connection | ErrorKind::Timeout) => last = Some(e),
            Err(e) => return Err(e),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(last
        .unwrap_or_else(|| Error::new(ErrorKind::Backend, format!("lab: {scheme}: a free lock was refused 5 times"))))
}

/// Waits (bounded) until a paused holder stands at its gate.
async fn reach(gate: &crate::hooks::Gate, scheme: Scheme) -> Result<()> {
    tokio::time::timeout(Duration::from_secs(10), gate.reached())
        .await
        .map_err(|_| Error::new(ErrorKind::Backend, format!("lab: {scheme}: the holder never reached its fault point")))
}

/// The holder dies between two steps of its acquire: the lock must still come free.
async fn crash_between_steps(lab: &Lab, f: &mut Findings) -> Result<()> {
    // Only the points a free lock's acquire passes (the takeover point needs a held one).
    for &point in lab.scheme.points().iter().filter(|p| **p == Point::AfterSetnx) {
        let name = lab.name("crash-between");
        let mut a = lab.client(&name, Hooks::crash_at(point)).await?;
        let crashed = a.acquire(lab.ttl).await;
        if crashed.is_ok() {
            return Err(Error::new(
                ErrorKind::Backend,
                format!("lab: {}: the crash at {point} did not happen", lab.scheme),
            ));
        }
        a.crash();
        let how = format!("the holder crashed {point}: the key was left");
        successor_granted(lab, &name, f, Flaw::CrashBetweenSteps, &how).await?;
    }
    Ok(())
}

/// After the holder of `name` crashed: a second client polls for the lock. Returns
/// whether it got it; if not, the lock deadlocked (`how` the key came to be kept).
async fn successor_granted(lab: &Lab, name: &str, f: &mut Findings, flaw: Flaw, how: &str) -> Result<bool> {
    let mut b = lab.client(name, Hooks::none()).await?;
    if lab.acquire_within(&mut b, lab.ttl).await? {
        b.release().await?;
        f.kept(Property::NoDeadlock);
        return Ok(true);
    }
    let (pttl, limit) = (lab.pttl(name).await, Lab::expiry_limit(lab.ttl));
    let pttl = pttl.map(|t| format!(" (PTTL {t})")).unwrap_or_default();
    f.broke(Property::NoDeadlock, flaw, format!("{how} without expiry{pttl}, nobody got it in {limit:?}"));
    Ok(false)
}

/// The holder dies holding the lock: the lock must come free. Returns whether it did
/// (the faults that wait for a successor are pointless on a lock that never expires).
async fn crash_holding(lab: &Lab, f: &mut Findings) -> Result<bool> {
    let name = lab.name("crash");
    let mut a = lab.client(&name, Hooks::none()).await?;
    must_acquire(&mut a, lab.ttl, lab.scheme).await?;
    a.crash();
    successor_granted(lab, &name, f, Flaw::NoExpiry, "the holder crashed holding the lock: the key is kept").await
}

/// A client whose clock runs ahead must not take over a live lock.
async fn clock_jump(lab: &Lab, f: &mut Findings) -> Result<()> {
    if !lab.scheme.uses_client_clock() {
        return Ok(());
    }
    let name = lab.name("clock");
    let mut a = lab.client(&name, Hooks::none()).await?;
    must_acquire(&mut a, LONG_TTL, lab.scheme).await?;
    let ahead = Arc::new(Clock::system());
    ahead.jump(i64::try_from(CLOCK_JUMP.as_millis()).unwrap_or(i64::MAX));
    let mut b = lab.scheme.open(&lab.urls, &name, Hooks::none(), ahead).await?;
    if b.acquire(LONG_TTL).await? {
        f.broke(
            Property::MutualExclusion,
            Flaw::ClockJumpTakeover,
            format!(
                "B's clock ran {}s ahead: it judged A's live lock ({}s left) expired and took it over",
                CLOCK_JUMP.as_secs(),
                LONG_TTL.as_secs()
            ),
        );
        b.release().await?;
    }
    a.release().await?;
    Ok(())
}

/// A holder paused past its lease (a GC pause): its successor takes the lock; the paused
/// holder wakes, writes to the fenced resource, and releases late.
async fn paused_holder(lab: &Lab, f: &mut Findings) -> Result<()> {
    let name = lab.name("paused");
    let mut a = lab.client(&name, Hooks::none()).await?;
    must_acquire(&mut a, lab.ttl, lab.scheme).await?;
    let token_a = a.token();
    // A is paused from here: it sends nothing while B polls for the lock.
    let mut b = lab.client(&name, Hooks::none()).await?;
    if !lab.acquire_within(&mut b, lab.ttl).await? {
        return Err(Error::new(ErrorKind::Backend, format!("lab: {}: a lapsed lease never came free", lab.scheme)));
    }
    let token_b = b.token();
    let mut resource = FencedResource::open(&lab.resource, &format!("{name}:resource")).await?;
    resource.write(token_b, "B").await?;
    let stale_taken = resource.write(token_a, "A (paused)").await?;
    match (token_a, token_b) {
        (Some(ta), Some(tb)) if stale_taken => f.broke(
            Property::Fenced,
            Flaw::StaleWriteAccepted,
            format!("paused A's write with token {ta} was accepted after B's with token {tb}"),
        ),
        (Some(_), Some(_)) => f.kept(Property::Fenced),
        _ => f.broke(
            Property::Fenced,
            Flaw::NoToken,
            "grants carry no token: paused A's late write landed on top of B's",
        ),
    }
    a.release().await?;
    successor_kept(lab, &name, b, f, Flaw::LateReleaseFreedSuccessor, "A, paused past its ttl, released late and").await
}

/// The holder reads its own value, then is delayed past its ttl before its delete (a GC
/// pause or a slow network between the owner check and the `DEL`).
async fn check_then_delete(lab: &Lab, f: &mut Findings) -> Result<()> {
    if !lab.scheme.points().contains(&Point::BeforeDelete) {
        return Ok(());
    }
    // A's lease must outlast the way from its grant to its GET (else the GET finds the
    // key gone, and no window opens): 1 s, doubled while a loaded machine was slower.
    let mut ttl = lab.ttl.max(Duration::from_secs(1));
    for attempt in 0..3 {
        let name = lab.name(&format!("check-then-delete{attempt}"));
        let (hooks, gate) = Hooks::pause_at(Point::BeforeDelete);
        let mut a = lab.client(&name, hooks).await?;
        must_acquire(&mut a, ttl, lab.scheme).await?;
        let mut release = tokio::spawn(async move { a.release().await });
        tokio::select! {
            () = gate.reached() => {}
            done = &mut release => {
                done.map_err(|e| Error::new(ErrorKind::Backend, format!("lab: the release failed: {e}")))??;
                ttl *= 2;
                continue;
            }
        }
        // A stands between its GET (its own value) and its DEL until its lease is gone
        // and B holds the lock.
        let mut b = lab.client(&name, Hooks::none()).await?;
        let b_granted = lab.acquire_within(&mut b, ttl).await;
        gate.open();
        release.await.map_err(|e| Error::new(ErrorKind::Backend, format!("lab: the paused release failed: {e}")))??;
        if !b_granted? {
            return Err(Error::new(ErrorKind::Backend, format!("lab: {}: a lapsed lease never came free", lab.scheme)));
        }
        let how = "A read its own value, was delayed past its ttl, and its DEL";
        return successor_kept(lab, &name, b, f, Flaw::CheckThenDeleteWindow, how).await;
    }
    Err(Error::new(ErrorKind::Backend, format!("lab: {}: the holder's GET never found its own value", lab.scheme)))
}

/// A release sent twice (a retry after a lost reply) lands after the next grant.
async fn retried_release(lab: &Lab, f: &mut Findings) -> Result<()> {
    let name = lab.name("retried");
    let mut a = lab.client(&name, Hooks::none()).await?;
    let mut b = lab.client(&name, Hooks::none()).await?;
    must_acquire(&mut a, LONG_TTL, lab.scheme).await?;
    a.release().await?;
    if !b.acquire(LONG_TTL).await? {
        return Err(Error::new(ErrorKind::Backend, format!("lab: {}: a released lock was refused", lab.scheme)));
    }
    a.release().await?;
    successor_kept(lab, &name, b, f, Flaw::RetriedReleaseFreedSuccessor, "A's retried release (a bare DEL)").await
}

/// After A's stray release: does B still hold the lock, or is a third client granted it?
async fn successor_kept(
    lab: &Lab,
    name: &str,
    mut b: Box<dyn LabLock>,
    f: &mut Findings,
    flaw: Flaw,
    how: &str,
) -> Result<()> {
    let mut c = lab.client(name, Hooks::none()).await?;
    if c.acquire(LONG_TTL).await? {
        f.freed_successor(flaw, how);
        c.release().await?;
    } else {
        f.kept(Property::NoForeignUnlock);
    }
    b.release().await?;
    Ok(())
}

/// A failover: the master dies before A's grant reached its replica, and the
/// promoted replica serves B. (The replica is promoted just before A's grant, so that the
/// grant certainly never reaches it: the same end state, made deterministic.)
async fn promoted_replica(scheme: Scheme, name: &str, f: &mut Findings) -> Result<()> {
    let mut master = OwnRedis::start().await?;
    let mut replica = OwnRedis::start_replica_of(&master).await?;
    replica.promote().await?;
    let mut a = scheme.open(&[master.url()], name, Hooks::none(), Arc::new(Clock::system())).await?;
    must_acquire(&mut a, LONG_TTL, scheme).await?;
    master.kill();
    a.crash();
    let reason = "the master died before A's grant reached its replica; the promoted replica granted B too";
    second_grant(scheme, &replica.url(), name, f, Flaw::PromotedReplicaForgotLock, reason).await
}

/// Whether B is granted on `url` the lock A held when its node was lost.
async fn second_grant(scheme: Scheme, url: &str, name: &str, f: &mut Findings, flaw: Flaw, reason: &str) -> Result<()> {
    let mut b = scheme.open(&[url.to_owned()], name, Hooks::none(), Arc::new(Clock::system())).await?;
    if b.acquire(LONG_TTL).await? {
        f.broke(Property::SurvivesNodeLoss, flaw, reason);
    } else {
        f.kept(Property::SurvivesNodeLoss);
    }
    b.crash();
    Ok(())
}

/// The one server restarts without persistence while A holds the lock.
async fn restart_without_persistence(scheme: Scheme, name: &str, f: &mut Findings) -> Result<()> {
    let mut server = OwnRedis::start().await?;
    let mut a = scheme.open(&[server.url()], name, Hooks::none(), Arc::new(Clock::system())).await?;
    must_acquire(&mut a, LONG_TTL, scheme).await?;
    server.restart().await?;
    a.crash();
    let reason = "the server restarted without persistence and granted B while A held the lock";
    second_grant(scheme, &server.url(), name, f, Flaw::RestartForgotLock, reason).await
}

/// Redlock's nodes: one restarts empty while A holds the lock (B must still be refused),
/// then another dies for good (a fresh client must still be granted by the rest).
async fn redlock_node_loss(lab: &Lab, f: &mut Findings) -> Result<()> {
    let mut nodes = redlock_nodes().await?;
    let urls: Vec<String> = nodes.iter().map(OwnRedis::url).collect();
    let name = lab.name("node-loss");
    let open = |hooks| lab.scheme.open(&urls, &name, hooks, Arc::new(Clock::system()));
    let mut a = open(Hooks::none()).await?;
    // The fault is a node restarting while A's grant is on every node.
    hold_everywhere(&mut a, lab.scheme, &urls, &name).await?;
    nodes[0].restart().await?;
    let mut b = open(Hooks::none()).await?;
    if b.acquire(LONG_TTL).await? {
        f.broke(
            Property::SurvivesNodeLoss,
            Flaw::RestartForgotLock,
            format!(
                "one of {REDLOCK_NODES} nodes restarted without persistence and B was granted while A held the lock"
            ),
        );
        b.crash();
        return Ok(());
    }
    nodes[REDLOCK_NODES - 1].kill();
    a.release().await?;
    let mut c = open(Hooks::none()).await?;
    if c.acquire(LONG_TTL).await? {
        f.kept(Property::SurvivesNodeLoss);
        c.crash();
    } else {
        f.broke(
            Property::SurvivesNodeLoss,
            Flaw::UnavailableAfterNodeLoss,
            format!("with one of {REDLOCK_NODES} nodes down, nobody could take the free lock"),
        );
    }
    Ok(())
}

/// Takes the lock for A until its grant is on every one of `urls` (bounded): on a loaded
/// machine a multi-node grant can take a quorum without the slowest node, and a fault on
/// a node that never had the grant would test nothing (a restart of one of the quorum is
/// the flaw the scheme's rustdoc states, not the fault). One node: one acquire.
async fn hold_everywhere(a: &mut Box<dyn LabLock>, scheme: Scheme, urls: &[String], name: &str) -> Result<()> {
    for _ in 0..5 {
        must_acquire(a, LONG_TTL, scheme).await?;
        if urls.len() == 1 || on_every_node(urls, name).await {
            return Ok(());
        }
        a.release().await?;
    }
    Err(Error::new(ErrorKind::Backend, format!("lab: {scheme}: A's grant never reached every node in 5 tries")))
}

/// A server's wall clock steps forward (an NTP step, a resumed VM) while A holds the lock
/// for [`LONG_TTL`]: Redis expires keys by its own clock, so every lease on that server ends
/// at once. The servers are the lab's own under libfaketime, `nodes` of them; the first
/// steps (the one server of a single-node scheme; one of Redlock's, whose other nodes
/// still hold A's grant). Then B asks: granted, it holds beside A, who still counts on its
/// lease (✗ mutual exclusion). Not run where such a server cannot be started (no
/// libfaketime or no `cc`): the other faults then decide the column.
async fn server_clock_step(lab: &Lab, nodes: usize, f: &mut Findings) -> Result<()> {
    if !faketime_available() {
        return Ok(());
    }
    let mut servers = Vec::new();
    for _ in 0..nodes {
        servers.push(OwnRedis::start_with_fake_clock().await?);
    }
    let urls: Vec<String> = servers.iter().map(|(s, _)| s.url()).collect();
    let name = lab.name("server-clock");
    let open = || lab.scheme.open(&urls, &name, Hooks::none(), Arc::new(Clock::system()));
    let mut a = open().await?;
    hold_everywhere(&mut a, lab.scheme, &urls, &name).await?;
    let (server, clock) = &servers[0];
    let step = i64::try_from(SERVER_CLOCK_STEP.as_secs()).unwrap_or(i64::MAX);
    let before = server_time_s(server).await?;
    clock.step(step)?;
    // Seen at the server's next clock call; 10 s bounds a loaded machine.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server_time_s(server).await? < before + step - 1 {
        if tokio::time::Instant::now() > deadline {
            return Err(Error::new(ErrorKind::Backend, "lab: the stepped server's clock did not move in 10 s"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut b = open().await?;
    if b.acquire(LONG_TTL).await? {
        let whose = if nodes == 1 { "the server's clock".to_owned() } else { format!("one of {nodes} nodes' clocks") };
        f.broke(
            Property::MutualExclusion,
            Flaw::ServerClockStep,
            format!(
                "{whose} stepped {}s forward while A held a {}s lease: its key expired at once and B was granted \
                 while A still held",
                SERVER_CLOCK_STEP.as_secs(),
                LONG_TTL.as_secs()
            ),
        );
        b.crash();
    }
    a.crash();
    Ok(())
}

/// The machine's wall clock steps forward (an NTP step, a resumed VM) while A holds the
/// lock for [`LONG_TTL`] in a SQLite file: B is a second process on the machine whose wall
/// clock runs [`SERVER_CLOCK_STEP`] ahead (the `baton` CLI under libfaketime, its monotonic
/// clocks left alone, as a step leaves them), trying once. A file whose leases were
/// judged by the wall clock would see A's lease ended and grant B (✗ mutual exclusion).
/// Not run without the CLI ([`Config::baton_bin`]) or libfaketime.
async fn machine_clock_step(lab: &Lab, f: &mut Findings) -> Result<()> {
    let (Some(bin), Some(lib)) = (&lab.baton_bin, faketime_lib()) else { return Ok(()) };
    let name = lab.name("machine-clock");
    let mut a = lab.client(&name, Hooks::none()).await?;
    must_acquire(&mut a, LONG_TTL, lab.scheme).await?;
    let ahead = format!("+{}s", SERVER_CLOCK_STEP.as_secs());
    let b = tokio::process::Command::new(bin)
        .args(["run", "--url", &lab.urls[0], "--wait", "0", &name, "--", "true"])
        .env("LD_PRELOAD", lib)
        .env("FAKETIME", &ahead)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("FAKETIME_DONT_RESET", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    // 30 s bounds a loaded machine: one try on a local file takes milliseconds.
    let out = tokio::time::timeout(Duration::from_secs(30), b)
        .await
        .map_err(|_| Error::new(ErrorKind::Backend, "lab: `baton run` under libfaketime did not end in 30 s"))?
        .map_err(|e| Error::new(ErrorKind::Backend, format!("lab: cannot run {}: {e}", bin.display())))?;
    match out.status.code() {
        // EX_TEMPFAIL: busy, as it must be.
        Some(75) => {}
        Some(0) => f.broke(
            Property::MutualExclusion,
            Flaw::ServerClockStep,
            format!(
                "a process whose wall clock ran {}s ahead judged A's live {}s lease ended and was granted",
                SERVER_CLOCK_STEP.as_secs(),
                LONG_TTL.as_secs()
            ),
        ),
        code => {
            return Err(Error::new(
                ErrorKind::Backend,
                format!(
                    "lab: `baton run` under libfaketime exited {code:?}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
    }
    a.release().await?;
    Ok(())
}

/// The server's `TIME`, in whole seconds.
async fn server_time_s(server: &OwnRedis) -> Result<i64> {
    let mut raw = Raw::open(&server.url(), "").await?;
    let (s, _us): (i64, i64) = raw.query(&redis::cmd("TIME")).await?;
    Ok(s)
}

/// One of Redlock's nodes is frozen (SIGSTOP: its socket stays open and answers nothing,
/// as a stalled host) while the lock is free: the others must still grant it, the node
/// timeout bounding what the frozen node costs; a grant that does not come within
/// [`FROZEN_NODE_BOUND`] breaks "survives one node loss".
async fn redlock_frozen_node(lab: &Lab, f: &mut Findings) -> Result<()> {
    let nodes = redlock_nodes().await?;
    let urls: Vec<String> = nodes.iter().map(OwnRedis::url).collect();
    let name = lab.name("frozen-node");
    nodes[0].freeze()?;
    let t0 = tokio::time::Instant::now();
    // Tried again while refused or unreachable: only the bound decides.
    let granted = async {
        let mut a = lab.scheme.open(&urls, &name, Hooks::none(), Arc::new(Clock::system())).await?;
        loop {
            match a.acquire(LONG_TTL).await {
                Ok(true) => {
                    a.crash();
                    return Ok::<(), Error>(());
                }
                Ok(false) => {}
                Err(e) if matches!(e.kind(), ErrorKind::Connection | ErrorKind::Timeout) => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let outcome = tokio::time::timeout(FROZEN_NODE_BOUND, granted).await;
    nodes[0].thaw()?;
    match outcome {
        Ok(Ok(())) => f.kept(Property::SurvivesNodeLoss),
        Ok(Err(e)) => return Err(e),
        Err(_) => f.broke(
            Property::SurvivesNodeLoss,
            Flaw::UnavailableAfterNodeLoss,
            format!(
                "with one of {REDLOCK_NODES} nodes frozen (SIGSTOP), the free lock was not granted in {:?}",
                t0.elapsed()
            ),
        ),
    }
    Ok(())
}

/// The `zookeeper` row: baton's `zk://` lock on an ensemble of the lab's own, through the
/// same safety faults (its fenced resource on the lab's Redis), then a member lost.
async fn zk_row(mut lab: Lab) -> Result<Row> {
    let mut zk = OwnZk::start().await?;
    // A short session: a client whose member died finds another well within the faults'
    // bounds.
    lab.urls = vec![format!("{}?session_timeout=4s&timeout=5s", zk.url())];
    let mut f = Findings::default();
    safety_faults(&lab, &mut f).await?;
    zk_member_loss(&lab, &mut zk, &mut f).await?;
    Ok(f.row(Scheme::Zookeeper))
}

/// The ensemble's leader dies while A holds the lock: B must still be refused (the
/// quorum's writes live on in the other two members), and once A released, a fresh client
/// must be granted by the two left.
async fn zk_member_loss(lab: &Lab, zk: &mut OwnZk, f: &mut Findings) -> Result<()> {
    let name = lab.name("member-loss");
    let url = &lab.urls[0];
    let a = baton::Client::connect(url).await?;
    let held = a.lock_with(&name, baton::LockOptions::new().ttl(LONG_TTL)).acquire().await?;
    zk.kill(zk.leader().await?);
    let b = baton::Client::connect(url).await?;
    let try_b = || async { b.lock(&name).try_acquire().await.map(|g| g.map(std::mem::forget).is_some()) };
    if answer(try_b).await? {
        let reason = "the leader died while A held the lock; the new leader granted B too";
        f.broke(Property::SurvivesNodeLoss, Flaw::PromotedReplicaForgotLock, reason);
        return Ok(());
    }
    // B was answered, so a quorum serves again; A's session may still be moving to
    // another member, so its release is retried through a fresh handle if it fails.
    let released = held.release().await.is_ok();
    let c = baton::Client::connect(url).await?;
    // A release that failed leaves A's hold to its ttl (LONG_TTL).
    let limit = if released { Lab::expiry_limit(lab.ttl) } else { LONG_TTL + Lab::expiry_limit(lab.ttl) };
    let granted = tokio::time::timeout(limit, c.lock(&name).acquire()).await;
    match granted {
        Ok(Ok(g)) => {
            f.kept(Property::SurvivesNodeLoss);
            let _ = g.release().await;
        }
        _ => f.broke(
            Property::SurvivesNodeLoss,
            Flaw::UnavailableAfterNodeLoss,
            format!("with one of 3 members down, nobody could take the free lock in {limit:?}"),
        ),
    }
    for client in [a, b, c] {
        client.close().await;
    }
    Ok(())
}

/// A definite answer to `attempt` while an ensemble elects: connection errors and
/// timeouts are retried for up to 60 s.
async fn answer<F, Fut>(attempt: F) -> Result<bool>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match attempt().await {
            Err(e)
                if matches!(e.kind(), ErrorKind::Connection | ErrorKind::Timeout)
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            r => return r,
        }
    }
}

/// Whether the key `name` is on every one of `urls` within 2 s (a grant's late nodes
/// answer after its quorum did).
async fn on_every_node(urls: &[String], name: &str) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let mut all = true;
        for u in urls {
            let Ok(mut raw) = Raw::open(u, name).await else { return false };
            all &= matches!(raw.query::<i64>(&raw.cmd("EXISTS")).await, Ok(1));
        }
        if all || tokio::time::Instant::now() > deadline {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Deletes what a run left on a server that is not the lab's own (keys without expiry
/// would stay for ever). Bounded: 1000 SCAN steps.
async fn clean(url: &str, run_id: &str) {
    let Ok(mut raw) = Raw::open(url, "").await else { return };
    let mut cursor = 0u64;
    for _ in 0..1000 {
        let mut c = redis::cmd("SCAN");
        c.arg(cursor).arg("MATCH").arg(format!("*{run_id}*")).arg("COUNT").arg(1000);
        let Ok((next, keys)) = raw.query::<(u64, Vec<String>)>(&c).await else { return };
        if !keys.is_empty() {
            let _: Result<i64> = raw.query(redis::cmd("DEL").arg(&keys)).await;
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}
