//! What the SQL lock schemes' test files share: checks that only use baton (the plain
//! SQL side of each check lives in the file of its database).
#![allow(dead_code)]

use std::time::Duration;

use baton::{Client, ErrorKind};
use baton_testkit::behaviour::{bounded, unique, with_option};

/// Every primitive but plain locks is refused with `Unsupported` naming the scheme and
/// where the primitive is.
pub(crate) async fn other_kinds_are_unsupported(url: &str, scheme: &str) {
    let c = Client::connect(url).await.unwrap();
    let name = unique("only-locks");
    let errs = [
        c.fair_lock(&name).try_acquire().await.map(drop).unwrap_err(),
        c.rw_lock(&name).try_read().await.map(drop).unwrap_err(),
        c.semaphore(&name, 2).try_acquire().await.map(drop).unwrap_err(),
        c.count_down_latch(&name).try_set_count(1).await.map(drop).unwrap_err(),
    ];
    for e in errs {
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.to_string().contains(scheme) && e.to_string().contains("scheme=state"), "{e}");
    }
    c.close().await;
}

/// Names with quotes, semicolons and comment marks are data: each is its own lock, and a
/// second client sees it held under exactly that name.
pub(crate) async fn odd_names_are_data(url: &str) -> Vec<String> {
    let (a, b) = (Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap());
    let base = unique("odd");
    let names: Vec<String> =
        ["'; DROP TABLE baton_lock_fence; --", "a\"b`c", "x' OR '1'='1", "-- comment", "semi;colon"]
            .iter()
            .map(|n| format!("{base}/{n}"))
            .collect();
    let mut guards = Vec::new();
    for n in &names {
        guards.push(a.lock(n).try_acquire().await.unwrap().expect("free"));
    }
    for n in &names {
        assert!(b.lock(n).try_acquire().await.unwrap().is_none(), "{n} not held");
        assert!(b.inspect(n).await.unwrap().is_held(), "{n}");
    }
    assert!(b.lock(&base).try_acquire().await.unwrap().is_some(), "the base name is another lock");
    for g in guards {
        g.release().await.unwrap();
    }
    a.close().await;
    names
}

/// Bad table and column options are refused before anything is sent.
pub(crate) async fn bad_identifiers_are_refused(url: &str) {
    for opt in ["table=x;drop", "name_column=a--", "fence_table=\"q\"", "owner_column=a%20b", "create=maybe"] {
        let e = Client::connect(&with_option(url, opt)).await.unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::InvalidUrl), "{opt}: {e}");
    }
}

/// `for-update` and `advisory` pin one connection per held lock: with `?pool=2`, a third
/// lock fails with a `Connection` error naming the pool (after the 2 s a wait rides out
/// connection errors, not at its timeout), and works again after a
/// release.
pub(crate) async fn pool_exhaustion_is_an_error(url: &str) {
    let c = Client::connect(&with_option(url, "pool=2")).await.unwrap();
    let base = unique("pool");
    let g1 = c.lock(&format!("{base}/1")).acquire().await.unwrap();
    let g2 = c.lock(&format!("{base}/2")).acquire().await.unwrap();
    let t0 = tokio::time::Instant::now();
    let r = bounded("third lock", Duration::from_secs(10), c.lock(&format!("{base}/3")).acquire()).await;
    let e = r.map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.to_string().contains("pool"), "{e}");
    // Bound: a wait rides out `Connection` errors for up to 2 s (a store restart), so
    // the error comes after that window; far below the 10 s a hang would take.
    assert!(t0.elapsed() < Duration::from_secs(6), "took {:?}", t0.elapsed());
    g1.release().await.unwrap();
    let g3 = c.lock(&format!("{base}/3")).acquire().await.unwrap();
    g2.release().await.unwrap();
    g3.release().await.unwrap();
    c.close().await;
}

/// A process holding a lock is SIGKILLed: another gets it once the database notices
/// (expiry, or the closed connection), with a larger token.
pub(crate) async fn killed_holder(url: &str) {
    let store = baton_testkit::behaviour::Store { url: url.to_owned(), keep: None };
    baton_testkit::behaviour::crash::killed_holder_process_frees(&store).await;
}

/// For a database server's test file: `base()` (the server's URL, from the environment
/// variable `$env`), `url(scheme)`, `raw()` (a plain sqlx connection of type `$conn`), the
/// behaviour suite's lock checks for each scheme, and the checks above. The session schemes
/// leave out `owner_option_reenters` (a hold lives in the client that took it, so two
/// clients given one owner do not re-enter each other's hold) and `watchdog_renews_many`
/// (150 held locks would pin 150 of the shared server's connections; the pool limit is
/// checked by `pool_exhaustion_is_an_error` instead).
#[allow(unused_macros)]
macro_rules! server_schemes {
    ($env:literal, $conn:ty) => {
        fn base() -> String {
            baton_testkit::behaviour::crash::server_url($env)
        }

        fn url(scheme: &str) -> String {
            baton_testkit::behaviour::with_option(&base(), &format!("scheme={scheme}"))
        }

        async fn raw() -> $conn {
            <$conn as sqlx::Connection>::connect(&base()).await.unwrap()
        }

        server_schemes!(@row table, "table", locks);
        server_schemes!(@row optimistic, "optimistic", locks);
        server_schemes!(@row for_update, "for-update", pinned_locks);
        server_schemes!(@row advisory, "advisory", pinned_locks);

        fn table_store() -> baton_testkit::behaviour::Store {
            baton_testkit::behaviour::Store { url: url("table"), keep: None }
        }
        baton_testkit::cross_process_suite!(crate::table_store);

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn killed_holder_for_each_scheme() {
            for s in ["optimistic", "for-update", "advisory"] {
                sql_schemes::killed_holder(&url(s)).await;
            }
        }

        #[tokio::test]
        async fn other_kinds_are_unsupported() {
            for s in ["table", "for-update", "optimistic", "advisory"] {
                sql_schemes::other_kinds_are_unsupported(&url(s), s).await;
            }
        }

        #[tokio::test]
        async fn bad_identifiers_are_refused() {
            sql_schemes::bad_identifiers_are_refused(&url("table")).await;
            sql_schemes::bad_identifiers_are_refused(&url("optimistic")).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn pool_exhaustion_is_an_error() {
            sql_schemes::pool_exhaustion_is_an_error(&url("for-update")).await;
            sql_schemes::pool_exhaustion_is_an_error(&url("advisory")).await;
        }
    };
    // One scheme's module: its store and the behaviour checks of its set (`@locks`, or
    // `@pinned_locks` where a hold pins a connection).
    (@row $module:ident, $scheme:literal, $set:ident) => {
        mod $module {
            pub(crate) fn store() -> baton_testkit::behaviour::Store {
                baton_testkit::behaviour::Store { url: crate::url($scheme), keep: None }
            }
            baton_testkit::behaviour_suite!(@ $set crate::$module::store);
        }
    };
}
