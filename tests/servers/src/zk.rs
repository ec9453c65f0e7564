//! A throwaway 3-member ZooKeeper ensemble on free loopback ports, for the `zookeeper` row:
//! its faults kill a member, so it is never a server the user named. Each member is
//! Debian's `QuorumPeerMain` (`/usr/share/java/zookeeper.jar`) under `java`, killed when
//! the ensemble is dropped (and with the thread that started it, on Linux).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use baton::{Error, ErrorKind, Result};

/// Where Debian's `zookeeper` package puts the server and its logger, and the two Netty
/// jars its TLS port needs beyond the jar's own class path.
const CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:\
                         /usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar";

/// Whether an ensemble can be started here: `java` on `PATH` and Debian's ZooKeeper jar.
pub fn zookeeper_available() -> bool {
    Path::new("/usr/share/java/zookeeper.jar").exists()
        && Command::new("java").arg("-version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Three members of one ensemble.
pub struct OwnZk {
    members: Vec<(u16, Option<Child>)>,
    _dir: tempfile::TempDir,
    /// Files the members read while they run (a TLS key store).
    _files: Option<tempfile::TempDir>,
}

/// A four-letter word's answer from the member on `port` (empty when it does not answer).
fn four(port: u16, word: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(word.as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn backend(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Backend, format!("lab: zookeeper: {what}"))
}

impl OwnZk {
    /// Starts three members and waits (≤ 60 s) until they have elected a leader.
    ///
    /// # Errors
    /// `Unsupported` when `java` cannot be started; `Backend` when no leader is elected.
    pub async fn start() -> Result<OwnZk> {
        OwnZk::launch(3, None).await
    }

    /// One standalone server with a TLS port (`secureClientPort`, Netty) besides its plain
    /// one, its certificate and key from `tls` (PEM), client certificates asked for when
    /// `client_auth`; `(server, TLS port)`.
    ///
    /// # Errors
    /// As [`OwnZk::start`].
    pub async fn start_tls(tls: crate::redis_server::TlsFiles<'_>, client_auth: bool) -> Result<(OwnZk, u16)> {
        let dir = tempfile::Builder::new().prefix("baton-lab-zk-tls-").tempdir().map_err(backend)?;
        // ZooKeeper's PEM key store takes the key and the certificate in one file.
        let keystore = dir.path().join("keystore.pem");
        let key = std::fs::read_to_string(tls.key).map_err(backend)?;
        let cert = std::fs::read_to_string(tls.cert).map_err(backend)?;
        std::fs::write(&keystore, format!("{key}{cert}")).map_err(backend)?;
        let port = free_port()?;
        let extra = format!(
            "secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\nssl.keyStore.type=PEM\nssl.trustStore.location={}\nssl.trustStore.type=PEM\n\
             ssl.clientAuth={}\n",
            keystore.display(),
            tls.ca.display(),
            if client_auth { "need" } else { "none" }
        );
        let mut z = OwnZk::launch(1, Some(&extra)).await?;
        z._files = Some(dir);
        Ok((z, port))
    }

    async fn launch(n: usize, extra: Option<&str>) -> Result<OwnZk> {
        let dir = tempfile::Builder::new().prefix("baton-lab-zk-").tempdir().map_err(backend)?;
        let mut ports = Vec::new();
        for _ in 0..n {
            ports.push((free_port()?, free_port()?, free_port()?));
        }
        let servers: String = if n == 1 {
            String::new()
        } else {
            ports.iter().enumerate().map(|(i, (_, q, e))| format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1)).collect()
        };
        let servers = format!("{servers}{}", extra.unwrap_or_default());
        let mut z = OwnZk { members: Vec::new(), _dir: dir, _files: None };
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let d = z._dir.path().join(format!("zk{}", i + 1));
            std::fs::create_dir_all(d.join("data")).map_err(backend)?;
            std::fs::write(d.join("data/myid"), format!("{}\n", i + 1)).map_err(backend)?;
            // A short tick: elections and session expiry in seconds, not tens of them.
            let cfg = format!(
                "tickTime=500\ninitLimit=10\nsyncLimit=4\ndataDir={}\nclientPort={client}\nclientPortAddress=127.0.0.1\n\
                 maxClientCnxns=0\nforceSync=no\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n{servers}",
                d.join("data").display()
            );
            std::fs::write(d.join("zoo.cfg"), cfg).map_err(backend)?;
            let child = z.spawn(i)?;
            z.members.push((*client, Some(child)));
        }
        z.leader().await?;
        Ok(z)
    }

    /// `zk://h1,h2,h3` of the members.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.members.iter().map(|(p, _)| format!("127.0.0.1:{p}")).collect();
        format!("zk://{}", hosts.join(","))
    }

    /// The leader's index once a quorum serves (≤ 60 s: three JVMs starting on a loaded
    /// 2-core machine); 0 for a standalone server once it serves.
    pub async fn leader(&self) -> Result<usize> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let modes: Vec<String> = self.members.iter().map(|(p, _)| four(*p, "srvr")).collect();
            if modes.len() == 1 && modes[0].contains("Mode: standalone") {
                return Ok(0);
            }
            if let Some(i) = modes.iter().position(|m| m.contains("Mode: leader")) {
                if modes.iter().any(|m| m.contains("Mode: follower")) {
                    return Ok(i);
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(backend("no leader elected in 60 s"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The client port of member `i`.
    pub fn port(&self, i: usize) -> u16 {
        self.members[i].0
    }

    /// Starts member `i` (its `zoo.cfg`, written by `launch`).
    fn spawn(&self, i: usize) -> Result<Child> {
        let mut cmd = Command::new("java");
        cmd.args(["-Xms16m", "-Xmx128m", "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true"])
            .args(["-Dzookeeper.admin.enableServer=false", "-cp", CLASSPATH])
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self._dir.path().join(format!("zk{}", i + 1)).join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        crate::redis_server::die_with_parent(&mut cmd);
        cmd.spawn().map_err(|e| Error::new(ErrorKind::Unsupported, format!("lab: cannot start java ({e})")))
    }

    /// Starts the killed members again on their data and waits (≤ 60 s) until a quorum
    /// serves with a leader.
    ///
    /// # Errors
    /// As [`OwnZk::start`].
    pub async fn restart_killed(&mut self) -> Result<()> {
        for i in 0..self.members.len() {
            if self.members[i].1.is_none() {
                self.members[i].1 = Some(self.spawn(i)?);
            }
        }
        self.leader().await.map(drop)
    }

    /// Kills member `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members.get_mut(i).and_then(|m| m.1.take()) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnZk {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

fn free_port() -> Result<u16> {
    crate::port::free_loopback_port().ok_or_else(|| backend("no free loopback port in 10000-19999 after 1000 tries"))
}
