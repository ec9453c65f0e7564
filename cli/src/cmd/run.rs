//! `baton run NAME -- CMD…`: run a command while holding a lock.

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use baton::{Client, ErrorKind, LockGuard, LockOptions};
use serde::Serialize;
#[cfg(unix)]
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::UnboundedReceiver;

use super::group::{self, Event, Group, SpawnError};
use crate::exit::{self, Failure};
use crate::output::{self, human, say};
use crate::url::StoreChoice;

/// Run a command while holding a lock
///
/// Waits for the lock NAME, runs CMD with BATON_FENCING_TOKEN and BATON_LOCK_NAME in its
/// environment, releases the lock when CMD ends and exits with CMD's exit code.
///
/// CMD is stopped before the lease can end: it gets --signal (SIGTERM) --grace before the
/// holder's local end of the lease, and SIGKILL at that end, which comes before the store's
/// own end; baton then releases the lock and exits 76. A lease that renewals keep (the
/// watchdog, when --ttl is not given) never comes near its end, so a healthy holder is never
/// signalled. --grace is at most half the lease (under --ttl 2s, SIGTERM comes about 1s after the start). A lease lost
/// another way (the store refused a renewal) sends --signal at once, and SIGKILL when the
/// grace is over, never later than the local end.
///
/// Every process CMD starts is stopped, whatever its process group or session (GNU
/// `timeout`, `set -m` jobs, `setsid`, double forks): CMD runs under a reaper that is a
/// child subreaper (every orphan of the tree comes back to it) and, where the machine allows
/// it, in a cgroup v2 of its own, killed with `cgroup.kill`. Processes CMD leaves behind are
/// killed when it ends, before the lock is released; if baton itself dies, even of SIGKILL,
/// the reaper kills the whole tree at once, before the lease can lapse. Only a process
/// started outside baton's tree on the command's behalf (a service manager: systemd-run) is
/// out of reach.
///
/// SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM sent to baton are
/// forwarded to CMD's whole tree (baton then releases and exits with CMD's code, 128+N if
/// the signal ended it); while waiting for the lock they end the wait, and baton exits 128+N.
///
/// Ctrl-Z (or SIGSTOP) stops CMD, not baton: baton takes the terminal back and keeps the
/// lease for at most one lease length (--ttl, or the watchdog lease) from the stop. CMD
/// continued within it (SIGCONT) goes on under the same lease; otherwise baton kills its
/// tree with SIGKILL, releases the lock and exits 76, so a stopped CMD never holds the lock
/// for ever and never runs again unprotected. A signal forwarded while CMD is stopped is
/// followed by SIGCONT, so that CMD can act on it.
///
/// That is Linux. On macOS CMD's own process group is what is signalled and killed, and a
/// stop is not noticed; on Windows CMD is terminated where --signal would be sent, with no
/// grace, and the processes it starts are not tracked (docs/platforms.md).
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
    /// How long CMD has between --signal and SIGKILL when the lease ends: --signal goes
    /// this long before the lease's local end. At most half the lease.
    #[arg(long, value_name = "DURATION", default_value = "10s", allow_hyphen_values = true)]
    grace: String,
    /// The signal CMD gets --grace before the lease's end, or when it is lost: TERM, INT,
    /// HUP, QUIT, USR1, USR2 or KILL (KILL: at the end, no grace).
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

    // A ttl lease is what was asked; a watchdog's is what the grant left (its lease, less
    // the drift margin and the grant's round trip).
    let lease = ttl.unwrap_or_else(|| guard.lease_remaining());
    group::become_subreaper();
    let (mut group, mut events) = match spawn(&args.cmd, &guard) {
        Ok(c) => c,
        Err(f) => {
            // The command never ran: nothing it did needs the lease, so a release error
            // would only hide the real problem.
            let _ = guard.release().await;
            return Err(f);
        }
    };
    let held_since = Instant::now();
    let (status, ending) = supervise(&mut group, &mut events, &guard, stop, lease, signals).await;
    // Nothing of the command's tree may go on without the lock.
    group.end();
    let held = held_since.elapsed();
    let released = guard.release().await;
    let lost = ending.is_some();

    let status = status.map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot wait for the command: {e}")))?;
    let command_code = status_code(status);
    let outcome = if let Some(ending) = ending {
        let why = match ending {
            Ending::Lost => format!("was lost after {}", human(held)),
            Ending::Expiring => format!("was about to end after {}", human(held)),
            Ending::StoppedTooLong => {
                format!("would have ended while the command was stopped ({} after the stop)", human(lease))
            }
        };
        Err(Failure::new(
            exit::LOST,
            format!("LockLost: the lease on `{name}` {why}; the command was stopped ({})", describe(status)),
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
            command_signal: exit_signal(status),
            lost,
            exit_code: match &outcome {
                Ok(c) => *c,
                Err(f) => f.code,
            },
        };
        say!("{}", serde_json::to_string(&report).unwrap_or_default());
    }
    outcome
}

