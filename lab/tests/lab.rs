//! The lab's expected matrix, cell by cell: every safe scheme keeps every property it
//! claims, every flawed scheme fails in exactly the way its rustdoc (`lab/src/*.rs`)
//! states. The single-node faults run on the server of
//! `scripts/services` (`BATON_TEST_REDIS_URL`, names under a random prefix, removed
//! afterwards); the faults that kill, restart or fail over a server run on
//! `redis-server` children of the lab's own (free ports, killed when done). The SQL rows
//! run on `BATON_TEST_POSTGRES_URL` and `BATON_TEST_MYSQL_URL` (lock names of the run's
//! own, their rows deleted afterwards) and on a SQLite file of the lab's own.
//!
//! No bound here is a speed target: the lab's ttls are 300 ms and every wait for an
//! expiry polls up to 4 ttls + 5 s, which is what makes it pass on a loaded 2-core machine.
//! The SQL rows' node loss kills a PostgreSQL cluster and a MariaDB server of the lab's
//! own (started once each, killed and restarted once per row; each start bounded by 30 s,
//! the holder's lease 5 min, the try while it is down 1 s, which can only find nobody
//! granted). The 13 SQL rows add about 30 s to the run on an idle 2-core machine (about
//! 25 s → 55 s).

use baton_lab::{self as lab, Cell, Flaw, Matrix, Property, Scheme};

use Flaw::*;

/// ✓, ✗ with the fault that must break it, or – (no fault of the lab applies).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    Kept,
    Broken(Flaw),
    NotRun,
}
use Want::{Broken, Kept, NotRun};

/// The matrix each scheme's design predicts (columns in `Property::ALL` order: mutual exclusion, no
/// deadlock after holder crash, no foreign unlock, survives one node loss, fenced).
fn expected(scheme: Scheme) -> [Want; 5] {
    match scheme {
        // setnx: no expiry (deadlock); the bare DEL of a retried release frees the next holder.
        Scheme::Setnx => [
            Broken(RetriedReleaseFreedSuccessor),
            Broken(NoExpiry),
            Broken(RetriedReleaseFreedSuccessor),
            Broken(PromotedReplicaForgotLock),
            Broken(NoToken),
        ],
        // setnx-expire: the holder dies between SETNX and EXPIRE; the shared value lets a late DEL
        // free the successor.
        Scheme::SetnxExpire => [
            Broken(LateReleaseFreedSuccessor),
            Broken(CrashBetweenSteps),
            Broken(LateReleaseFreedSuccessor),
            Broken(PromotedReplicaForgotLock),
            Broken(NoToken),
        ],
        // set-nx-px: a slow holder deletes its successor's lock.
        Scheme::SetNxPx => [
            Broken(LateReleaseFreedSuccessor),
            Kept,
            Broken(LateReleaseFreedSuccessor),
            Broken(PromotedReplicaForgotLock),
            Broken(NoToken),
        ],
        // set-nx-px-owned: the same through the GET/DEL window.
        Scheme::SetNxPxOwned => [
            Broken(CheckThenDeleteWindow),
            Kept,
            Broken(CheckThenDeleteWindow),
            Broken(PromotedReplicaForgotLock),
            Broken(NoToken),
        ],
        // set-nx-px-lua: safe on one healthy node whose clock does not step, unfenced, lost
        // with its node.
        Scheme::SetNxPxLua => [Broken(ServerClockStep), Kept, Kept, Broken(PromotedReplicaForgotLock), Broken(NoToken)],
        // Client clocks decide expiry; the release is a bare DEL.
        Scheme::GetsetTimestamp => [
            Broken(ClockJumpTakeover),
            Kept,
            Broken(LateReleaseFreedSuccessor),
            Broken(PromotedReplicaForgotLock),
            Broken(NoToken),
        ],
        // baton's redis:// lock: one server's clock stepped forward ends its lease there
        // (fenced: the larger token refuses the old holder's writes); no fault tolerance
        // (one node).
        Scheme::Redisson => [Broken(ServerClockStep), Kept, Kept, Broken(PromotedReplicaForgotLock), Kept],
        // baton's redlock:// (3 nodes of the lab's own): everything, one node's clock
        // stepped or one node frozen included; fenced by the tokens' max-register.
        Scheme::Redlock => [Kept; 5],
        // baton's zk:// (a 3-member ensemble of the lab's own): everything; the leader's
        // death loses no hold (a quorum's writes live on), and czxid tokens fence.
        Scheme::Zookeeper => [Kept; 5],
        // baton's SQL locks, every scheme on every database that has it: leases on the
        // database's clock (an expiry column, or the session's idle limit), owner-checked
        // releases (owner column, version, or only the holding session), tokens from the
        // counter table or the version. One server is one node: killed (a server of the
        // lab's own), nobody can lock; the row schemes keep the hold through its restart…
        Scheme::PostgresState
        | Scheme::PostgresTable
        | Scheme::PostgresOptimistic
        | Scheme::MysqlState
        | Scheme::MysqlTable
        | Scheme::MysqlOptimistic => [Kept, Kept, Kept, Broken(UnavailableAfterNodeLoss), Kept],
        // …the session schemes lose it with the session (B granted at once after the
        // restart, while A still counts on its lease; tokens still grow).
        Scheme::PostgresForUpdate | Scheme::PostgresAdvisory | Scheme::MysqlForUpdate | Scheme::MysqlAdvisory => {
            [Kept, Kept, Kept, Broken(RestartForgotLock), Kept]
        }
        // SQLite: a file of the lab's own, no server to lose.
        Scheme::SqliteState | Scheme::SqliteTable | Scheme::SqliteOptimistic => [Kept, Kept, Kept, NotRun, Kept],
    }
}

