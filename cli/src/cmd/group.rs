//! The command of `baton run` in a process group of its own, so that every signal reaches
//! its whole tree (`sh -c '… | cat >> log'` included), and a reaper in that group that
//! kills the group when baton dies, however it dies (SIGKILL and the OOM killer included):
//! no process of the command's tree outlives baton's lease.
//!
//! The reaper is a bare `fork` of baton that leads the group and blocks reading a pipe
//! whose only writer is baton: the kernel closes that end when baton dies, the read ends,
//! and the reaper sends SIGKILL to its group (itself included). It ignores the signals
//! baton sends the group, so the group (and its id) lives as long as baton needs it.

use std::io;

/// The signals the reaper ignores: every one baton forwards or sends first.
const IGNORED: [libc::c_int; 7] =
    [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2, libc::SIGPIPE];

/// The command's process group and its reaper.
#[derive(Debug)]
pub(crate) struct Group {
    /// The group id (the reaper's pid).
    pub(crate) pgid: libc::pid_t,
    /// The pipe's write end: closed when baton dies, or when the group is ended.
    alarm: libc::c_int,
    /// The terminal handed to the group, to take back at the end.
    terminal: Option<libc::pid_t>,
}

impl Group {
    /// Forks the reaper and makes it the leader of a new process group.
    pub(crate) fn start() -> io::Result<Group> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a valid array of two ints.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
            return Err(io::Error::last_os_error());
        }
        let (read, write) = (fds[0], fds[1]);
        // SAFETY: the child runs only async-signal-safe calls (sigaction via `signal`,
        // setpgid, dup2, close_range, read, kill, _exit) and never returns.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            let e = io::Error::last_os_error();
            // SAFETY: closing the two fds this function opened.
            unsafe {
                libc::close(read);
                libc::close(write);
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: see above; this is the child and it ends in `_exit`.
            unsafe { reap(read) }
        }
        // SAFETY: plain syscalls on our own child and our own fd.
        unsafe {
            // Also in the parent, as shells do: the command joins the group right after,
            // whichever of the two runs first.
            libc::setpgid(pid, pid);
            libc::close(read);
        }
        Ok(Group { pgid: pid, alarm: write, terminal: None })
    }

    /// Gives the terminal to the group when baton runs in the terminal's foreground (so
    /// the command can read it, and Ctrl-C reaches the command's whole group).
    pub(crate) fn take_terminal(&mut self) {
        // SAFETY: plain syscalls on fd 0.
        unsafe {
            if libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() && libc::tcsetpgrp(0, self.pgid) == 0 {
                self.terminal = Some(libc::getpgrp());
            }
        }
    }

    /// Sends `sig` to every process of the group.
    pub(crate) fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill has no memory-safety preconditions; the group lives while its
        // reaper does, and the reaper lives until `end`.
        unsafe {
            libc::kill(-self.pgid, sig);
        }
    }

    /// Kills whatever is left of the group (the reaper too), reaps the reaper and gives
    /// the terminal back.
    pub(crate) fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.alarm < 0 {
            return;
        }
        self.signal(libc::SIGKILL);
        // SAFETY: our own child and our own fd; SIGTTOU is ignored while a background
        // process takes the terminal back, as shells do.
        unsafe {
            let mut status = 0;
            libc::waitpid(self.pgid, &mut status, 0);
            libc::close(self.alarm);
            if let Some(own) = self.terminal.take() {
                let before = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, own);
                libc::signal(libc::SIGTTOU, before);
            }
        }
        self.alarm = -1;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The reaper: waits for the pipe to close, then kills its group.
///
/// # Safety
/// Only in the child of `fork`, with `read` the pipe's read end.
unsafe fn reap(read: libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls only (see `Group::start`).
    unsafe {
        libc::setpgid(0, 0);
        for sig in IGNORED {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Nothing of baton's stays open here (connections, its stdout): fd 3 is the pipe.
        libc::dup2(read, 3);
        libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
        for fd in 0..3 {
            libc::close(fd);
        }
        let mut byte = 0u8;
        loop {
            let n = libc::read(3, (&raw mut byte).cast(), 1);
            if n == -1 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
        }
        libc::kill(0, libc::SIGKILL);
        libc::_exit(0)
    }
}
