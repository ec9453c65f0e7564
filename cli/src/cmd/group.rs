//! The command of `baton run` and every process it starts, whatever their process group or
//! session, found and stopped: on a lost lease, at the command's end, and when baton dies,
//! however it dies (SIGKILL and the OOM killer included).
//!
//! baton forks a **reaper**, a bare `fork` of baton that stays in baton's process group,
//! makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`) and forks the command: so the
//! reaper is an ancestor of every process of the command's tree, and every orphan of the
//! tree (a double fork, `setsid`, a `set -m` job, GNU `timeout`'s own group) is reparented
//! to it, never to init. The command leads a process group of its own (the terminal's
//! foreground when baton had it, so Ctrl-C and Ctrl-Z reach it and not baton).
//!
//! Where the machine allows it (a writable cgroup v2 hierarchy with `cgroup.kill`, Linux
//! 5.14+), the command also runs in a cgroup of its own, created for it: `cgroup.kill`
//! stops every process in it at once, with no race against a process that forks.
//!
//! The reaper reaps every process reparented to it, reports the command's start, stops,
//! continues and end to baton over a pipe, and blocks on a second pipe whose only writer is
//! baton: when that closes (baton dies, or asks for the end) it kills the whole tree: the
//! cgroup (`cgroup.kill`), then, until it has no child left, every child it has (whose own
//! children are then reparented to it). It ignores the signals baton sends the tree.
//!
//! baton itself signals the tree by walking the reaper's descendants in `/proc` (and the
//! cgroup's members): `--signal` on a lost lease, forwarded signals.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

/// The signals the reaper ignores: every one baton forwards or sends the tree, and the
/// terminal's job-control signals (Ctrl-Z stops the command, never its reaper).
const IGNORED: [libc::c_int; 12] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGPIPE,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGWINCH,
];

/// Record tags of the reaper's reports: `[tag, value]`, two native i32s.
const STARTED: i32 = 1;
const EXEC_FAILED: i32 = 2;
const EXITED: i32 = 3;
const STOPPED: i32 = 4;
const CONTINUED: i32 = 5;

/// What the reaper reports about the command after its start.
#[derive(Debug)]
pub(crate) enum Event {
    /// Stopped by this signal (SIGTSTP, SIGSTOP, SIGTTIN, SIGTTOU).
    Stopped(i32),
    /// Continued after a stop.
    Continued,
    /// Ended.
    Exited(std::process::ExitStatus),
    /// The reaper is gone without saying how the command ended.
    ReaperGone,
}

/// Why the command did not start.
#[derive(Debug)]
pub(crate) enum SpawnError {
    /// baton could not prepare (a pipe, the fork): an internal error.
    Setup(io::Error),
    /// `exec` failed with this error (not found, not executable…).
    Exec(io::Error),
    /// An argument or environment entry holds a NUL byte.
    Nul,
}

/// The command's cgroup v2 (when the machine allows one).
#[derive(Debug)]
struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// A fresh cgroup beside baton's own in the cgroup v2 hierarchy, or None when there is
    /// none, it is not writable, or it lacks `cgroup.kill`.
    fn create() -> Option<Cgroup> {
        if std::env::var_os("BATON_NO_CGROUP").is_some() {
            return None;
        }
        let mount = std::fs::read_to_string("/proc/self/mountinfo").ok()?.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split_whitespace().next()? == "cgroup2")
                .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("0::").map(|p| p.trim().trim_start_matches('/').to_owned()))?;
        // A cgroup whose parent has controllers enabled for its children may not hold
        // processes ("no internal processes"): a child of baton's own is always allowed,
        // baton being in it.
        let parent = mount.join(own);
        static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("baton-run-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let cg = Cgroup { dir };
        if !cg.dir.join("cgroup.kill").exists() {
            cg.remove();
            return None;
        }
        Some(cg)
    }

    fn remove(&self) {
        let _ = std::fs::remove_dir(&self.dir);
    }

    /// The member pids.
    fn members(&self) -> Vec<libc::pid_t> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    }
}

