//! `baton`: run a command under a distributed lock; demo, inspect and benchmark stores;
//! torture every Redis lock scheme (`baton lab`).

mod cmd;
mod exit;
mod output;
mod url;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::Failure;
use crate::url::StoreChoice;

/// Distributed locks with fencing tokens, from the shell
#[derive(Parser, Debug)]
#[command(name = "baton", version, after_help = exit::HELP, propagate_version = true)]
struct Cli {
    /// Store URL: memory://, sqlite:///path/file.db, … [default: $BATON_URL, else
    /// sqlite://<data dir>/baton/baton.db]
    #[arg(long, global = true, value_name = "URL")]
    url: Option<String>,
    /// Say which store is used, even when it is not the default.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Run(cmd::run::Args),
    Demo(cmd::demo::Args),
    Inspect(cmd::inspect::Args),
    Bench(cmd::bench::Args),
    Lab(cmd::lab::Args),
    /// One buyer of `baton demo` (internal).
    #[command(hide = true)]
    DemoBuyer(cmd::demo::BuyerArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" that exit 0; real usage errors get
            // EX_USAGE like every other bad input, rather than clap's 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE } else { 0 });
        }
    };
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            crate::output::say!("baton: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}

fn dispatch(cli: Cli) -> Result<u8, Failure> {
    let store = StoreChoice::resolve(cli.url.as_deref())?;
    let verbose = cli.verbose;
    // Short-lived commands get a single-threaded runtime (fast start-up, and `run` spawns
    // its command from the thread that lives as long as baton); the bench wants every core
    // unless told otherwise (`--runtime`, `--workers`).
    let runtime = match &cli.command {
        Command::Bench(a) => a.runtime()?,
        _ => tokio::runtime::Builder::new_current_thread(),
    }
    .enable_all()
    .build()
    .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot start the async runtime: {e}")))?;
    let out = runtime.block_on(async move {
        match cli.command {
            Command::Run(a) => cmd::run::run(a, store, verbose).await,
            Command::Demo(a) => cmd::demo::run(a, store, verbose).await,
            Command::Inspect(a) => cmd::inspect::run(a, store, verbose).await,
            Command::Bench(a) => cmd::bench::run(a, store, verbose).await,
            Command::Lab(a) => cmd::lab::run(a, store, verbose).await,
            Command::DemoBuyer(a) => cmd::demo::buyer(a, &store.url).await,
        }
    });
    // Everything was released and closed explicitly; do not wait on leftover tasks.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    out
}
