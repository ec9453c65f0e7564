//! Redis servers of the test's own (`OwnRedis`, on free loopback ports and a temp dir): for
//! what the shared server of `scripts/services` must never see (TLS with a CA generated
//! here, ACL users, restarts, killed connections, sentinels, clusters). Stopped (SIGKILL
//! to this child only) when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_servers::{FakeClock, OwnRedis, TlsFiles};

/// Whether the tools are there. Absent: a failure under CI, elsewhere a skip (false).
pub fn tools_present(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| Command::new(t).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{missing:?} not installed (`scripts/services start redis` installs redis-server and openssl)"
    );
    crate::skip::report(&format!("{missing:?} not installed"));
    false
}

/// libfaketime's preload library. Absent: a failure under CI, elsewhere a skip (None).
pub fn faketime_lib() -> Option<&'static str> {
    let lib = baton_servers::faketime_lib();
    if lib.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "libfaketime is not installed (scripts/suites/30-rust.sh installs it)"
        );
        crate::skip::report("libfaketime not installed");
    }
    lib
}

/// The `redlock://` URL over `nodes` of the fault tests: the node timeout set (500 ms: far
/// above a loaded machine's usual stalls) so that checks do not depend on the lease-derived
/// default, and short retries.
pub fn redlock_url<'a>(nodes: impl IntoIterator<Item = &'a OwnRedis>) -> String {
    let hosts: Vec<String> = nodes.into_iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
    format!("redlock://{}?node_timeout=500ms&retry_delay=20ms&retry_jitter=20ms", hosts.join(","))
}

/// A free loopback port in 10000–19999 for a server to bind next, never the same twice in
/// this process (the lab's rule: below Linux's ephemeral range).
pub fn free_port() -> u16 {
    baton_servers::free_loopback_port()
        .expect("no free loopback port (10000-19999, or BATON_PORT_RANGE) after 1000 tries")
}

/// A CA and a server certificate for 127.0.0.1 / localhost signed by it (P-256 keys:
/// fast to make), in `dir`. The certificate serves as a client's too (`clientAuth`): the
/// nodes of a TLS cluster present it to each other on the bus, which always checks it.
pub struct Certs {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Certs {
    /// The files a server's TLS port is configured with.
    pub fn files(&self) -> TlsFiles<'_> {
        TlsFiles { ca: &self.ca, cert: &self.cert, key: &self.key }
    }

    /// `name` distinguishes several CAs in one dir.
    pub fn generate(dir: &Path, name: &str) -> Certs {
        let f = |s: &str| format!("{name}-{s}");
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        let subj = format!("/CN=baton test CA {name}");
        let (ca_key, ca, key, csr, cert, ext) =
            (f("ca.key"), f("ca.pem"), f("server.key"), f("server.csr"), f("server.pem"), f("ext.cnf"));
        openssl(
            dir,
            &[
                &["req", "-x509"],
                &ec[..],
                &[
                    "-keyout",
                    &ca_key,
                    "-out",
                    &ca,
                    "-days",
                    "2",
                    "-subj",
                    &subj,
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ],
            ]
            .concat(),
        );
        openssl(dir, &[&["req"], &ec[..], &["-keyout", &key, "-out", &csr, "-subj", "/CN=127.0.0.1"]].concat());
        std::fs::write(
            dir.join(&ext),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-out",
                &cert,
                "-days",
                "2",
                "-extfile",
                &ext,
            ],
        );
        Certs { ca: dir.join(ca), cert: dir.join(cert), key: dir.join(key) }
    }
}

/// What `start_sentinel_with` sets up besides the defaults.
#[derive(Default)]
pub struct SentinelSetup<'a> {
    /// A TLS port too (and TLS to the master), with these certificates.
    pub certs: Option<&'a Certs>,
    /// The master's `requirepass` (`sentinel auth-pass`).
    pub master_password: Option<&'a str>,
    /// The sentinel's own `requirepass`.
    pub password: Option<&'a str>,
}