/// Everything the forked processes need, allocated before the fork.
struct Prepared {
    argv: Vec<CString>,
    envp: Vec<CString>,
    procs: Option<CString>,
    kill: Option<CString>,
    events: Option<CString>,
    dir: Option<CString>,
}

fn cstr(bytes: &[u8]) -> Result<CString, SpawnError> {
    CString::new(bytes).map_err(|_| SpawnError::Nul)
}

/// The command's tree and its reaper.
#[derive(Debug)]
pub(crate) struct Group {
    /// The reaper's pid.
    reaper: libc::pid_t,
    /// The command's pid, which is also its process group's id.
    pub(crate) pid: libc::pid_t,
    /// The pipe's write end: closed when baton dies, or when the tree is ended.
    alarm: libc::c_int,
    cgroup: Option<Cgroup>,
    /// The terminal handed to the command's group: baton's group, to give it back to.
    terminal: Option<libc::pid_t>,
    /// The reaper was waited for.
    reaped: bool,
}

/// Whether baton runs in its terminal's foreground (so the command gets the terminal).
fn foreground() -> bool {
    // SAFETY: plain syscalls on fd 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

impl Group {
    /// Starts the reaper and, from it, the command with `env` added to baton's own
    /// environment. Returns once the command runs (its `exec` succeeded) with the channel
    /// of the reaper's later reports.
    pub(crate) fn spawn(
        program: &OsStr,
        args: &[OsString],
        env: &[(&str, String)],
    ) -> Result<(Group, mpsc::UnboundedReceiver<Event>), SpawnError> {
        let cgroup = Cgroup::create();
        let path_of = |f: &str| -> Result<Option<CString>, SpawnError> {
            cgroup.as_ref().map(|c| cstr(c.dir.join(f).as_os_str().as_bytes())).transpose()
        };
        let mut argv = vec![cstr(program.as_bytes())?];
        for a in args {
            argv.push(cstr(a.as_bytes())?);
        }
        let mut envp = Vec::new();
        for (k, v) in std::env::vars_os() {
            if env.iter().any(|(name, _)| OsStr::new(name) == k) {
                continue;
            }
            let mut kv = k.into_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            envp.push(cstr(&kv)?);
        }
        for (k, v) in env {
            envp.push(cstr(format!("{k}={v}").as_bytes())?);
        }
        let prep = Prepared {
            argv,
            envp,
            procs: path_of("cgroup.procs")?,
            kill: path_of("cgroup.kill")?,
            events: path_of("cgroup.events")?,
            dir: cgroup.as_ref().map(|c| cstr(c.dir.as_os_str().as_bytes())).transpose()?,
        };
        // Asked once, before the command can take the terminal.
        let give_terminal = foreground();
        let started = Self::fork_reaper(&prep, give_terminal);
        let (reaper, alarm, status) = match started {
            Ok(t) => t,
            Err(e) => {
                if let Some(c) = &cgroup {
                    c.remove();
                }
                return Err(SpawnError::Setup(e));
            }
        };
        // SAFETY: getpgrp has no preconditions.
        let own_group = unsafe { libc::getpgrp() };
        let mut group =
            Group { reaper, pid: 0, alarm, cgroup, terminal: give_terminal.then_some(own_group), reaped: false };
        // The first report: started, or why not.
        match read_record(status) {
            Some([STARTED, pid]) => group.pid = pid,
            Some([EXEC_FAILED, errno]) => {
                // SAFETY: our own fd.
                unsafe { libc::close(status) };
                group.terminal = None;
                group.finish();
                return Err(SpawnError::Exec(io::Error::from_raw_os_error(errno)));
            }
            _ => {
                // SAFETY: our own fd.
                unsafe { libc::close(status) };
                group.terminal = None;
                group.finish();
                return Err(SpawnError::Setup(io::Error::other("the command's reaper ended before starting it")));
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        // A plain thread: blocking reads, and it ends with the pipe (the reaper's exit).
        let reader = std::thread::Builder::new().name("baton-reaper-reports".into()).spawn(move || {
            loop {
                let event = match read_record(status) {
                    Some([EXITED, st]) => Event::Exited(std::os::unix::process::ExitStatusExt::from_raw(st)),
                    Some([STOPPED, sig]) => Event::Stopped(sig),
                    Some([CONTINUED, _]) => Event::Continued,
                    Some(_) => continue,
                    None => Event::ReaperGone,
                };
                let gone = matches!(event, Event::ReaperGone);
                if tx.send(event).is_err() || gone {
                    break;
                }
            }
            // SAFETY: the fd is this thread's alone.
            unsafe { libc::close(status) };
        });
        if let Err(e) = reader {
            group.finish();
            return Err(SpawnError::Setup(e));
        }
        Ok((group, rx))
    }

    /// Forks the reaper, which forks the command. Returns (reaper pid, alarm write end,
    /// status read end).
    fn fork_reaper(prep: &Prepared, give_terminal: bool) -> io::Result<(libc::pid_t, libc::c_int, libc::c_int)> {
        let alarm = pipe()?;
        let status = match pipe() {
            Ok(p) => p,
            Err(e) => {
                close_pair(alarm);
                return Err(e);
            }
        };
        let mut argv: Vec<*const libc::c_char> = prep.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = prep.envp.iter().map(|a| a.as_ptr()).collect();
        envp.push(std::ptr::null());
        let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        let child = Child {
            alarm: alarm[0],
            status: status[1],
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            procs: ptr(&prep.procs),
            kill: ptr(&prep.kill),
            events: ptr(&prep.events),
            dir: ptr(&prep.dir),
            give_terminal,
        };
        // SAFETY: the child runs only async-signal-safe calls on memory prepared above
        // (see `reaper`), and never returns.
        let pid = unsafe { libc::fork() };
        if pid == -1 {
            let e = io::Error::last_os_error();
            close_pair(alarm);
            close_pair(status);
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: this is the child; it ends in `_exit`.
            unsafe { reaper(&child) }
        }
        // SAFETY: our own fds.
        unsafe {
            libc::close(alarm[0]);
            libc::close(status[1]);
        }
        Ok((pid, alarm[1], status[0]))
    }

    /// Every live process of the command's tree: the reaper's descendants, and the
    /// cgroup's members.
    fn members(&self) -> Vec<libc::pid_t> {
        let mut all = descendants(self.reaper);
        if let Some(cg) = &self.cgroup {
            for p in cg.members() {
                if !all.contains(&p) && p != self.reaper {
                    all.push(p);
                }
            }
        }
        all
    }

    /// Sends `sig` to every process of the command's tree, whatever its group or session
    /// (SIGKILL: see [`Group::kill_all`]).
    pub(crate) fn signal(&self, sig: libc::c_int) {
        if self.reaped {
            return;
        }
        // SAFETY: kill has no memory-safety preconditions. The command's group first (what
        // a terminal would reach), then each process found.
        unsafe {
            libc::kill(-self.pid, sig);
        }
        for p in self.members() {
            // SAFETY: as above.
            unsafe {
                libc::kill(p, sig);
            }
        }
    }

    /// A signal baton received, for the command's whole tree: as [`Group::signal`].
    pub(crate) fn forward(&self, sig: libc::c_int) {
        self.signal(sig);
    }

    /// Kills the whole tree now (the reaper does it, and ends): what the command's
    /// status then reports is its death by SIGKILL, unless it ended before.
    pub(crate) fn kill_all(&mut self) {
        if self.alarm >= 0 {
            // SAFETY: our own fd; closing it is the reaper's cue.
            unsafe { libc::close(self.alarm) };
            self.alarm = -1;
        }
    }

    /// Gives the terminal back to baton (when the command is stopped, so that Ctrl-C
    /// reaches baton) or to the command's group again.
    pub(crate) fn terminal_to(&self, command: bool) {
        if let Some(own) = self.terminal {
            let to = if command { self.pid } else { own };
            // SAFETY: plain syscalls on fd 0; SIGTTOU is ignored while a background
            // process sets the foreground group, as shells do.
            unsafe {
                let before = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, to);
                libc::signal(libc::SIGTTOU, before);
            }
        }
    }

    /// Kills whatever is left of the tree, waits for the reaper (whose end means that the
    /// tree is gone), removes the cgroup and gives the terminal back.
    pub(crate) fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.reaped {
            return;
        }
        self.kill_all();
        // SAFETY: our own child.
        unsafe {
            let mut status = 0;
            while libc::waitpid(self.reaper, &mut status, 0) == -1 && *libc::__errno_location() == libc::EINTR {}
        }
        self.reaped = true;
        // The reaper gone another way (killed): what it left is reparented to baton, a
        // subreaper too. (Bounded: each round kills a generation.)
        for _ in 0..1000 {
            let left = descendants(std::process::id() as libc::pid_t);
            if left.is_empty() {
                break;
            }
            for p in left {
                // SAFETY: as in `signal`.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            // SAFETY: reaping our own children (the reparented ones).
            unsafe {
                let mut st = 0;
                while libc::waitpid(-1, &mut st, libc::WNOHANG) > 0 {}
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if let Some(cg) = self.cgroup.take() {
            cg.remove();
        }
        self.terminal_to(false);
        self.terminal = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Makes baton a child subreaper: if the reaper is killed, what it left comes to baton,
/// which kills it in [`Group::end`].
pub(crate) fn become_subreaper() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1u64, 0u64, 0u64, 0u64);
    }
}

/// Live (non-zombie) descendants of `root`, from `/proc/<pid>/task/<tid>/children`, or
/// from every process's parent in `/proc/<pid>/stat` where the kernel lacks that file.
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let children_file = Path::new("/proc/self/task").join(std::process::id().to_string()).join("children");
    let mut out = Vec::new();
    if children_file.exists() {
        let mut todo = vec![root];
        while let Some(p) = todo.pop() {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else { continue };
            for t in tasks.flatten() {
                let Ok(text) = std::fs::read_to_string(t.path().join("children")) else { continue };
                for c in text.split_whitespace().filter_map(|c| c.parse::<libc::pid_t>().ok()) {
                    if !out.contains(&c) && out.len() < 100_000 {
                        out.push(c);
                        todo.push(c);
                    }
                }
            }
        }
    } else {
        let mut parent_of = Vec::new();
        if let Ok(procs) = std::fs::read_dir("/proc") {
            for e in procs.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else { continue };
                if let Some((_, ppid)) = stat_of(pid) {
                    parent_of.push((pid, ppid));
                }
            }
        }
        let mut todo = vec![root];
        while let Some(p) = todo.pop() {
            for &(c, pp) in &parent_of {
                if pp == p && !out.contains(&c) {
                    out.push(c);
                    todo.push(c);
                }
            }
        }
    }
    out.retain(|&p| stat_of(p).is_some_and(|(state, _)| state != 'Z'));
    out
}

/// (state, parent pid) of `pid`.
fn stat_of(pid: libc::pid_t) -> Option<(char, libc::pid_t)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid …": comm may hold spaces and parentheses; it ends at the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

fn pipe() -> io::Result<[libc::c_int; 2]> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(fds)
}

