//! `baton run NAME -- CMD…`: run a command while holding a lock.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use baton::{Client, ErrorKind, LockGuard, LockOptions};
use serde::Serialize;
use tokio::process::{Child, Command};
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::group::Group;
use crate::exit::{self, Failure};
use crate::output::{self, human};
use crate::url::StoreChoice;

/// Run a command while holding a lock
///
/// Waits for the lock NAME, runs CMD with BATON_FENCING_TOKEN and BATON_LOCK_NAME in its
/// environment, releases the lock when CMD ends and exits with CMD's exit code. If the
/// lease is lost while CMD runs (ttl expired, or the store stopped answering past the
/// lease), CMD gets SIGTERM (--signal), then SIGKILL after --grace, and baton exits 76. SIGINT,
/// SIGTERM and SIGHUP sent to baton are forwarded to CMD.
///
/// CMD runs in a process group of its own, and every signal goes to the whole group (a
/// pipeline's processes, a script's children). Processes CMD leaves behind in its group
/// are killed when it ends, before the lock is released; and if baton itself dies, even
/// of SIGKILL, a reaper process kills the group at once, before the lease can lapse.
#[derive(clap::Args, Debug)]
#[command(after_help = exit::HELP)]
pub(crate) struct Args {
    /// Explicit lease: the lock expires TTL after the grant and nothing renews it. Without
    /// it, a watchdog renews a 30s lease for as long as baton runs.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    ttl: Option<String>,
    /// Wait at most this long for the lock, then exit 75; `--wait 0` tries once.
    /// Default: wait forever.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    wait: Option<String>,
    /// After a lost lease, how long CMD has between --signal and SIGKILL.
    #[arg(long, value_name = "DURATION", default_value = "10s", allow_hyphen_values = true)]
    grace: String,
    /// The signal CMD gets when the lease is lost: TERM, INT, HUP, QUIT, USR1, USR2 or KILL.
    #[arg(long, value_name = "SIGNAL", default_value = "TERM")]
    signal: String,
    /// Print a one-line JSON report to stderr when baton ends (name, token, timings,
    /// exit code, lost).
    #[arg(long)]
    json: bool,
    /// The lock name (1 to 255 bytes of UTF-8).
    #[arg(value_name = "NAME")]
    name: String,
    /// The command and its arguments (put `--` before it if it has options).
    #[arg(value_name = "CMD", required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    cmd: Vec<OsString>,
}

/// What `--json` reports.
#[derive(Serialize)]
struct Report<'a> {
    name: &'a str,
    url: String,
    token: u64,
    waited_ms: f64,
    held_ms: f64,
    /// The command's exit code, or null when a signal ended it.
    command_code: Option<i32>,
    command_signal: Option<i32>,
    lost: bool,
    /// baton's own exit code.
    exit_code: u8,
}

pub(crate) async fn run(args: Args, store: StoreChoice, verbose: bool) -> Result<u8, Failure> {
    let ttl = args.ttl.as_deref().map(|v| exit::lease("--ttl", v)).transpose()?;
    let wait = args.wait.as_deref().map(|v| exit::duration_or_zero("--wait", v)).transpose()?;
    let stop = Stop { signal: parse_signal(&args.signal)?, grace: exit::duration_or_zero("--grace", &args.grace)? };
    exit::check_name(&args.name)?;
    let tty = output::stderr_is_tty();
    // Scripts stay quiet unless asked; a human at a terminal learns where the lock lives.
    store.announce(tty, verbose);
    // Registered before waiting, so that Ctrl-C while waiting ends baton cleanly (the
    // acquire is cancel-safe: nothing stays held or queued).
    let mut signals = Signals::new()?;
    let client = Client::connect(&store.url).await?;
    let out = hold_and_run(&client, &args, ttl, wait, stop, tty, &mut signals).await;
    client.close().await;
    out
}