/// Starts the command under its reaper, with the lock's identity in its environment.
fn spawn(cmd: &[OsString], guard: &LockGuard) -> Result<(Group, UnboundedReceiver<Event>), Failure> {
    let (program, rest) = cmd.split_first().ok_or_else(|| Failure::usage("no command given after NAME"))?;
    let env = [("BATON_FENCING_TOKEN", guard.token().to_string()), ("BATON_LOCK_NAME", guard.name().to_owned())];
    Group::spawn(program, rest, &env).map_err(|e| {
        let shown = program.to_string_lossy();
        match e {
            SpawnError::Exec(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Failure::new(exit::NOT_FOUND, format!("cannot run `{shown}`: command not found"))
            }
            SpawnError::Exec(e) => Failure::new(exit::CANNOT_EXEC, format!("cannot run `{shown}`: {e}")),
            SpawnError::Setup(e) => Failure::new(exit::SOFTWARE, format!("cannot start the command's reaper: {e}")),
            SpawnError::Nul => Failure::usage(format!(
                "InvalidArgument: cannot run `{shown}`: an argument or an environment variable holds a NUL byte"
            )),
        }
    })
}

/// How a command is stopped after its lease is lost.
#[derive(Debug, Clone, Copy)]
struct Stop {
    signal: i32,
    grace: Duration,
}

/// The signals --signal accepts, by name.
const STOP_SIGNALS: [(&str, i32); 7] = [
    ("TERM", sig::SIGTERM),
    ("INT", sig::SIGINT),
    ("HUP", sig::SIGHUP),
    ("QUIT", sig::SIGQUIT),
    ("USR1", sig::SIGUSR1),
    ("USR2", sig::SIGUSR2),
    ("KILL", sig::SIGKILL),
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

/// Why the command was stopped by baton.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The lost signal fired (the local end passed, or the store refused a renewal).
    Lost,
    /// The local end of the lease came within the grace.
    Expiring,
    /// The command stayed stopped (SIGSTOP, Ctrl-Z) for a whole lease.
    StoppedTooLong,
}

/// The grace actually given: none for SIGKILL, and at most half the lease, so that a short
/// lease still leaves the command time to run.
fn effective_grace(stop: Stop, lease: Duration) -> Duration {
    if stop.signal == sig::SIGKILL { Duration::ZERO } else { stop.grace.min(lease / 2) }
}

