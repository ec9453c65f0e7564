//! Real Apache Curator (curator-recipes 5.9.0, the JVM harness in `tests/curator/`) and
//! baton contending on one name of the standalone ZooKeeper (`BATON_TEST_ZK_URL`), both
//! ways: `InterProcessMutex`, `InterProcessReadWriteLock` and `InterProcessSemaphoreV2`.
//! No overlap, and the waiter is granted within a second of the release.
//!
//! The harness is built by `scripts/test zk-interop` (Maven), which runs these tests with
//! `--ignored`; the rust suite builds them but does not run them.
#![cfg(feature = "zookeeper")]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton::Client;
use baton_testkit::behaviour::{self, bounded, unique};

const WAKE_MS: u64 = 1000;

fn url() -> String {
    behaviour::env_server("BATON_TEST_ZK_URL", "ZooKeeper")
}

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// One Curator process holding one recipe, driven line by line.
struct Curator {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Drop for Curator {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Curator {
    fn start(kind: &str, name: &str) -> Curator {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/curator/target");
        let cp = std::fs::read_to_string(dir.join("classpath.txt"))
            .expect("the Curator harness is not built: run `scripts/test zk-interop`");
        let connect = url().trim_start_matches("zk://").to_owned();
        let mut child = Command::new("java")
            .args(["-Xmx128m", "-XX:+UseSerialGC", "-cp"])
            .arg(format!("{}:{}", dir.join("classes").display(), cp.trim()))
            .args(["baton.curator.Harness", &connect, kind, &format!("/{name}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("java");
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines() {
                let Ok(l) = l else { return };
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        let mut c = Curator { child, stdin, lines };
        assert_eq!(c.next(Duration::from_secs(60)).as_deref(), Some("READY"));
        c
    }

    fn send(&mut self, cmd: &str) {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn next(&mut self, within: Duration) -> Option<String> {
        self.lines.recv_timeout(within).ok()
    }

    /// `ACQUIRED <ms>` / `RELEASED <ms>`: the time; panics on anything else.
    fn at(&mut self, word: &str, within: Duration) -> u64 {
        let l = self.next(within).unwrap_or_else(|| panic!("no {word} within {within:?}"));
        l.strip_prefix(word).and_then(|t| t.trim().parse().ok()).unwrap_or_else(|| panic!("expected {word}, got {l}"))
    }

    fn acquire(&mut self) -> u64 {
        self.send("acquire 10000");
        self.at("ACQUIRED", Duration::from_secs(15))
    }

    fn release(&mut self) -> u64 {
        self.send("release");
        self.at("RELEASED", Duration::from_secs(15))
    }
}

/// Curator holds, baton waits and is woken by Curator's release; then baton holds,
/// Curator waits and is woken by baton's release.
async fn both_ways<G, F, Fut>(
    mut cur: Curator,
    take: F,
    release: impl Fn(G) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
) where
    F: Fn() -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = G> + Send,
    G: Send + 'static,
{
    cur.acquire();
    let waiter = tokio::spawn({
        let take = take.clone();
        async move {
            let g = take().await;
            (g, now_ms())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "baton got in while Curator held");
    let released = cur.release();
    let (g, granted) = bounded("baton woken by Curator's release", Duration::from_secs(10), waiter).await.unwrap();
    assert!(granted >= released, "baton granted at {granted} before Curator released at {released}");
    assert!(granted - released < WAKE_MS, "baton woken {} ms after Curator's release", granted - released);

    cur.send("acquire 10000");
    assert!(cur.next(Duration::from_millis(500)).is_none(), "Curator got in while baton held");
    let released = now_ms();
    release(g).await;
    let granted = cur.at("ACQUIRED", Duration::from_secs(10));
    assert!(granted + 5 >= released, "Curator granted at {granted} before baton released at {released}");
    assert!(
        granted.saturating_sub(released) < WAKE_MS,
        "Curator woken {} ms after baton's release",
        granted - released
    );
    cur.release();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Curator harness: scripts/test zk-interop"]
async fn mutex_both_ways() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    let name = unique("curator-mutex");
    let c = Client::connect(&url()).await.unwrap();
    let lock = c.lock(&name);
    both_ways(
        Curator::start("mutex", &name),
        move || {
            let lock = lock.clone();
            async move { lock.acquire().await.unwrap() }
        },
        |g| Box::pin(async move { g.release().await.unwrap() }),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Curator harness: scripts/test zk-interop"]
async fn rw_lock_both_ways_and_readers_share() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    let name = unique("curator-rw");
    let c = Client::connect(&url()).await.unwrap();
    // Curator's writer against baton's reader, both ways.
    let rw = c.rw_lock(&name);
    both_ways(
        Curator::start("write", &name),
        move || {
            let rw = rw.clone();
            async move { rw.read().await.unwrap() }
        },
        |g| Box::pin(async move { g.release().await.unwrap() }),
    )
    .await;
    // Curator's reader against baton's writer.
    let rw = c.rw_lock(&name);
    both_ways(
        Curator::start("read", &name),
        move || {
            let rw = rw.clone();
            async move { rw.write().await.unwrap() }
        },
        |g| Box::pin(async move { g.release().await.unwrap() }),
    )
    .await;
    // Readers of both share.
    let mut cur = Curator::start("read", &name);
    cur.acquire();
    let r = bounded("baton reads beside Curator", Duration::from_secs(5), c.rw_lock(&name).read()).await.unwrap();
    assert!(c.rw_lock(&name).try_write().await.unwrap().is_none());
    r.release().await.unwrap();
    cur.release();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Curator harness: scripts/test zk-interop"]
async fn semaphore_v2_both_ways() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    let name = unique("curator-sem");
    let c = Client::connect(&url()).await.unwrap();
    // Two permits: baton takes one beside Curator's, then a second baton waiter waits.
    let mut cur = Curator::start("semaphore:2", &name);
    cur.acquire();
    let sem = c.semaphore(&name, 2);
    let one = sem.acquire().await.unwrap();
    assert!(sem.try_acquire().await.unwrap().is_none(), "a third permit out of two");
    let waiter = tokio::spawn({
        let sem = sem.clone();
        async move { (sem.acquire().await.unwrap(), now_ms()) }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished());
    let released = cur.release();
    let (two, granted) = bounded("baton woken by Curator's lease", Duration::from_secs(10), waiter).await.unwrap();
    assert!(granted >= released && granted - released < WAKE_MS, "woken {} ms after", granted.saturating_sub(released));
    // Both permits baton's: Curator waits, and is woken by baton's release.
    cur.send("acquire 10000");
    assert!(cur.next(Duration::from_millis(500)).is_none(), "Curator took a third permit out of two");
    let released = now_ms();
    two.release().await.unwrap();
    let granted = cur.at("ACQUIRED", Duration::from_secs(10));
    assert!(granted.saturating_sub(released) < WAKE_MS, "Curator woken {} ms after", granted.saturating_sub(released));
    one.release().await.unwrap();
    cur.release();
}