fn close_pair(fds: [libc::c_int; 2]) {
    // SAFETY: our own fds.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
}

/// One `[tag, value]` record from the reaper, or None at the pipe's end.
fn read_record(fd: libc::c_int) -> Option<[i32; 2]> {
    let mut buf = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        // SAFETY: writing within `buf`.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), 8 - got) };
        if n == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return None;
        }
        got += n as usize;
    }
    let tag = i32::from_ne_bytes(buf[..4].try_into().ok()?);
    let value = i32::from_ne_bytes(buf[4..].try_into().ok()?);
    Some([tag, value])
}

/// What the reaper needs, as raw pointers into memory the parent keeps alive across the
/// fork (the child has its own copy of it).
struct Child {
    alarm: libc::c_int,
    status: libc::c_int,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    procs: *const libc::c_char,
    kill: *const libc::c_char,
    events: *const libc::c_char,
    dir: *const libc::c_char,
    give_terminal: bool,
}

/// Writes one record (async-signal-safe).
///
/// # Safety
/// Only syscalls; `fd` any fd.
unsafe fn send(fd: libc::c_int, tag: i32, value: i32) {
    let mut buf = [0u8; 8];
    buf[..4].copy_from_slice(&tag.to_ne_bytes());
    buf[4..].copy_from_slice(&value.to_ne_bytes());
    // SAFETY: reading within `buf`; 8 bytes are below PIPE_BUF, so the write is whole.
    unsafe { while libc::write(fd, buf.as_ptr().cast(), 8) == -1 && *libc::__errno_location() == libc::EINTR {} }
}

