//! Throwaway `redis-server` children on free loopback ports, for the faults no shared
//! server may see (a restart without persistence, a node lost, a replica promoted). The
//! lab starts them at run time; baton's test kit builds its TLS, sentinel and cluster
//! setups on the same type. Each is killed (this child only, by its own handle) when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton::{Error, ErrorKind, Result};

/// Whether `redis-server` can be started from `PATH`.
pub fn redis_server_available() -> bool {
    Command::new("redis-server").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// libfaketime's preload library, when Debian's `faketime` package is installed.
pub fn faketime_lib() -> Option<&'static str> {
    ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// Whether a server whose clock can be stepped ([`OwnRedis::start_with_fake_clock`]) can be
/// started here: `redis-server`, libfaketime and a C compiler (`cc`, for the allocator
/// shim of `glibc_malloc.c`).
pub fn faketime_available() -> bool {
    let cc = Command::new("cc").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    cc && faketime_lib().is_some() && redis_server_available()
}

/// The wall clock of a server started under libfaketime ([`OwnRedis::start_with_fake_clock`]):
/// an offset from the real time in a file the server reads at every clock call. Its
/// monotonic clock is left alone, as an NTP step leaves it.
pub struct FakeClock {
    file: PathBuf,
}

impl FakeClock {
    /// Sets the server's wall clock `secs` seconds off the real time, at once (the file is
    /// replaced whole, so the server never reads half of it).
    ///
    /// # Errors
    /// `Backend` when the file cannot be written.
    pub fn step(&self, secs: i64) -> Result<()> {
        let tmp = self.file.with_extension("new");
        std::fs::write(&tmp, format!("{secs:+}\n"))
            .and_then(|()| std::fs::rename(&tmp, &self.file))
            .map_err(|e| Error::new(ErrorKind::Backend, format!("lab: the fake clock's file: {e}")))
    }
}

/// The files of a server's TLS port: its CA, its certificate and key.
#[derive(Clone, Copy, Debug)]
pub struct TlsFiles<'a> {
    /// The CA that signs clients' (and cluster peers') certificates.
    pub ca: &'a Path,
    /// The server's certificate.
    pub cert: &'a Path,
    /// The server's private key.
    pub key: &'a Path,
}

/// One `redis-server` child: no persistence (`--save '' --appendonly no`), so a restart
/// comes back empty; `port` plain, `tls_port` with TLS when configured with certificates.
/// Its log is `redis.log` in `dir`.
pub struct OwnRedis {
    child: Option<Child>,
    /// Its working directory (removed when dropped).
    pub dir: tempfile::TempDir,
    /// The plain port.
    pub port: u16,
    /// The TLS port, when it has one.
    pub tls_port: Option<u16>,
    args: Vec<String>,
    /// Environment variables set for the process besides the inherited ones.
    env: Vec<(String, String)>,
    /// Whether the child dies with the thread that spawned it (the lab's servers: a lab
    /// interrupted by Ctrl-C leaves none behind).
    tied: bool,
}

impl OwnRedis {
    /// Starts a server and waits (≤ 10 s) until it answers.
    ///
    /// # Errors
    /// `Unsupported` when `redis-server` is not on `PATH`; `Backend` when it does not come up.
    pub async fn start() -> Result<OwnRedis> {
        OwnRedis::start_lab(|_| {}).await
    }

    /// Starts a replica of the server on `master` and waits until its link is up.
    ///
    /// # Errors
    /// As [`OwnRedis::start`]; `Backend` when the replica does not sync in 10 s.
    pub async fn start_replica_of(master: &OwnRedis) -> Result<OwnRedis> {
        let master = master.port.to_string();
        let r = OwnRedis::start_lab(|args| args.extend(["--replicaof".into(), "127.0.0.1".into(), master])).await?;
        r.wait_for(|info| info.contains("master_link_status:up"), "replica link up").await?;
        Ok(r)
    }

    async fn start_lab(extra: impl FnOnce(&mut Vec<String>)) -> Result<OwnRedis> {
        let dir = tempfile::Builder::new()
            .prefix("baton-lab-")
            .tempdir()
            .map_err(|e| Error::new(ErrorKind::Backend, format!("lab: a temp dir: {e}")))?;
        let mut r = OwnRedis::configure(dir, None, |args| {
            args.extend(["--repl-diskless-sync-delay".into(), "0".into()]);
            extra(args);
        })?;
        r.tied = true;
        r.spawn()?;
        r.wait_for(|_| true, "answering").await?;
        Ok(r)
    }

