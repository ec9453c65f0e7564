//! The SQL lock schemes when the database restarts while locks are held, on a PostgreSQL
//! and a MariaDB of this test's own (never the shared servers): session holds
//! (`for-update`, `advisory`) are lost and signalled, nobody gets a lock twice, tokens keep
//! growing; a `table` hold is a row that survives the restart.
#![cfg(any(feature = "postgres", feature = "mysql"))]

use std::time::Duration;

use baton::{Client, LockOptions};
use baton_testkit::behaviour::{bounded, unique};

/// Holds one lock of each scheme on `url(scheme)` with `lease`, restarts the server, and
/// checks what each scheme promises across it. The lease must outlast the restart for the
/// `table` row to be renewed in time; the bounds on the lost signal are a lease + 8 s (the
/// next renewal fails, on a loaded machine).
async fn restart_while_held(lease: Duration, base: &str, restart: impl Future<Output = ()>) {
    let url = |s: &str| format!("{base}{}scheme={s}", if base.contains('?') { '&' } else { '?' });
    let opts = LockOptions::new().lease(lease);
    let bound = lease + Duration::from_secs(8);
    let mut held = Vec::new();
    for s in ["for-update", "advisory", "table"] {
        let c = Client::connect(&url(s)).await.unwrap();
        let name = unique("restart");
        let g = c.lock_with(&name, opts.clone()).acquire().await.unwrap();
        held.push((s, c, name, g));
    }
    restart.await;
    for (s, c, name, g) in held {
        let other = Client::connect(&url(s)).await.unwrap();
        if s == "table" {
            // The row survived: still held, by the same holder, renewed by its watchdog.
            tokio::time::sleep(Duration::from_secs(3)).await;
            assert!(!g.is_lost(), "{s}");
            assert!(other.lock(&name).try_acquire().await.unwrap().is_none(), "{s}: granted twice");
            g.release().await.unwrap();
        } else {
            // The session died with the server: the lost signal fires at the next renewal.
            bounded(&format!("{s}: lost() after the restart"), bound, g.lost()).await;
            let g2 = bounded("acquire after the restart", bound, other.lock(&name).acquire()).await.unwrap();
            assert!(g2.token() > g.token(), "{s}: tokens keep growing");
            assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "{s}: granted twice");
            g2.release().await.unwrap();
        }
        c.close().await;
        other.close().await;
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_restart_while_held() {
    let pg = baton_testkit::OwnPostgres::start().await.unwrap();
    let restart = async {
        pg.kill().await.unwrap();
        pg.start_again().await.unwrap();
    };
    restart_while_held(Duration::from_secs(10), &pg.url(), restart).await;
}

/// MariaDB killed (SIGKILL, as a crash) and started again on its data: `GET_LOCK` and the
/// `FOR UPDATE` transaction die with their sessions, the `table` row is in InnoDB's log.
/// Crash recovery takes seconds: a 10 s lease (both tests) keeps the row's renewals ahead of it.
#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_restart_while_held() {
    let mut db = baton_testkit::OwnMariaDb::start().await.unwrap();
    let base = db.url();
    let restart = async {
        db.kill();
        db.start_again().await.unwrap();
    };
    restart_while_held(Duration::from_secs(10), &base, restart).await;
}