/// The tests' ways to start an [`OwnRedis`]: blocking, and failing the test (a panic)
/// when a server does not come up.
pub trait TestServers: Sized {
    /// A plain server.
    fn start_blocking() -> Self;
    /// A server with a TLS port too (certificates generated in its dir).
    fn start_tls() -> (Self, Certs);
    /// `start_tls` with more server arguments (`--requirepass`, …).
    fn start_tls_with(extra: &[&str]) -> (Self, Certs);
    /// A replica of the server on `master_port`.
    fn start_replica_of_port(master_port: u16) -> Self;
    /// A sentinel watching `mymaster` on `master_port` (quorum 1, down after
    /// `down_after_ms`).
    fn start_sentinel(master_port: u16, down_after_ms: u64) -> Self;
    /// `start_sentinel` with TLS and passwords (`SentinelSetup`).
    fn start_sentinel_with(master_port: u16, down_after_ms: u64, setup: &SentinelSetup) -> Self;
    /// A 3-master Redis Cluster of the test's own (no replicas; a dead master's slots go
    /// dark but the others keep serving: `cluster-require-full-coverage no`). Bounded:
    /// 30 s until `cluster_state:ok` everywhere.
    fn start_cluster() -> Vec<Self>;
    /// `start_cluster` whose nodes also serve TLS (`tls-cluster yes`: the bus and the
    /// addresses a TLS client is told are TLS; admin stays on the plain ports), with the
    /// CA of the certificates generated in the first node's dir.
    fn start_tls_cluster() -> (Vec<Self>, Certs);
    /// A plain server whose wall clock the test steps ([`FakeClock`]), under libfaketime
    /// (check [`faketime_lib`] and `tools_present(&["redis-server", "cc"])` first: a
    /// small allocator shim is compiled with `cc`, see `glibc_malloc.c`).
    fn start_faketime() -> (Self, FakeClock);
    /// Sends `signal` to the server process (SIGSTOP / SIGCONT to freeze and thaw it).
    fn signal(&self, signal: &str);
    /// A plain admin connection.
    fn admin(&self) -> redis::Connection;
    /// Whether the server has `key` (a lock's hash or string, under any layout).
    fn exists(&self, key: &str) -> bool;
    /// Kills the server and starts a fresh, empty one on the same ports after `down`.
    fn restart_after(&mut self, down: Duration);
}

/// A server configured in `dir` (see `OwnRedis::configure`), started.
fn launch(dir: tempfile::TempDir, certs: Option<&Certs>, extra: impl FnOnce(&mut Vec<String>)) -> OwnRedis {
    let mut r = OwnRedis::configure(dir, certs.map(Certs::files), extra).unwrap();
    r.run().unwrap();
    r
}

impl TestServers for OwnRedis {
    fn start_blocking() -> OwnRedis {
        launch(tempfile::tempdir().unwrap(), None, |_| {})
    }

    fn start_tls() -> (OwnRedis, Certs) {
        OwnRedis::start_tls_with(&[])
    }

    fn start_tls_with(extra: &[&str]) -> (OwnRedis, Certs) {
        let dir = tempfile::tempdir().unwrap();
        let certs = Certs::generate(dir.path(), "a");
        let r = launch(dir, Some(&certs), |args| args.extend(extra.iter().map(|a| a.to_string())));
        (r, certs)
    }

    fn start_replica_of_port(master_port: u16) -> OwnRedis {
        launch(tempfile::tempdir().unwrap(), None, |args| {
            args.extend(["--replicaof".into(), "127.0.0.1".into(), master_port.to_string()]);
        })
    }

    fn start_sentinel(master_port: u16, down_after_ms: u64) -> OwnRedis {
        OwnRedis::start_sentinel_with(master_port, down_after_ms, &SentinelSetup::default())
    }

    fn start_sentinel_with(master_port: u16, down_after_ms: u64, setup: &SentinelSetup) -> OwnRedis {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let conf = dir.path().join("sentinel.conf");
        let mut text = format!(
            "bind 127.0.0.1\nport {port}\ndir {}\nsentinel monitor mymaster 127.0.0.1 {master_port} 1\n\
             sentinel down-after-milliseconds mymaster {down_after_ms}\nsentinel failover-timeout mymaster 5000\n",
            dir.path().display()
        );
        let tls_port = setup.certs.map(|c| {
            let p = free_port();
            // `tls-replication yes`: the sentinel reaches the master over TLS too.
            text.push_str(&format!(
                "tls-port {p}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\ntls-auth-clients no\n\
                 tls-replication yes\n",
                c.cert.display(),
                c.key.display(),
                c.ca.display()
            ));
            p
        });
        if let Some(pw) = setup.master_password {
            text.push_str(&format!("sentinel auth-pass mymaster {pw}\n"));
        }
        if let Some(pw) = setup.password {
            text.push_str(&format!("requirepass {pw}\n"));
        }
        std::fs::write(&conf, text).unwrap();
        let args = vec![conf.display().to_string(), "--sentinel".into()];
        let mut r = OwnRedis::with_args(dir, port, tls_port, args);
        r.run().unwrap();
        r
    }

    fn start_cluster() -> Vec<OwnRedis> {
        start_cluster_in(vec![None, None, None], None)
    }

    fn start_tls_cluster() -> (Vec<OwnRedis>, Certs) {
        let dir = tempfile::tempdir().unwrap();
        let certs = Certs::generate(dir.path(), "cluster");
        let nodes = start_cluster_in(vec![Some(dir), None, None], Some(&certs));
        (nodes, certs)
    }

    fn start_faketime() -> (OwnRedis, FakeClock) {
        let (mut r, clock) = OwnRedis::configure_faketime(tempfile::tempdir().unwrap()).unwrap();
        r.run().unwrap();
        (r, clock)
    }

    fn signal(&self, signal: &str) {
        let pid = self.pid().expect("not running").to_string();
        let ok = Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success();
        assert!(ok, "kill -{signal} {pid}");
    }

