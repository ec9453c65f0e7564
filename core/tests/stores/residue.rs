//! Names used once leave nothing behind: 10 000 locks (2 000 on PostgreSQL and MySQL), and
//! 100 names of every other primitive, held and released, leave no Redis key and no SQL row
//! under their names.
//! Redis removes a free name's keys in the release that frees it (the fencing counter
//! when it stands below the server's clock: `?free=`, docs/redis-layout.md); the SQL
//! stores mark the row free and a later step's sweep removes rows free for longer than
//! 10 s (`sql::FREE_GRACE`). Tokens stay above every earlier one either way (`tokens.rs`).
//! `?free=keep` keeps the counters, for names shared with Redisson's `RFencedLock`.
#![cfg(feature = "full")]

use std::sync::Arc;
use std::time::Duration;

use baton::Client;
use baton_testkit::behaviour::bounded;
use baton_testkit::behaviour::crash::server_url;

const LOCKS: usize = 10_000;
/// Lock names on PostgreSQL and MySQL: their rows go through the same code as SQLite's
/// (`store/sql`: the free mark, the sweep), which takes `LOCKS`; 10 000 grants on each
/// server were the slowest part of the rust suite.
const SERVER_SQL_LOCKS: usize = 2_000;
const OTHERS: usize = 100;
const TASKS: usize = 16;
/// The SQL stores' sweep grace (10 s) and a second of slack.
const PAST_GRACE: Duration = Duration::from_secs(11);

fn prefix() -> String {
    format!("residue-{}", uuid::Uuid::new_v4().simple())
}

/// Which primitives besides locks `use_names` takes.
#[derive(Clone, Copy, PartialEq)]
enum Others {
    All,
    /// All but fair locks (`?scheme=simple` has none).
    NoFair,
    None,
}

/// Holds and releases `locks` lock names, and `OTHERS` names of every other primitive
/// `others` names: fair locks, read and write holds, semaphore permits (two at once),
/// expirable permits, latches counted down to zero.
async fn use_names(url: &str, prefix: &str, locks: usize, others: Others) {
    let c = Arc::new(Client::connect(url).await.unwrap());
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (c, prefix) = (c.clone(), prefix.to_owned());
            tokio::spawn(async move {
                for i in (t..locks).step_by(TASKS) {
                    c.lock(&format!("{prefix}/l{i}")).acquire().await.unwrap().release().await.unwrap();
                }
                if others == Others::None {
                    return;
                }
                for i in (t..OTHERS).step_by(TASKS) {
                    if others == Others::All {
                        c.fair_lock(&format!("{prefix}/f{i}")).acquire().await.unwrap().release().await.unwrap();
                    }
                    let rw = c.rw_lock(&format!("{prefix}/rw{i}"));
                    rw.read().await.unwrap().release().await.unwrap();
                    rw.write().await.unwrap().release().await.unwrap();
                    let sem = c.semaphore(&format!("{prefix}/s{i}"), 3);
                    let (a, b) = (sem.acquire().await.unwrap(), sem.acquire().await.unwrap());
                    a.release().await.unwrap();
                    b.release().await.unwrap();
                    let p = c.permit_semaphore(&format!("{prefix}/p{i}"), 2).acquire().await.unwrap();
                    p.release().await.unwrap();
                    let latch = c.count_down_latch(&format!("{prefix}/c{i}"));
                    assert!(latch.try_set_count(1).await.unwrap());
                    assert_eq!(latch.count_down().await.unwrap(), 0);
                }
            })
        })
        .collect();
    // A backstop against a hang: 10 000 grants take seconds on each store.
    bounded("holding and releasing the names", Duration::from_secs(300), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await;
    c.close().await;
}

