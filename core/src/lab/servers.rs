//! Throwaway `redis-server` children on free loopback ports, for the faults no shared
//! server may see (a restart without persistence, a node lost, a replica promoted). Each
//! is killed (this child only, by its own handle) when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::error::{Error, Result};

/// Whether `redis-server` can be started from `PATH`.
pub fn redis_server_available() -> bool {
    Command::new("redis-server").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// One `redis-server` of the lab's own: no persistence (`--save '' --appendonly no`), so
/// a restart comes back empty.
pub struct OwnRedis {
    child: Option<Child>,
    dir: PathBuf,
    port: u16,
    replica_of: Option<u16>,
}

impl OwnRedis {
    /// Starts a server and waits (≤ 10 s) until it answers.
    ///
    /// # Errors
    /// `Unsupported` when `redis-server` is not on `PATH`; `Backend` when it does not come up.
    pub async fn start() -> Result<OwnRedis> {
        OwnRedis::spawn(None).await
    }

    /// Starts a replica of the server on `master` and waits until its link is up.
    ///
    /// # Errors
    /// As [`OwnRedis::start`]; `Backend` when the replica does not sync in 10 s.
    pub async fn start_replica_of(master: &OwnRedis) -> Result<OwnRedis> {
        let r = OwnRedis::spawn(Some(master.port)).await?;
        r.wait_for(|info| info.contains("master_link_status:up"), "replica link up").await?;
        Ok(r)
    }

    async fn spawn(replica_of: Option<u16>) -> Result<OwnRedis> {
        let port = free_port()?;
        let dir = std::env::temp_dir().join(format!("baton-lab-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| Error::backend(format!("lab: {}: {e}", dir.display())))?;
        let mut r = OwnRedis { child: None, dir, port, replica_of };
        r.run().await?;
        Ok(r)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn run(&mut self) -> Result<()> {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"])
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(m) = self.replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &m.to_string()]);
        }
        die_with_parent(&mut cmd);
        let child = cmd.spawn().map_err(|e| {
            Error::unsupported(format!("lab: cannot start redis-server ({e}); install it or give --url"))
        })?;
        self.child = Some(child);
        self.wait_for(|_| true, "answering").await
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
                return Err(Error::backend(format!("lab: redis-server on port {} not {what} in 10 s", self.port)));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn info(&self) -> Result<String> {
        let mut raw = super::raw::Raw::open(&self.url(), "").await?;
        raw.query(redis::cmd("INFO").arg("replication")).await
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
        self.run().await
    }

    /// Makes this replica a master of its own (`REPLICAOF NO ONE`), as a failover does.
    ///
    /// # Errors
    /// `Connection` / `Backend` from the server.
    pub async fn promote(&mut self) -> Result<()> {
        let mut raw = super::raw::Raw::open(&self.url(), "").await?;
        let _: String = raw.query(redis::cmd("REPLICAOF").arg("NO").arg("ONE")).await?;
        self.replica_of = None;
        Ok(())
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// On Linux, the child gets SIGKILL when the lab's thread that spawned it ends, so a lab
/// interrupted by Ctrl-C leaves no server behind.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
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
fn die_with_parent(_cmd: &mut Command) {}

fn free_port() -> Result<u16> {
    super::port::free_loopback_port()
        .ok_or_else(|| Error::backend("lab: no free loopback port in 10000-19999 after 1000 tries"))
}