    fn admin(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection_with_timeout(Duration::from_secs(5)).unwrap()
    }

    fn exists(&self, key: &str) -> bool {
        redis::cmd("EXISTS").arg(key).query::<i64>(&mut self.admin()).unwrap() == 1
    }

    fn restart_after(&mut self, down: Duration) {
        self.kill();
        std::thread::sleep(down);
        self.run().unwrap();
    }
}

fn start_cluster_in(dirs: Vec<Option<tempfile::TempDir>>, certs: Option<&Certs>) -> Vec<OwnRedis> {
    let mut buses = Vec::new();
    let nodes: Vec<OwnRedis> = dirs
        .into_iter()
        .map(|dir| {
            let dir = dir.unwrap_or_else(|| tempfile::tempdir().unwrap());
            // The bus port is given (the default, port + 10000, may not exist) and told in
            // every MEET.
            let bus = free_port();
            buses.push(bus);
            launch(dir, certs, |args| {
                args.extend(
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                        "--cluster-require-full-coverage",
                        "no",
                    ]
                    .map(String::from),
                );
                args.extend(["--cluster-port".into(), bus.to_string()]);
                if certs.is_some() {
                    args.extend(["--tls-cluster".into(), "yes".into()]);
                }
            })
        })
        .collect();
    // What `redis-cli --cluster create` does, with the bus ports said: every node meets the
    // first, and each serves a third of the slots.
    let mut first = nodes[0].admin();
    for (n, bus) in nodes.iter().zip(&buses).skip(1) {
        let port = n.tls_port.unwrap_or(n.port);
        let _: () = redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(port).arg(bus).query(&mut first).unwrap();
    }
    for (i, n) in nodes.iter().enumerate() {
        let (from, to) = (i * 16384 / nodes.len(), (i + 1) * 16384 / nodes.len() - 1);
        let _: () = redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(from).arg(to).query(&mut n.admin()).unwrap();
    }
    let known = format!("cluster_known_nodes:{}", nodes.len());
    let t0 = Instant::now();
    loop {
        let ok = nodes.iter().all(|n| {
            redis::cmd("CLUSTER")
                .arg("INFO")
                .query::<String>(&mut n.admin())
                .is_ok_and(|i| i.contains("cluster_state:ok") && i.contains(&known))
        });
        if ok {
            return nodes;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "cluster not ok in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A master, its replica and a sentinel of the test's own, replication up and known to
/// the sentinel (bounded: 20 s).
pub async fn sentinel_trio() -> (OwnRedis, OwnRedis, OwnRedis) {
    tokio::task::spawn_blocking(|| {
        let master = OwnRedis::start_blocking();
        let replica = OwnRedis::start_replica_of_port(master.port);
        let sentinel = OwnRedis::start_sentinel(master.port, 1000);
        let t0 = std::time::Instant::now();
        loop {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut master.admin()).unwrap();
            let replicas: Vec<redis::Value> =
                redis::cmd("SENTINEL").arg(&["REPLICAS", "mymaster"]).query(&mut sentinel.admin()).unwrap_or_default();
            if info.contains("connected_slaves:1") && info.contains("state=online") && !replicas.is_empty() {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "replication not up: {info}");
            std::thread::sleep(Duration::from_millis(100));
        }
        (master, replica, sentinel)
    })
    .await
    .unwrap()
}

/// Waits (≤ 5 s) until `replica` has applied everything `master` wrote so far: its
/// replication offset reaches the master's. (`WAIT` from a test's own connection cannot
/// tell this: it counts that connection's writes only.)
pub fn replica_caught_up(master: &OwnRedis, replica: &OwnRedis) {
    let offset = |r: &OwnRedis, field: &str| -> i64 {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut r.admin()).unwrap();
        info.lines().find_map(|l| l.strip_prefix(field)?.trim().parse().ok()).unwrap_or(-1)
    };
    let target = offset(master, "master_repl_offset:");
    let t0 = std::time::Instant::now();
    while offset(replica, "slave_repl_offset:") < target {
        assert!(t0.elapsed() < Duration::from_secs(5), "the replica did not reach offset {target} in 5 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (≤ 30 s) until the sentinel names `port` as the master.
pub async fn master_becomes(sentinel: &OwnRedis, port: u16) {
    let url = sentinel.url();
    let t0 = Instant::now();
    loop {
        // Errors (a busy sentinel mid-failover) count as "not yet".
        let addr: Vec<String> =
            match redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await {
                Ok(mut con) => redis::cmd("SENTINEL")
                    .arg(&["GET-MASTER-ADDR-BY-NAME", "mymaster"])
                    .query_async(&mut con)
                    .await
                    .unwrap_or_default(),
                Err(_) => Vec::new(),
            };
        if addr.get(1).map(String::as_str) == Some(&port.to_string()) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no failover to {port}: sentinel says {addr:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
