//! The command of `baton run` on the platforms other than Linux (macOS and the other Unixes,
//! Windows): the same interface as `group.rs`, with what the platform gives and no more
//! (docs/platforms.md, "What differs").
//!
//! - **Unix without Linux's subreaper** (macOS): the command leads a process group of its
//!   own (the terminal's foreground when baton had it); signals go to that group, and at its
//!   end the group gets SIGKILL. A process that leaves the group (`setsid`, a `set -m` job,
//!   GNU `timeout`'s own group) is out of reach, and if baton itself is SIGKILLed, the
//!   command goes on (the lease then ends at the store). A stopped command (Ctrl-Z) is not
//!   seen as stopped: its lease is renewed (or runs out, under `--ttl`) as if it ran.
//! - **Windows**: there are no signals to send. Where Unix sends `--signal` (the lease lost,
//!   or within `--grace` of its local end) the command is terminated at once
//!   (`TerminateProcess`): it gets no grace, and it is never left running past the local end
//!   of the lease. The processes it started itself are not tracked (no Job Object) and go
//!   on. Ctrl-C / Ctrl-Break reach the command through the console it shares with baton,
//!   so baton does not forward them.
//!
//! The command is a `tokio::process` child watched by a task; [`Group::kill_all`] asks that
//! task to kill it (the task reports the command's end either way).

use std::ffi::{OsStr, OsString};
use std::io;
use std::process::ExitStatus;

use tokio::sync::mpsc;

/// What the watcher reports about the command after its start.
#[derive(Debug)]
pub(crate) enum Event {
    /// Stopped by this signal: never reported here (see the module's doc).
    #[allow(dead_code)]
    Stopped(i32),
    /// Continued after a stop: never reported here.
    #[allow(dead_code)]
    Continued,
    /// Ended.
    Exited(ExitStatus),
    /// The watcher is gone without saying how the command ended.
    ReaperGone,
}

/// Why the command did not start.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// baton could not prepare: an internal error.
    #[allow(dead_code)]
    Setup(io::Error),
    /// Starting the program failed with this error (not found, not executable…).
    Exec(io::Error),
    /// An argument or environment entry holds a NUL byte.
    Nul,
}

/// The command (and, on Unix, its process group).
#[derive(Debug)]
pub(crate) struct Group {
    /// The command's pid (on Unix also its process group's id).
    #[cfg_attr(windows, allow(dead_code))]
    pub(crate) pid: i32,
    /// Dropping it, or a message on it, makes the watcher kill the command.
    kill: Option<mpsc::UnboundedSender<()>>,
    /// The terminal handed to the command's group: baton's group, to give it back to.
    #[cfg(unix)]
    terminal: Option<libc::pid_t>,
    ended: bool,
}

fn has_nul(s: &OsStr) -> bool {
    s.to_string_lossy().contains('\0')
}