    /// A server whose wall clock is stepped through the returned [`FakeClock`] (an NTP
    /// step, a resumed VM), under libfaketime; started, answering.
    ///
    /// # Errors
    /// `Unsupported` when libfaketime, `cc` or `redis-server` is missing
    /// ([`faketime_available`]); `Backend` when it does not come up.
    pub async fn start_with_fake_clock() -> Result<(OwnRedis, FakeClock)> {
        let dir = tempfile::Builder::new()
            .prefix("baton-lab-")
            .tempdir()
            .map_err(|e| Error::new(ErrorKind::Backend, format!("lab: a temp dir: {e}")))?;
        let (mut r, clock) = OwnRedis::configure_faketime(dir)?;
        r.tied = true;
        r.spawn()?;
        r.wait_for(|_| true, "answering").await?;
        Ok((r, clock))
    }

    /// A plain server in `dir` under libfaketime, not started yet, and its clock (at the
    /// real time until stepped).
    ///
    /// # Errors
    /// As [`OwnRedis::start_with_fake_clock`].
    pub fn configure_faketime(dir: tempfile::TempDir) -> Result<(OwnRedis, FakeClock)> {
        let Some(lib) = faketime_lib() else {
            return Err(Error::new(ErrorKind::Unsupported, "lab: libfaketime is not installed (Debian's `faketime`)"));
        };
        let (src, shim) = (dir.path().join("glibc_malloc.c"), dir.path().join("glibc_malloc.so"));
        std::fs::write(&src, include_str!("glibc_malloc.c"))
            .map_err(|e| Error::new(ErrorKind::Backend, format!("lab: glibc_malloc.c: {e}")))?;
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&shim)
            .arg(&src)
            .arg("-ldl")
            .output()
            .map_err(|e| Error::new(ErrorKind::Unsupported, format!("lab: cannot run cc: {e}")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(Error::new(ErrorKind::Backend, format!("lab: cc glibc_malloc.c: {err}")));
        }
        let clock = FakeClock { file: dir.path().join("faketime") };
        clock.step(0)?;
        let file = clock.file.display().to_string();
        let mut r = OwnRedis::configure(dir, None, |_| {})?;
        r.set_env("LD_PRELOAD", &format!("{}:{lib}", shim.display()));
        r.set_env("FAKETIME_TIMESTAMP_FILE", &file);
        // Read the file at every clock call, not once a few seconds: the step is seen at once.
        r.set_env("FAKETIME_NO_CACHE", "1");
        r.set_env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        Ok((r, clock))
    }