async fn hold_and_run(
    client: &Client,
    args: &Args,
    ttl: Option<Duration>,
    wait: Option<Duration>,
    stop: Stop,
    tty: bool,
    signals: &mut Signals,
) -> Result<u8, Failure> {
    let name = args.name.as_str();
    let lock = match ttl {
        Some(ttl) => client.lock_with(name, LockOptions::new().ttl(ttl)),
        None => client.lock(name),
    };
    let asked = Instant::now();
    let acquire = async {
        match wait {
            None => lock.acquire().await.map(Some),
            Some(Duration::ZERO) => lock.try_acquire().await,
            Some(w) => lock.acquire_timeout(w).await.map(Some),
        }
    };
    let show_spinner = tty && !args.json;
    let granted = tokio::select! {
        r = acquire => r,
        sig = signals.recv() => {
            if show_spinner { output::clear_line(); }
            return Err(Failure::new(128 + sig as u8, format!("interrupted by {} while waiting for lock `{name}`", sig_name(sig))));
        }
        () = output::spinner(name, asked), if show_spinner => unreachable!("the spinner never ends"),
    };
    if show_spinner {
        output::clear_line();
    }
    let guard = match granted {
        Ok(Some(g)) => g,
        Ok(None) => return Err(Failure::new(exit::TEMPFAIL, format!("lock `{name}` is busy (--wait 0: not waiting)"))),
        Err(e) if e.kind() == ErrorKind::Timeout => {
            let waited = args.wait.as_deref().unwrap_or("?");
            return Err(Failure::new(exit::TEMPFAIL, format!("{e} (gave up after --wait {waited})")));
        }
        Err(e) => return Err(e.into()),
    };
    let waited = asked.elapsed();
    let token = guard.token().get();
    // Let a lease timer that is already due fire (this runtime has one thread), so that a
    // lease shorter than the wait for it is seen before the command starts.
    tokio::task::yield_now().await;
    if guard.is_lost() {
        // Possible with a very short --ttl: never start the command unprotected.
        return Err(Failure::new(
            exit::LOST,
            format!("LockLost: the lease on `{name}` ran out before the command started"),
        ));
    }

    let (mut child, group) = match spawn(&args.cmd, &guard) {
        Ok(c) => c,
        Err(f) => {
            // The command never ran: nothing it did needs the lease, so a release error
            // would only hide the real problem.
            let _ = guard.release().await;
            return Err(f);
        }
    };
    let held_since = Instant::now();
    let (status, lost) = supervise(&mut child, &group, &guard, stop, signals).await;
    // Nothing of the command's tree may go on without the lock.
    group.end();
    let held = held_since.elapsed();
    let released = guard.release().await;

    let status = status.map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot wait for the command: {e}")))?;
    let command_code = status_code(status);
    let outcome = if lost {
        Err(Failure::new(
            exit::LOST,
            format!(
                "LockLost: the lease on `{name}` was lost after {}; the command was stopped ({})",
                human(held),
                describe(status)
            ),
        ))
    } else {
        match released {
            Ok(()) => Ok(command_code),
            // The command finished, but its lease ran out before the release: whatever it
            // did at the end may have overlapped another holder. Say so, keep a failing
            // command's own code, and never turn that into success.
            Err(e) => {
                let code = if command_code == 0 { exit::code_of(e.kind()) } else { command_code };
                Err(Failure::new(code, format!("{e} (the command had finished: {})", describe(status))))
            }
        }
    };
    if args.json {
        let report = Report {
            name,
            url: client.url(),
            token,
            waited_ms: output::millis(waited),
            held_ms: output::millis(held),
            command_code: status.code(),
            command_signal: status.signal(),
            lost,
            exit_code: match &outcome {
                Ok(c) => *c,
                Err(f) => f.code,
            },
        };
        eprintln!("{}", serde_json::to_string(&report).unwrap_or_default());
    }
    outcome
}