/// Waits for the command; forwards signals; stops it before the lease's local end (see
/// `Args`' doc). Returns its status and why baton stopped it, if it did.
async fn supervise(
    group: &mut Group,
    events: &mut UnboundedReceiver<Event>,
    guard: &LockGuard,
    stop: Stop,
    lease: Duration,
    signals: &mut Signals,
) -> (std::io::Result<ExitStatus>, Option<Ending>) {
    use tokio::time::Instant;
    let grace = effective_grace(stop, lease);
    let lost = guard.lost();
    tokio::pin!(lost);
    let mut ending: Option<Ending> = None;
    let mut lost_seen = false;
    // When --signal went, and whether the tree was killed.
    let mut signalled: Option<Instant> = None;
    let mut killed = false;
    let mut stopped_since: Option<Instant> = None;
    let (name, token) = (guard.name().to_owned(), guard.token());
    loop {
        // The local end moves with every answered renewal: read it again each time.
        let now = Instant::now();
        let end = now + guard.lease_remaining();
        let mut wake = match signalled {
            Some(at) => (at + grace).min(end),
            None => end.checked_sub(grace).unwrap_or(now),
        };
        if let Some(at) = stopped_since {
            wake = wake.min(at + lease);
        }
        tokio::select! {
            event = events.recv() => match event {
                Some(Event::Exited(status)) => return (Ok(status), ending),
                Some(Event::Stopped(sig)) => {
                    if stopped_since.is_none() {
                        stopped_since = Some(Instant::now());
                        say!(
                            "baton: the command was stopped ({}); the lock `{name}` stays held for at most {} unless it is continued",
                            sig_name(sig), human(lease)
                        );
                    }
                    group.terminal_to(false);
                }
                Some(Event::Continued) => {
                    stopped_since = None;
                    group.terminal_to(true);
                }
                Some(Event::ReaperGone) | None => {
                    return (Err(std::io::Error::other("the command's reaper ended unexpectedly")), ending);
                }
            },
            () = &mut lost, if !lost_seen => {
                lost_seen = true;
                ending = Some(Ending::Lost);
                if signalled.is_none() && !killed {
                    let kill_in = grace.min(guard.lease_remaining());
                    say!(
                        "baton: the lease on `{name}` (token {token}) was lost; sending {} to the command{}",
                        sig_name(stop.signal),
                        if stop.signal == sig::SIGKILL { String::new() } else { format!(" (SIGKILL in {})", human(kill_in)) }
                    );
                    if stop.signal == sig::SIGKILL {
                        group.kill_all();
                        killed = true;
                    } else {
                        group.signal(stop.signal);
                        signalled = Some(Instant::now());
                        if stopped_since.is_some() {
                            group.signal(sig::SIGCONT);
                        }
                    }
                }
            }
            () = tokio::time::sleep_until(wake), if !killed => {
                let now = Instant::now();
                let end = now + guard.lease_remaining();
                if stopped_since.is_some_and(|at| now >= at + lease) {
                    say!("baton: the command stayed stopped for {}; killing it and releasing `{name}`", human(lease));
                    ending.get_or_insert(Ending::StoppedTooLong);
                    group.kill_all();
                    killed = true;
                    continue;
                }
                match signalled {
                    None if now + grace >= end => {
                        ending.get_or_insert(Ending::Expiring);
                        if stop.signal == sig::SIGKILL {
                            say!("baton: the lease on `{name}` (token {token}) ends now; sending SIGKILL to the command");
                            group.kill_all();
                            killed = true;
                        } else {
                            say!(
                                "baton: the lease on `{name}` (token {token}) ends in {}; sending {} to the command (SIGKILL then)",
                                human(end.saturating_duration_since(now)), sig_name(stop.signal)
                            );
                            group.signal(stop.signal);
                            signalled = Some(now);
                        }
                    }
                    Some(at) if now >= (at + grace).min(end) => {
                        say!("baton: the command outlived the grace period; sending SIGKILL");
                        group.kill_all();
                        killed = true;
                    }
                    _ => {}
                }
            }
            sig = signals.recv() => {
                group.forward(sig);
                if stopped_since.is_some() {
                    // A stopped command cannot act on it; it runs under a live lease.
                    group.signal(sig::SIGCONT);
                }
            }
        }
    }
}

/// The shell's convention: the exit code, or 128+N for a death by signal N.
fn status_code(status: ExitStatus) -> u8 {
    match (status.code(), exit_signal(status)) {
        (Some(c), _) => (c & 0xff) as u8,
        (None, Some(s)) => 128u8.saturating_add(s as u8),
        (None, None) => exit::SOFTWARE,
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), exit_signal(status)) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by {}", sig_name(s)),
        _ => status.to_string(),
    }
}

fn sig_name(sig: i32) -> String {
    const OTHERS: [(&str, i32); 6] = [
        ("ALRM", sig::SIGALRM),
        ("STOP", sig::SIGSTOP),
        ("TSTP", sig::SIGTSTP),
        ("TTIN", sig::SIGTTIN),
        ("TTOU", sig::SIGTTOU),
        ("PIPE", sig::SIGPIPE),
    ];
    match STOP_SIGNALS.iter().chain(OTHERS.iter()).find(|(_, num)| *num == sig) {
        Some((name, _)) => format!("SIG{name}"),
        None => format!("signal {sig}"),
    }
}

