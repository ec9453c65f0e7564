//! A 3-member etcd cluster of the test's own (free loopback ports, a temp dir), for faults
//! the shared cluster of `scripts/services` must never see. Its members are killed (these
//! children only) when it is dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::free_port;

/// Three `etcd` members on loopback.
pub struct OwnEtcdCluster {
    members: Vec<Child>,
    /// Each member's client port, member 1 first.
    pub client_ports: Vec<u16>,
    _dir: tempfile::TempDir,
}

impl OwnEtcdCluster {
    /// Starts the members and waits (≤ 30 s) until the cluster answers on every member.
    pub fn start() -> OwnEtcdCluster {
        let dir = tempfile::Builder::new().prefix("baton-etcd-").tempdir().unwrap();
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let initial: Vec<String> =
            ports.iter().enumerate().map(|(i, (_, p))| format!("m{i}=http://127.0.0.1:{p}")).collect();
        let members = ports
            .iter()
            .enumerate()
            .map(|(i, (c, p))| {
                let log = std::fs::File::create(dir.path().join(format!("m{i}.log"))).unwrap();
                Command::new("etcd")
                    .args(["--logger=zap", "--name", &format!("m{i}")])
                    .arg("--data-dir")
                    .arg(dir.path().join(format!("m{i}.data")))
                    .args(["--listen-client-urls", &format!("http://127.0.0.1:{c}")])
                    .args(["--advertise-client-urls", &format!("http://127.0.0.1:{c}")])
                    .args(["--listen-peer-urls", &format!("http://127.0.0.1:{p}")])
                    .args(["--initial-advertise-peer-urls", &format!("http://127.0.0.1:{p}")])
                    .args(["--initial-cluster", &initial.join(","), "--initial-cluster-state", "new"])
                    .args(["--initial-cluster-token", &format!("baton-own-{}", ports[0].0)])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log)
                    .spawn()
                    .expect("etcd")
            })
            .collect();
        let cluster = OwnEtcdCluster { members, client_ports: ports.iter().map(|(c, _)| *c).collect(), _dir: dir };
        let endpoints = cluster.client_ports.iter().map(|c| format!("127.0.0.1:{c}")).collect::<Vec<_>>().join(",");
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
                return cluster;
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "own etcd cluster not healthy after 30 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for OwnEtcdCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}