/// The keys of a Redis server whose names contain `prefix`.
async fn redis_keys(url: &str, prefix: &str) -> Vec<String> {
    let mut con = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let mut keys: Vec<String> = Vec::new();
    let mut cursor = 0u64;
    // Bounded: a SCAN over one test server ends within a few thousand rounds.
    for _ in 0..100_000 {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("*{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .unwrap();
        keys.extend(batch);
        cursor = next;
        if cursor == 0 {
            return keys;
        }
    }
    panic!("SCAN did not end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_free_names_leave_no_keys() {
    let url = server_url("BATON_TEST_REDIS_URL");
    for (options, others) in [("", Others::All), ("?scheme=simple&semaphore=rsemaphore", Others::NoFair)] {
        let p = prefix();
        use_names(&format!("{url}{options}"), &p, LOCKS, others).await;
        let left = redis_keys(&url, &p).await;
        assert!(left.is_empty(), "{options}: {} keys left, e.g. {:?}", left.len(), &left[..left.len().min(5)]);
    }
    // With `?free=keep` every lock keeps its counter, as before this option.
    let p = prefix();
    let c = Client::connect(&format!("{url}?free=keep")).await.unwrap();
    for i in 0..10 {
        c.lock(&format!("{p}/l{i}")).acquire().await.unwrap().release().await.unwrap();
    }
    let left = redis_keys(&url, &p).await;
    assert_eq!(left.len(), 10, "{left:?}");
    assert!(left.iter().all(|k| k.starts_with("redisson_lock_token:{")), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_free_names_leave_no_keys() {
    let url = server_url("BATON_TEST_REDLOCK_URL");
    let p = prefix();
    use_names(&url, &p, LOCKS, Others::None).await;
    // A name's token counter, left up to 250 ms above a node's clock by the round's token
    // floor, expires once that clock passes it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for node in url.trim_start_matches("redlock://").split(',') {
        let left = redis_keys(&format!("redis://{node}"), &p).await;
        assert!(left.is_empty(), "{node}: {} keys left, e.g. {:?}", left.len(), &left[..left.len().min(5)]);
    }
}

/// Rows of `baton_state` whose names start with `prefix`.
async fn sql_rows(url: &str, prefix: &str) -> i64 {
    use sqlx::Connection;
    let count = format!("SELECT COUNT(*) FROM baton_state WHERE name LIKE '{prefix}%'");
    match url.split(':').next().unwrap() {
        "sqlite" => {
            let mut db = sqlx::SqliteConnection::connect(url).await.unwrap();
            sqlx::query_scalar(&count).fetch_one(&mut db).await.unwrap()
        }
        "postgres" => {
            let mut db = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::query_scalar(&count).fetch_one(&mut db).await.unwrap()
        }
        _ => {
            let mut db = sqlx::MySqlConnection::connect(url).await.unwrap();
            sqlx::query_scalar(&count).fetch_one(&mut db).await.unwrap()
        }
    }
}

async fn free_names_leave_no_rows(url: &str, locks: usize) {
    let p = prefix();
    use_names(url, &p, locks, Others::All).await;
    // Within the grace the rows are still there (marked free): a name in use keeps its row.
    assert!(sql_rows(url, &p).await > 0, "{url}: rows went before the grace");
    tokio::time::sleep(PAST_GRACE).await;
    // Any client's next step that frees a key sweeps (a new client's first one does).
    let c = Client::connect(url).await.unwrap();
    c.lock(&format!("{}/trigger", prefix())).acquire().await.unwrap().release().await.unwrap();
    c.close().await;
    assert_eq!(sql_rows(url, &p).await, 0, "{url}: rows left after the sweep");
}

/// SQLite, PostgreSQL and MySQL side by side, so that the grace is waited out once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_free_names_leave_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/r.db", dir.path().display());
    let (pg, my) = (server_url("BATON_TEST_POSTGRES_URL"), server_url("BATON_TEST_MYSQL_URL"));
    tokio::join!(
        free_names_leave_no_rows(&sqlite, LOCKS),
        free_names_leave_no_rows(&pg, SERVER_SQL_LOCKS),
        free_names_leave_no_rows(&my, SERVER_SQL_LOCKS)
    );
}