/// The signal that ended the command (Unix; Windows has none).
#[cfg(unix)]
fn exit_signal(status: ExitStatus) -> Option<i32> {
    status.signal()
}

#[cfg(not(unix))]
fn exit_signal(_: ExitStatus) -> Option<i32> {
    None
}

/// Signal numbers: the platform's own on Unix; on Windows, which has none to send, the
/// Linux numbers, as names for --signal and for exit codes 128+N.
pub(super) mod sig {
    #[cfg(unix)]
    pub(crate) use libc::{
        SIGALRM, SIGCONT, SIGHUP, SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGSTOP, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU,
        SIGUSR1, SIGUSR2,
    };
    #[cfg(not(unix))]
    mod numbers {
        pub(crate) const SIGHUP: i32 = 1;
        pub(crate) const SIGINT: i32 = 2;
        pub(crate) const SIGQUIT: i32 = 3;
        pub(crate) const SIGKILL: i32 = 9;
        pub(crate) const SIGUSR1: i32 = 10;
        pub(crate) const SIGUSR2: i32 = 12;
        pub(crate) const SIGPIPE: i32 = 13;
        pub(crate) const SIGALRM: i32 = 14;
        pub(crate) const SIGTERM: i32 = 15;
        pub(crate) const SIGCONT: i32 = 18;
        pub(crate) const SIGSTOP: i32 = 19;
        pub(crate) const SIGTSTP: i32 = 20;
        pub(crate) const SIGTTIN: i32 = 21;
        pub(crate) const SIGTTOU: i32 = 22;
    }
    #[cfg(not(unix))]
    pub(crate) use numbers::*;
}

/// The signals baton forwards to its command (and that end a wait for the lock).
#[cfg(unix)]
struct Signals {
    streams: Vec<(i32, Signal)>,
}

/// Every signal whose default action would end baton without a release.
#[cfg(unix)]
const FORWARDED: [i32; 7] =
    [sig::SIGINT, sig::SIGTERM, sig::SIGHUP, sig::SIGQUIT, sig::SIGUSR1, sig::SIGUSR2, sig::SIGALRM];

#[cfg(unix)]
impl Signals {
    fn new() -> Result<Signals, Failure> {
        let mut streams = Vec::new();
        for sig in FORWARDED {
            let stream = signal(SignalKind::from_raw(sig))
                .map_err(|e| Failure::new(exit::SOFTWARE, format!("cannot install a signal handler: {e}")))?;
            streams.push((sig, stream));
        }
        Ok(Signals { streams })
    }

    /// The next signal received. (The streams never end while the runtime lives.)
    async fn recv(&mut self) -> i32 {
        std::future::poll_fn(|cx| {
            for (sig, stream) in &mut self.streams {
                if let std::task::Poll::Ready(Some(())) = stream.poll_recv(cx) {
                    return std::task::Poll::Ready(*sig);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Windows: Ctrl-C and Ctrl-Break (as SIGINT and SIGTERM), which end a wait for the lock;
/// the console gives them to the command too, so they are not forwarded (group_portable.rs).
#[cfg(windows)]
struct Signals {
    ctrl_c: tokio::signal::windows::CtrlC,
    ctrl_break: tokio::signal::windows::CtrlBreak,
}

#[cfg(windows)]
impl Signals {
    fn new() -> Result<Signals, Failure> {
        let fail = |e: std::io::Error| Failure::new(exit::SOFTWARE, format!("cannot install a console handler: {e}"));
        Ok(Signals {
            ctrl_c: tokio::signal::windows::ctrl_c().map_err(fail)?,
            ctrl_break: tokio::signal::windows::ctrl_break().map_err(fail)?,
        })
    }

    /// The next Ctrl-C (SIGINT) or Ctrl-Break (SIGTERM).
    async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.ctrl_c.recv() => sig::SIGINT,
            _ = self.ctrl_break.recv() => sig::SIGTERM,
        }
    }
}
