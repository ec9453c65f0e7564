//! The SQL lock schemes when the database restarts while locks are held, on a PostgreSQL
//! of this test's own (never the shared server): session holds (`for-update`, `advisory`)
//! are lost and signalled, nobody gets a lock twice, tokens keep growing; a `table` hold
//! is a row that survives the restart.
#![cfg(feature = "postgres")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use baton::{Client, LockOptions};
use baton_testkit::behaviour::{bounded, unique};

/// A throwaway PostgreSQL cluster (trust auth, loopback), stopped on drop.
struct OwnPostgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

fn as_postgres(cmd: &Path) -> Command {
    // initdb and postgres refuse to run as root.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(cmd);
        c
    } else {
        Command::new(cmd)
    }
}

impl OwnPostgres {
    fn start() -> OwnPostgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).filter(|p| p.join("pg_ctl").exists()).max())
            .ok()
            .flatten()
            .expect("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin): install postgresql");
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        if unsafe { libc::geteuid() } == 0 {
            assert!(Command::new("chown").args(["postgres:postgres"]).arg(dir.path()).status().unwrap().success());
        }
        let out = as_postgres(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-N"])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = baton_testkit::free_port();
        let pg = OwnPostgres { bin, data, port, _dir: dir };
        pg.ctl("start");
        pg
    }

    fn ctl(&self, what: &str) {
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
            self.port,
            self.data.parent().unwrap().display()
        );
        let out = as_postgres(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-l"])
            .arg(self.data.parent().unwrap().join("log"))
            .args(["-w", "-t", "30", "-m", "fast", "-o", &opts, what])
            .output()
            .unwrap();
        assert!(out.status.success(), "pg_ctl {what}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn url(&self, scheme: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres?scheme={scheme}", self.port)
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ =
            as_postgres(&self.bin.join("pg_ctl")).arg("-D").arg(&self.data).args(["-m", "immediate", "stop"]).output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_restart_while_held() {
    let pg = OwnPostgres::start();
    let opts = LockOptions::new().lease(Duration::from_secs(2));
    let mut held = Vec::new();
    for s in ["for-update", "advisory", "table"] {
        let c = Client::connect(&pg.url(s)).await.unwrap();
        let name = unique("restart");
        let g = c.lock_with(&name, opts.clone()).acquire().await.unwrap();
        held.push((s, c, name, g));
    }
    pg.ctl("restart");
    for (s, c, name, g) in held {
        let other = Client::connect(&pg.url(s)).await.unwrap();
        if s == "table" {
            // The row survived: still held, by the same holder, renewed by its watchdog.
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(!g.is_lost(), "{s}");
            assert!(other.lock(&name).try_acquire().await.unwrap().is_none(), "{s}: granted twice");
            g.release().await.unwrap();
        } else {
            // The session died with the server: the lost signal fires at the next renewal.
            bounded(&format!("{s}: lost() after the restart"), Duration::from_secs(10), g.lost()).await;
            let g2 = bounded("acquire after the restart", Duration::from_secs(10), other.lock(&name).acquire())
                .await
                .unwrap();
            assert!(g2.token() > g.token(), "{s}: tokens keep growing");
            assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "{s}: granted twice");
            g2.release().await.unwrap();
        }
        c.close().await;
        other.close().await;
    }
}