extern "C" fn on_sigchld(_: libc::c_int) {}

/// The reaper.
///
/// # Safety
/// Only in the child of `fork`, with `c` pointing into memory valid in it. Makes only
/// async-signal-safe calls and allocates nothing.
unsafe fn reaper(c: &Child) -> ! {
    // SAFETY: see above.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1u64, 0u64, 0u64, 0u64);
        for sig in IGNORED {
            libc::signal(sig, libc::SIG_IGN);
        }
        // SIGCHLD interrupts the wait below (ppoll unblocks it only while waiting).
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigchld as *const () as usize;
        act.sa_flags = 0;
        libc::sigaction(libc::SIGCHLD, &act, std::ptr::null_mut());
        // Nothing of baton's stays open here (connections, sockets) but the command's
        // stdin, stdout, stderr and the two pipes.
        let mut keep = [0, 1, 2, c.alarm, c.status];
        keep.sort_unstable();
        let mut from = 0u32;
        for &fd in &keep {
            if fd as u32 > from {
                libc::syscall(libc::SYS_close_range, from, fd as u32 - 1, 0u32);
            }
            from = fd as u32 + 1;
        }
        libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32);

        let Ok(err) = raw_pipe() else {
            send(c.status, EXEC_FAILED, libc::EAGAIN);
            libc::_exit(0)
        };
        let cmd = libc::fork();
        if cmd == -1 {
            send(c.status, EXEC_FAILED, *libc::__errno_location());
            libc::_exit(0)
        }
        if cmd == 0 {
            command(c, err[1]);
        }
        libc::close(err[1]);
        let mut errno = [0u8; 4];
        let n = loop {
            let n = libc::read(err[0], errno.as_mut_ptr().cast(), 4);
            if n == -1 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break n;
        };
        libc::close(err[0]);
        if n == 4 {
            let mut st = 0;
            libc::waitpid(cmd, &mut st, 0);
            send(c.status, EXEC_FAILED, i32::from_ne_bytes(errno));
            libc::_exit(0)
        }
        send(c.status, STARTED, cmd);

        let mut done = false;
        let empty: libc::sigset_t = {
            let mut s: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut s);
            s
        };
        loop {
            reap_all(c, cmd, &mut done, true);
            let mut fds = [libc::pollfd { fd: c.alarm, events: libc::POLLIN, revents: 0 }];
            let wait = libc::timespec { tv_sec: 1, tv_nsec: 0 };
            let r = libc::ppoll(fds.as_mut_ptr(), 1, &wait, &empty);
            if r > 0 {
                let mut byte = 0u8;
                let n = libc::read(c.alarm, (&raw mut byte).cast(), 1);
                if n == 0 || (n == -1 && *libc::__errno_location() != libc::EINTR) {
                    break;
                }
            }
        }
        kill_tree(c, cmd, &mut done);
        libc::_exit(0)
    }
}