    /// A server on free loopback ports in `dir`, not started yet ([`OwnRedis::run`],
    /// [`OwnRedis::spawn`]): no persistence, a TLS port too with `tls` (clients'
    /// certificates not required), then the arguments `extra` adds.
    ///
    /// # Errors
    /// `Backend` when no free loopback port is found.
    pub fn configure(
        dir: tempfile::TempDir,
        tls: Option<TlsFiles<'_>>,
        extra: impl FnOnce(&mut Vec<String>),
    ) -> Result<OwnRedis> {
        let port = free_port()?;
        let mut args: Vec<String> =
            ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].iter().map(|s| s.to_string()).collect();
        args.extend(["--port".into(), port.to_string(), "--dir".into(), dir.path().display().to_string()]);
        let tls_port = match tls {
            Some(t) => {
                let p = free_port()?;
                args.extend([
                    "--tls-port".into(),
                    p.to_string(),
                    "--tls-cert-file".into(),
                    t.cert.display().to_string(),
                    "--tls-key-file".into(),
                    t.key.display().to_string(),
                    "--tls-ca-cert-file".into(),
                    t.ca.display().to_string(),
                    "--tls-auth-clients".into(),
                    "no".into(),
                ]);
                Some(p)
            }
            None => None,
        };
        extra(&mut args);
        Ok(OwnRedis::with_args(dir, port, tls_port, args))
    }

    /// A server started with exactly `args` (a sentinel's configuration file, say), which
    /// must make it listen on `port` (and `tls_port`); not started yet.
    pub fn with_args(dir: tempfile::TempDir, port: u16, tls_port: Option<u16>, args: Vec<String>) -> OwnRedis {
        OwnRedis { child: None, dir, port, tls_port, args, env: Vec::new(), tied: false }
    }

    /// Sets an environment variable for the process (at its next start; a test's
    /// `LD_PRELOAD` of libfaketime, say).
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }

    /// Starts the process without waiting for it.
    ///
    /// # Errors
    /// `Unsupported` when `redis-server` cannot be started; `Backend` when its log cannot be
    /// opened.
    pub fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("redis.log"))
            .and_then(|f| Ok((f.try_clone()?, f)))
            .map_err(|e| Error::new(ErrorKind::Backend, format!("lab: redis.log: {e}")))?;
        let mut cmd = Command::new("redis-server");
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.0)
            .stderr(log.1);
        if self.tied {
            die_with_parent(&mut cmd);
        }
        let child = cmd.spawn().map_err(|e| {
            Error::new(
                ErrorKind::Unsupported,
                format!("lab: cannot start redis-server ({e}); install it or give --url"),
            )
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Starts the process and waits, blocking this thread (≤ 10 s), until it answers PING
    /// (or `NOAUTH`: up, behind `requirepass`).
    ///
    /// # Errors
    /// As [`OwnRedis::spawn`]; `Backend` when it exits or does not answer in 10 s (with its log).
    pub fn run(&mut self) -> Result<()> {
        self.spawn()?;
        let t0 = Instant::now();
        loop {
            if let Ok(c) = redis::Client::open(self.url()) {
                if let Ok(mut con) = c.get_connection_with_timeout(Duration::from_millis(500)) {
                    match redis::cmd("PING").query::<String>(&mut con) {
                        Ok(_) => return Ok(()),
                        Err(e) if e.code() == Some("NOAUTH") => return Ok(()),
                        Err(_) => {}
                    }
                }
            }
            let exited = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                return Err(Error::new(ErrorKind::Backend, format!("redis-server exited ({status}): {}", self.log())));
            }
            if t0.elapsed() > Duration::from_secs(10) {
                return Err(Error::new(ErrorKind::Backend, format!("redis-server not ready in 10 s: {}", self.log())));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Polls `INFO replication` until `ok` holds (≤ 10 s).
    async fn wait_for(&self, ok: impl Fn(&str) -> bool, what: &str) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(info) = self.info().await {
                if ok(&info) {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::new(
                    ErrorKind::Backend,
                    format!("lab: redis-server on port {} not {what} in 10 s", self.port),
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn info(&self) -> Result<String> {
        query(&self.url(), redis::cmd("INFO").arg("replication")).await
    }

    /// `redis://127.0.0.1:<port>` (no user).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Freezes the server (SIGSTOP): its sockets stay open and it answers nothing, as a
    /// host that stalls does; [`OwnRedis::thaw`] resumes it.
    ///
    /// # Errors
    /// `Backend` when it is not running or the signal cannot be sent.
    pub fn freeze(&self) -> Result<()> {
        self.send_signal("STOP")
    }

    /// Resumes a frozen server (SIGCONT): it then runs what was queued for it.
    ///
    /// # Errors
    /// As [`OwnRedis::freeze`].
    pub fn thaw(&self) -> Result<()> {
        self.send_signal("CONT")
    }

    fn send_signal(&self, signal: &str) -> Result<()> {
        let pid = self.pid().ok_or_else(|| Error::new(ErrorKind::Backend, "lab: redis-server is not running"))?;
        let sent = Command::new("kill").args([format!("-{signal}"), pid.to_string()]).status();
        match sent {
            Ok(s) if s.success() => Ok(()),
            other => Err(Error::new(ErrorKind::Backend, format!("lab: kill -{signal} {pid}: {other:?}"))),
        }
    }

    /// Kills the server (SIGKILL to this child): every key and connection is gone.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills the server and starts an empty one on the same port: a restart without
    /// persistence.
    ///
    /// # Errors
    /// As [`OwnRedis::start`].
    pub async fn restart(&mut self) -> Result<()> {
        self.kill();
        self.spawn()?;
        self.wait_for(|_| true, "answering").await
    }

    /// Makes this replica a master of its own (`REPLICAOF NO ONE`), as a failover does.
    ///
    /// # Errors
    /// `Connection` / `Backend` from the server.
    pub async fn promote(&mut self) -> Result<()> {
        let _: String = query(&self.url(), redis::cmd("REPLICAOF").arg("NO").arg("ONE")).await?;
        // A later restart comes back as a master too.
        if let Some(i) = self.args.iter().position(|a| a == "--replicaof") {
            self.args.drain(i..i + 3);
        }
        Ok(())
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// On Linux, the child gets SIGKILL when the thread that spawned it ends.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_cmd: &mut Command) {}

fn free_port() -> Result<u16> {
    crate::port::free_loopback_port()
        .ok_or_else(|| Error::new(ErrorKind::Backend, "lab: no free loopback port in 10000-19999 after 1000 tries"))
}

/// One command to the server at `url` on a connection of its own, bounded (a dead server
/// fails in seconds), its errors mapped as the lab's clients map theirs.
async fn query<T: redis::FromRedisValue>(url: &str, cmd: &redis::Cmd) -> Result<T> {
    let err = |e: redis::RedisError| {
        let kind = if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
            ErrorKind::Connection
        } else {
            ErrorKind::Backend
        };
        Error::new(kind, format!("lab: {url}: {e}")).with_source(e)
    };
    let client = redis::Client::open(url).map_err(err)?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    let mut con = client.get_multiplexed_async_connection_with_config(&config).await.map_err(err)?;
    cmd.query_async(&mut con).await.map_err(err)
}