fn config() -> lab::Config {
    // The shared servers when there are (as `baton lab --url --postgres-url --mysql-url`
    // runs); else the lab's own Redis, and no PostgreSQL/MySQL rows.
    lab::Config {
        url: std::env::var("BATON_TEST_REDIS_URL").ok(),
        postgres_url: std::env::var("BATON_TEST_POSTGRES_URL").ok(),
        mysql_url: std::env::var("BATON_TEST_MYSQL_URL").ok(),
        ..lab::Config::default()
    }
}

fn check(matrix: &Matrix) {
    let mut wrong = Vec::new();
    for scheme in Scheme::ALL {
        let row = matrix.row(scheme).unwrap_or_else(|| panic!("no row for {scheme}"));
        for (p, want) in Property::ALL.into_iter().zip(expected(scheme)) {
            let cell = row.cell(p);
            let got = match cell {
                Cell::Kept => Some(Kept),
                Cell::Broken { flaw, .. } => Some(Broken(*flaw)),
                Cell::NotRun { .. } => Some(NotRun),
            };
            if got != Some(want) {
                wrong.push(format!("{scheme} / {}: want {want:?}, got {cell:?}", p.title()));
            }
        }
    }
    assert!(wrong.is_empty(), "unexpected cells:\n{}\n\nmatrix:\n{}", wrong.join("\n"), matrix.to_markdown());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_matrix_is_what_each_scheme_predicts() {
    if !lab::redis_server_available() {
        assert!(std::env::var_os("CI").is_none(), "redis-server not installed (`scripts/services start redis`)");
        eprintln!("redis-server not on PATH: skipping the lab");
        return;
    }
    if !lab::faketime_available() {
        assert!(std::env::var_os("CI").is_none(), "libfaketime or cc missing (scripts/suites/30-rust.sh installs it)");
        eprintln!("no libfaketime or no cc: skipping the lab (its matrix has the server-clock fault)");
        return;
    }
    let config = config();
    if config.postgres_url.is_none() || config.mysql_url.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "BATON_TEST_POSTGRES_URL and BATON_TEST_MYSQL_URL unset (`scripts/services start postgres mysql`)"
        );
        eprintln!("no PostgreSQL or MySQL URL: skipping the lab (its matrix has every SQL row)");
        return;
    }
    if !lab::own_postgres_available() || !lab::own_mariadb_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the SQL rows' node loss needs PostgreSQL's server binaries and mariadbd (`scripts/services start postgres mysql`)"
        );
        eprintln!("no PostgreSQL or MariaDB server binaries: skipping the lab");
        return;
    }
    let matrix = lab::run(&config).await.expect("lab run");
    eprintln!("{}", matrix.to_markdown());
    check(&matrix);
    // Every ✗ has its one-line reason in the Markdown the docs carry.
    let md = matrix.to_markdown();
    // docs/lab.md carries what a run prints (regenerate: `baton lab --markdown FILE`).
    let doc = include_str!("../../docs/lab.md");
    assert!(
        doc.contains(&format!("<!-- lab-matrix:start -->\n{md}<!-- lab-matrix:end -->")),
        "docs/lab.md is stale:\n{md}"
    );
    let lines = matrix.reason_lines();
    let crosses = matrix.rows.iter().flat_map(|r| &r.cells).filter(|c| c.flaw().is_some()).count();
    assert_eq!(lines.iter().filter(|l| l.starts_with('✗')).count(), crosses);
    for line in lines {
        assert!(md.contains(&format!("- {line}\n")), "{line} missing from:\n{md}");
        assert!(!line.contains('\n'), "a reason is one line: {line}");
    }
}

#[tokio::test]
async fn bad_configs_are_typed_errors() {
    let bad_ttl = lab::Config { ttl: std::time::Duration::ZERO, ..config() };
    assert_eq!(lab::run(&bad_ttl).await.unwrap_err().kind(), baton::ErrorKind::InvalidArgument);
    let not_redis = lab::Config { url: Some("sqlite:///tmp/x.db".into()), ..lab::Config::default() };
    assert_eq!(lab::run(&not_redis).await.unwrap_err().kind(), baton::ErrorKind::InvalidArgument);
    let not_postgres = lab::Config { postgres_url: Some("mysql://h/db".into()), ..config() };
    assert_eq!(lab::run(&not_postgres).await.unwrap_err().kind(), baton::ErrorKind::InvalidArgument);
    let own_scheme = lab::Config { mysql_url: Some("mysql://h/db?scheme=table".into()), ..config() };
    assert_eq!(lab::run(&own_scheme).await.unwrap_err().kind(), baton::ErrorKind::InvalidArgument);
    let secret = lab::Config { url: Some("redis://u:hunter2@127.0.0.1:1".into()), ..lab::Config::default() };
    let err = lab::run(&secret).await.unwrap_err();
    assert_eq!(err.kind(), baton::ErrorKind::Connection, "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}
