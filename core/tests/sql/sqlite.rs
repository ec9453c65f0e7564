//! The behaviour suite on `sqlite://` (one database file per test), the cross-process
//! checks, and SQLite's own: tokens survive a reopen, unwritable paths.
#![cfg(feature = "sqlite")]

use baton::{Client, ErrorKind};
use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::{Store, unique};

fn store() -> Store {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/baton.db", dir.path().display());
    Store { url, keep: Some(Box::new(dir)) }
}

behaviour_suite!(crate::sqlite::store);
cross_process_suite!(crate::sqlite::store);

/// Tokens survive closing every client and reopening the file.
#[tokio::test]
async fn tokens_survive_reopen() {
    let store = store();
    let name = unique("reopen");
    let a = Client::connect(&store.url).await.unwrap();
    let t1 = a.lock(&name).acquire().await.unwrap().token();
    a.close().await;
    let b = Client::connect(&store.url).await.unwrap();
    let g = b.lock(&name).acquire().await.unwrap();
    assert!(g.token() > t1);
    g.release().await.unwrap();
}

/// A database path that cannot be created is an error, not a panic, and names the path.
#[tokio::test]
async fn unwritable_path() {
    for url in ["sqlite:///proc/baton-nope/x.db", "sqlite:///nonexistent-dir-baton/sub/x.db"] {
        let e = Client::connect(url).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        assert!(e.to_string().contains("x.db"), "{e}");
    }
    let e = Client::connect("sqlite://").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{e}");
}

/// A multi-lock over two stores (this SQLite file and an in-process store) is
/// all-or-nothing across both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_across_stores() {
    let store = store();
    let sql = Client::connect(&store.url).await.unwrap();
    let mem = Client::connect(&format!("memory://{}", uuid::Uuid::new_v4().simple())).await.unwrap();
    let (a, b) = (unique("multi-sql"), unique("multi-mem"));
    let both = || baton::MultiLock::new([sql.lock(&a), mem.lock(&b)]);
    let blocker = mem.lock(&b).acquire().await.unwrap();
    assert!(both().try_acquire().await.unwrap().is_none());
    // The SQLite half was given back (in the background: allow it a moment).
    behaviour::bounded("partial grant released", std::time::Duration::from_secs(5), async {
        while sql.inspect(&a).await.unwrap().is_held() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    blocker.release().await.unwrap();
    let g = both().acquire().await.unwrap();
    assert_eq!(g.tokens().len(), 2);
    assert!(sql.lock(&a).try_acquire().await.unwrap().is_none());
    assert!(mem.lock(&b).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    assert!(sql.lock(&a).try_acquire().await.unwrap().is_some());
}
