//! `baton lab`: every Redis lock scheme (from a bare `SETNX` to Redlock), ZooKeeper, and
//! every SQL lock scheme through the same faults, printed as a matrix (baton_lab).

use std::path::PathBuf;

use baton_lab::{self as lab, Matrix, Property, Scheme};

use crate::exit::{self, Failure, IOERR};
use crate::output::{self, Table};
use crate::url::{Source, StoreChoice};

/// Run every lock scheme through the same faults and print what each one keeps
///
/// Schemes: setnx, setnx-expire, set-nx-px, set-nx-px-owned, set-nx-px-lua,
/// getset-timestamp, redisson (baton's redis:// lock), redlock (baton's redlock://),
/// zookeeper (baton's zk:// lock, on a 3-member ensemble of the lab's own), and the SQL
/// rows <database>-<scheme>: sqlite-state, sqlite-table, sqlite-optimistic (on a SQLite
/// file of the lab's own), postgres-… and mysql-… each with state (baton's own design),
/// table, for-update, optimistic and advisory (on --postgres-url / --mysql-url; without
/// one, those rows are not run).
/// Faults: crashes between steps, holders paused past their ttl, late, racing and retried
/// releases, a client clock jump, a restart without persistence, a replica promoted
/// before replication, a ZooKeeper leader killed, a database server killed and restarted.
/// Columns: mutual exclusion, no deadlock after holder crash, no foreign unlock, survives
/// one node loss, fenced.
///
/// The single-node faults run on --url, or $BATON_URL when it names Redis (lock names under
/// `baton-lab:<random>`, deleted afterwards), else on a redis-server of the lab's own.
/// Faults that kill or restart a server, and the redlock nodes, always use servers of the
/// lab's own on free loopback ports (redis-server; PostgreSQL and MariaDB for the SQL rows'
/// node loss), never the ones named. A ✗ is a finding, not a failure: the exit code is 0
/// whenever the matrix was made.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::HELP)]
pub(crate) struct Args {
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the matrix as Markdown to FILE (as docs/lab.md carries it).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// The ttl of holders paused or crashed on purpose (the run waits it out many times).
    #[arg(long, value_name = "DURATION", default_value = "300ms")]
    ttl: String,
    /// The PostgreSQL server of the postgres-* rows (postgres://…, without ?scheme=; lock
    /// names of the run's own, their rows deleted afterwards). Without it: not run.
    #[arg(long, value_name = "URL")]
    postgres_url: Option<String>,
    /// The MySQL or MariaDB server of the mysql-* rows (mysql://…), as --postgres-url.
    #[arg(long, value_name = "URL")]
    mysql_url: Option<String>,
    /// Only these schemes (repeatable).
    #[arg(long = "scheme", value_name = "NAME", value_parser = scheme)]
    schemes: Vec<Scheme>,
}

fn scheme(s: &str) -> Result<Scheme, String> {
    Scheme::from_name(s).ok_or_else(|| format!("unknown scheme; known: {}", Scheme::ALL.map(Scheme::as_str).join(", ")))
}

pub(crate) async fn run(args: Args, store: StoreChoice, verbose: bool) -> Result<u8, Failure> {
    let config = lab::Config {
        url: server(&store, verbose)?,
        ttl: exit::duration("--ttl", &args.ttl)?,
        schemes: if args.schemes.is_empty() { Scheme::ALL.to_vec() } else { args.schemes },
        postgres_url: args.postgres_url,
        mysql_url: args.mysql_url,
        // The fault that steps a second process's wall clock runs this CLI.
        baton_bin: std::env::current_exe().ok(),
    };
    if output::stderr_is_tty() {
        crate::output::say!(
            "baton lab: {} schemes × {} properties, ~2 s a scheme…",
            config.schemes.len(),
            Property::ALL.len()
        );
    }
    let matrix = lab::run(&config).await?;
    if let Some(path) = &args.markdown {
        std::fs::write(path, matrix.to_markdown())
            .map_err(|e| Failure::new(IOERR, format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        output::print_json(&matrix)?;
    } else {
        crate::output::print(&render(&matrix));
    }
    Ok(0)
}

/// The server of the single-node faults: `--url`, or `$BATON_URL` when it names Redis;
/// otherwise the lab's own (the default store, SQLite, has no Redis scheme to torture).
fn server(store: &StoreChoice, verbose: bool) -> Result<Option<String>, Failure> {
    let redis = matches!(store.scheme().as_deref(), Some("redis" | "rediss"));
    match store.source {
        Source::Flag if !redis => {
            Err(Failure::usage(format!("baton lab needs a redis:// or rediss:// URL, not {}", store.shown())))
        }
        Source::Flag | Source::Env if redis => {
            store.announce(false, verbose);
            Ok(Some(store.url.clone()))
        }
        _ => Ok(None),
    }
}

fn render(m: &Matrix) -> String {
    let p = Property::ALL.map(Property::title);
    let mut t = Table::new(["scheme", p[0], p[1], p[2], p[3], p[4]]);
    for r in &m.rows {
        let mut cells = vec![r.scheme.to_string()];
        cells.extend(Property::ALL.map(|p| r.cell(p).mark().to_owned()));
        t.row(cells);
    }
    let mut out = format!("single-node faults on {}; paused and crashed holders' ttl {} ms\n", m.server, m.ttl_ms);
    if !m.databases.is_empty() {
        out.push_str(&format!("SQL rows on {}\n", m.databases.join(", ")));
    }
    out.push('\n');
    out.push_str(&t.render("  "));
    out.push('\n');
    for line in m.reason_lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out
}
