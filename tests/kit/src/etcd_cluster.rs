//! A 3-member etcd cluster of the test's own (free loopback ports, a temp dir), for faults
//! the shared cluster of `scripts/services` must never see: members killed, restarted on
//! their data, the leader found. Its members are killed (these children only) when it is
//! dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::free_port;

/// Three `etcd` members on loopback.
pub struct OwnEtcdCluster {
    members: Vec<Option<Child>>,
    /// Each member's `etcd` arguments (a restart runs them again, on the member's data).
    args: Vec<Vec<String>>,
    /// Each member's client port, member 1 first.
    pub client_ports: Vec<u16>,
    dir: tempfile::TempDir,
}

impl OwnEtcdCluster {
    /// Starts the members and waits (≤ 30 s) until the cluster answers on every member.
    pub fn start() -> OwnEtcdCluster {
        let dir = tempfile::Builder::new().prefix("baton-etcd-").tempdir().unwrap();
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let initial: Vec<String> =
            ports.iter().enumerate().map(|(i, (_, p))| format!("m{i}=http://127.0.0.1:{p}")).collect();
        let args = ports
            .iter()
            .enumerate()
            .map(|(i, (c, p))| {
                vec![
                    "--logger=zap".into(),
                    format!("--name=m{i}"),
                    format!("--data-dir={}", dir.path().join(format!("m{i}.data")).display()),
                    format!("--listen-client-urls=http://127.0.0.1:{c}"),
                    format!("--advertise-client-urls=http://127.0.0.1:{c}"),
                    format!("--listen-peer-urls=http://127.0.0.1:{p}"),
                    format!("--initial-advertise-peer-urls=http://127.0.0.1:{p}"),
                    format!("--initial-cluster={}", initial.join(",")),
                    "--initial-cluster-state=new".into(),
                    format!("--initial-cluster-token=baton-own-{}", ports[0].0),
                ]
            })
            .collect();
        let mut cluster =
            OwnEtcdCluster { members: Vec::new(), args, client_ports: ports.iter().map(|(c, _)| *c).collect(), dir };
        cluster.members = (0..3).map(|i| Some(cluster.spawn(i))).collect();
        cluster.wait_healthy();
        cluster
    }

    fn spawn(&self, i: usize) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("m{i}.log")))
            .unwrap();
        Command::new("etcd")
            .args(&self.args[i])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd")
    }

    /// Waits (≤ 30 s) until every running member answers `endpoint health`.
    fn wait_healthy(&self) {
        let endpoints = self
            .client_ports
            .iter()
            .zip(&self.members)
            .filter(|(_, m)| m.is_some())
            .map(|(c, _)| format!("127.0.0.1:{c}"))
            .collect::<Vec<_>>()
            .join(",");
        let t0 = Instant::now();
        loop {
            let ok = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args([&format!("--endpoints={endpoints}"), "--dial-timeout=1s", "--command-timeout=2s"])
                .args(["endpoint", "health"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "own etcd cluster not healthy after 30 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Kills member `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the killed members again on their data and waits (≤ 30 s) until every
    /// member answers.
    pub fn restart_killed(&mut self) {
        for i in 0..self.members.len() {
            if self.members[i].is_none() {
                self.members[i] = Some(self.spawn(i));
            }
        }
        self.wait_healthy();
    }

    /// The index of the leader, once every running member answers and one leads.
    pub fn leader(&self) -> Option<usize> {
        let running: Vec<usize> = (0..self.members.len()).filter(|i| self.members[*i].is_some()).collect();
        let ports: Vec<u16> = running.iter().map(|i| self.client_ports[*i]).collect();
        etcd_leader(&ports).map(|l| running[l])
    }
}

impl Drop for OwnEtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// The index in `client_ports` of the leader (`etcdctl endpoint status`), once every
/// member listed answers and one of them leads.
pub fn etcd_leader(client_ports: &[u16]) -> Option<usize> {
    let endpoints = client_ports.iter().map(|c| format!("127.0.0.1:{c}")).collect::<Vec<_>>().join(",");
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([&format!("--endpoints={endpoints}"), "--command-timeout=2s", "endpoint", "status", "-w", "json"])
        .output()
        .ok()?;
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let arr = j.as_array().filter(|a| a.len() == client_ports.len())?;
    arr.iter()
        .position(|m| {
            m["Status"]["leader"].as_u64().is_some() && m["Status"]["leader"] == m["Status"]["header"]["member_id"]
        })
        .and_then(|i| {
            let ep = arr[i]["Endpoint"].as_str()?;
            client_ports.iter().position(|c| ep.ends_with(&format!(":{c}")))
        })
}