/// Reaps every child that ended; reports the command's stops, continues and end.
///
/// # Safety
/// In the reaper only.
unsafe fn reap_all(c: &Child, cmd: libc::pid_t, done: &mut bool, report_stops: bool) {
    // SAFETY: syscalls only.
    unsafe {
        loop {
            let mut st = 0;
            let flags = libc::WNOHANG | if report_stops { libc::WUNTRACED | libc::WCONTINUED } else { 0 };
            let p = libc::waitpid(-1, &mut st, flags);
            if p <= 0 {
                break;
            }
            if p != cmd || *done {
                continue;
            }
            if libc::WIFSTOPPED(st) {
                send(c.status, STOPPED, libc::WSTOPSIG(st));
            } else if libc::WIFCONTINUED(st) {
                send(c.status, CONTINUED, 0);
            } else {
                *done = true;
                send(c.status, EXITED, st);
            }
        }
    }
}

/// Kills every process of the tree and waits until none is left; removes the cgroup.
///
/// # Safety
/// In the reaper only.
unsafe fn kill_tree(c: &Child, cmd: libc::pid_t, done: &mut bool) {
    // SAFETY: syscalls on paths and buffers of our own.
    unsafe {
        if !c.kill.is_null() {
            let fd = libc::open(c.kill, libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, b"1".as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
        libc::kill(-cmd, libc::SIGKILL);
        // /proc/self/task/<pid>/children: the reaper has one thread, its pid.
        let mut path = [0u8; 64];
        let head = b"/proc/self/task/";
        path[..head.len()].copy_from_slice(head);
        let at = head.len() + write_num(&mut path[head.len()..], libc::getpid() as u32);
        let tail = b"/children\0";
        path[at..at + tail.len()].copy_from_slice(tail);
        // Bounded: each round kills the children the reaper has, whose own children it
        // then adopts; a tree of a few thousand generations ends well within this.
        for _ in 0..100_000 {
            let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
            let mut any = false;
            if fd >= 0 {
                let mut buf = [0u8; 4096];
                let mut num: i64 = -1;
                loop {
                    let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    for &b in &buf[..n as usize] {
                        if b.is_ascii_digit() {
                            num = num.max(0) * 10 + i64::from(b - b'0');
                        } else if num >= 0 {
                            libc::kill(num as libc::pid_t, libc::SIGKILL);
                            any = true;
                            num = -1;
                        }
                    }
                }
                if num >= 0 {
                    libc::kill(num as libc::pid_t, libc::SIGKILL);
                    any = true;
                }
                libc::close(fd);
            }
            // Wait for one death (or none left: ECHILD), then reap the rest that ended.
            let mut st = 0;
            let p = libc::waitpid(-1, &mut st, 0);
            if p == cmd && !*done {
                *done = true;
                send(c.status, EXITED, st);
            }
            reap_all(c, cmd, done, false);
            if p == -1 && *libc::__errno_location() == libc::ECHILD {
                break;
            }
            if !any && fd < 0 {
                // No children file: the waits above end when the group's last one dies.
                libc::kill(-cmd, libc::SIGKILL);
            }
        }
        if !c.events.is_null() {
            // The cgroup empties as its members die; it can be removed once it has.
            for _ in 0..500 {
                let fd = libc::open(c.events, libc::O_RDONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    break;
                }
                let mut buf = [0u8; 256];
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                libc::close(fd);
                let text = &buf[..n.max(0) as usize];
                if text.windows(11).any(|w| w == b"populated 0") {
                    break;
                }
                let pause = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
            libc::rmdir(c.dir);
        }
    }
}

/// Writes `n` in decimal into `out`; returns the digits' count.
fn write_num(out: &mut [u8], mut n: u32) -> usize {
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    len
}

/// # Safety
/// Syscalls only.
unsafe fn raw_pipe() -> Result<[libc::c_int; 2], ()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 { Err(()) } else { Ok(fds) }
}

/// The command's process, between the reaper's fork and `exec`.
///
/// # Safety
/// In the reaper's child only; async-signal-safe calls.
unsafe fn command(c: &Child, err: libc::c_int) -> ! {
    // SAFETY: see above.
    unsafe {
        libc::close(c.alarm);
        libc::close(c.status);
        // A process group of its own, the terminal's foreground if baton had it.
        libc::setpgid(0, 0);
        if c.give_terminal {
            libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            libc::tcsetpgrp(0, libc::getpid());
        }
        if !c.procs.is_null() {
            let fd = libc::open(c.procs, libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
        // The command starts as a shell would start it: default dispositions (Rust
        // ignores SIGPIPE; the reaper ignored more) and no signal blocked.
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execvpe(*c.argv, c.argv, c.envp);
        let e = *libc::__errno_location();
        libc::write(err, e.to_ne_bytes().as_ptr().cast(), 4);
        libc::_exit(127)
    }
}