/// Whether baton runs in its terminal's foreground (so the command gets the terminal).
#[cfg(unix)]
fn foreground() -> bool {
    // SAFETY: plain syscalls on fd 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

impl Group {
    /// Starts the command with `env` added to baton's own environment. Returns once it
    /// runs, with the channel of the watcher's reports.
    pub(crate) fn spawn(
        program: &OsStr,
        args: &[OsString],
        env: &[(&str, String)],
    ) -> Result<(Group, mpsc::UnboundedReceiver<Event>), SpawnError> {
        if has_nul(program) || args.iter().any(|a| has_nul(a)) || env.iter().any(|(_, v)| v.contains('\0')) {
            return Err(SpawnError::Nul);
        }
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        // The watcher task ending for any reason (the runtime shutting down) kills it.
        cmd.kill_on_drop(true);
        #[cfg(unix)]
        let give_terminal = foreground();
        #[cfg(unix)]
        {
            // SAFETY: the closure runs between fork and exec and makes only
            // async-signal-safe calls.
            unsafe {
                cmd.pre_exec(move || {
                    // A process group of its own, the terminal's foreground if baton had it.
                    libc::setpgid(0, 0);
                    if give_terminal {
                        libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                        libc::tcsetpgrp(0, libc::getpid());
                        libc::signal(libc::SIGTTOU, libc::SIG_DFL);
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidInput && e.to_string().contains("nul") {
                SpawnError::Nul
            } else {
                SpawnError::Exec(e)
            }
        })?;
        let pid = child.id().map_or(0, |p| p as i32);
        let (tx, rx) = mpsc::unbounded_channel();
        let (kill_tx, mut kill_rx) = mpsc::unbounded_channel::<()>();
        tokio::spawn(async move {
            let status = tokio::select! {
                st = child.wait() => st,
                _ = kill_rx.recv() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let _ = tx.send(match status {
                Ok(st) => Event::Exited(st),
                Err(_) => Event::ReaperGone,
            });
        });
        #[cfg(unix)]
        let terminal = {
            // SAFETY: getpgrp has no preconditions.
            let own = unsafe { libc::getpgrp() };
            if give_terminal {
                // As shells do, from both sides of the fork: whichever runs first wins.
                // SAFETY: plain syscalls on fd 0, SIGTTOU ignored meanwhile.
                unsafe {
                    let before = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                    libc::setpgid(pid, pid);
                    libc::tcsetpgrp(0, pid);
                    libc::signal(libc::SIGTTOU, before);
                }
            }
            give_terminal.then_some(own)
        };
        let group = Group {
            pid,
            kill: Some(kill_tx),
            #[cfg(unix)]
            terminal,
            ended: false,
        };
        Ok((group, rx))
    }

    /// Sends `sig` to the command's process group (Unix); on Windows, terminates the
    /// command for any signal but SIGCONT (there are no signals: see the module's doc).
    pub(crate) fn signal(&self, sig: i32) {
        if self.ended {
            return;
        }
        #[cfg(unix)]
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(-self.pid, sig);
            libc::kill(self.pid, sig);
        }
        #[cfg(windows)]
        if sig != super::run::sig::SIGCONT {
            self.kill_now();
        }
    }

    /// A signal baton received, for the command: sent on as [`Group::signal`] on Unix; on
    /// Windows the console already gave the command its own Ctrl-C / Ctrl-Break.
    pub(crate) fn forward(&self, sig: i32) {
        #[cfg(unix)]
        self.signal(sig);
        #[cfg(windows)]
        let _ = sig;
    }

    /// Kills the command now (SIGKILL to its group on Unix, `TerminateProcess` on Windows):
    /// its status then reports that death, unless it ended before.
    pub(crate) fn kill_all(&mut self) {
        self.kill_now();
    }

    fn kill_now(&self) {
        #[cfg(unix)]
        if !self.ended {
            // SAFETY: as in `signal`.
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
            }
        }
        if let Some(k) = &self.kill {
            let _ = k.send(());
        }
    }

    /// Gives the terminal back to baton (the command stopped) or to the command's group.
    pub(crate) fn terminal_to(&self, command: bool) {
        #[cfg(unix)]
        if let Some(own) = self.terminal {
            let to = if command { self.pid } else { own };
            // SAFETY: plain syscalls on fd 0; SIGTTOU is ignored meanwhile, as shells do.
            unsafe {
                let before = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, to);
                libc::signal(libc::SIGTTOU, before);
            }
        }
        #[cfg(not(unix))]
        let _ = command;
    }

    /// Kills whatever is left (the command's process group on Unix), and gives the
    /// terminal back.
    pub(crate) fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.ended {
            return;
        }
        self.kill_all();
        self.ended = true;
        self.kill = None;
        self.terminal_to(false);
        #[cfg(unix)]
        {
            self.terminal = None;
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Linux makes baton a child subreaper here; no other platform has one.
pub(crate) fn become_subreaper() {}