/// Starts the command, in a process group of its own with its reaper, with the lock's
/// identity in its environment.
fn spawn(cmd: &[OsString], guard: &LockGuard) -> Result<(Child, Group), Failure> {
    let (program, rest) = cmd.split_first().ok_or_else(|| Failure::usage("no command given after NAME"))?;
    let mut group =
        Group::start().map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot start the command's reaper: {e}")))?;
    let mut command = Command::new(program);
    command.args(rest).env("BATON_FENCING_TOKEN", guard.token().to_string()).env("BATON_LOCK_NAME", guard.name());
    command.process_group(group.pgid);
    #[cfg(target_os = "linux")]
    {
        let baton_pid = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
        // calls (prctl, getppid), allocating nothing.
        unsafe {
            command.pre_exec(move || {
                // If baton dies without a chance to clean up (SIGKILL, OOM), its watchdog
                // stops and the lease will lapse: stop the command rather than let it run
                // unprotected. The command is spawned from the runtime's own thread, which
                // lives as long as baton, so the signal is not sent early.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != baton_pid {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    let child = command.spawn().map_err(|e| {
        let shown = program.to_string_lossy();
        match e.kind() {
            std::io::ErrorKind::NotFound => {
                Failure::new(exit::NOT_FOUND, format!("cannot run `{shown}`: command not found"))
            }
            _ => Failure::new(exit::CANNOT_EXEC, format!("cannot run `{shown}`: {e}")),
        }
    })?;
    group.take_terminal();
    Ok((child, group))
}

/// How a command is stopped after its lease is lost.
#[derive(Debug, Clone, Copy)]
struct Stop {
    signal: i32,
    grace: Duration,
}

/// The signals --signal accepts, by name.
const STOP_SIGNALS: [(&str, i32); 7] = [
    ("TERM", libc::SIGTERM),
    ("INT", libc::SIGINT),
    ("HUP", libc::SIGHUP),
    ("QUIT", libc::SIGQUIT),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("KILL", libc::SIGKILL),
];

/// `TERM`, `sigterm`, `SIGTERM` or `15`.
fn parse_signal(value: &str) -> Result<i32, Failure> {
    let upper = value.trim().to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    STOP_SIGNALS.iter().find(|(n, num)| *n == bare || bare.parse() == Ok(*num)).map(|(_, num)| *num).ok_or_else(|| {
        let known: Vec<&str> = STOP_SIGNALS.iter().map(|(n, _)| *n).collect();
        Failure::usage(format!("InvalidArgument: --signal: unknown signal `{value}` (use one of {})", known.join(", ")))
    })
}

/// Waits for the command; forwards signals; stops it when the lease is lost.
/// Returns its status and whether the lease was lost.
async fn supervise(
    child: &mut Child,
    group: &Group,
    guard: &LockGuard,
    stop: Stop,
    signals: &mut Signals,
) -> (std::io::Result<ExitStatus>, bool) {
    let lost = guard.lost();
    tokio::pin!(lost);
    let mut kill_at: Option<tokio::time::Instant> = None;
    let mut lost_seen = false;
    loop {
        let deadline = kill_at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86400));
        tokio::select! {
            status = child.wait() => return (status, lost_seen),
            () = &mut lost, if !lost_seen => {
                lost_seen = true;
                let then = if stop.signal == libc::SIGKILL { String::new() } else { format!(" (SIGKILL in {})", human(stop.grace)) };
                eprintln!(
                    "baton: the lease on `{}` (token {}) was lost; sending {} to the command{then}",
                    guard.name(), guard.token(), sig_name(stop.signal)
                );
                group.signal(stop.signal);
                if stop.signal != libc::SIGKILL {
                    kill_at = Some(tokio::time::Instant::now() + stop.grace);
                }
            }
            () = tokio::time::sleep_until(deadline), if kill_at.is_some() => {
                eprintln!("baton: the command outlived the grace period; sending SIGKILL");
                group.signal(libc::SIGKILL);
                kill_at = None;
            }
            sig = signals.recv() => group.signal(sig),
        }
    }
}

/// The shell's convention: the exit code, or 128+N for a death by signal N.
fn status_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(c), _) => (c & 0xff) as u8,
        (None, Some(s)) => 128u8.saturating_add(s as u8),
        (None, None) => exit::SOFTWARE,
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by {}", sig_name(s)),
        _ => status.to_string(),
    }
}

fn sig_name(sig: i32) -> String {
    match STOP_SIGNALS.iter().find(|(_, num)| *num == sig) {
        Some((name, _)) => format!("SIG{name}"),
        None => format!("signal {sig}"),
    }
}

/// The signals baton forwards to its command.
struct Signals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl Signals {
    fn new() -> Result<Signals, Failure> {
        let on = |k: SignalKind| {
            signal(k).map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot install a signal handler: {e}")))
        };
        Ok(Signals {
            int: on(SignalKind::interrupt())?,
            term: on(SignalKind::terminate())?,
            hup: on(SignalKind::hangup())?,
        })
    }

    /// The next signal received. (The streams never end while the runtime lives.)
    async fn recv(&mut self) -> i32 {
        tokio::select! {
            Some(()) = self.int.recv() => libc::SIGINT,
            Some(()) = self.term.recv() => libc::SIGTERM,
            Some(()) = self.hup.recv() => libc::SIGHUP,
            else => std::future::pending().await,
        }
    }
}
