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

/// The first column of `sql`'s one row, as a number (the cut tests' plain-SQL probes).
async fn count<DB>(c: &mut DB::Connection, sql: &str) -> i64
where
    DB: sqlx::Database,
    i64: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    use sqlx::{Executor, Row};
    c.fetch_one(sql).await.unwrap().try_get::<i64, usize>(0).unwrap()
}

/// What both cut-mid-acquire checks start from: a relay to `url`, A through it, C direct.
async fn relayed_pair(url: &str) -> (baton_testkit::Relay, Client, Client) {
    let relay = baton_testkit::Relay::start(baton_testkit::target_of(url)).await;
    let (a, c) = (Client::connect(&relay.via(url)).await.unwrap(), Client::connect(url).await.unwrap());
    (relay, a, c)
}

/// The statements waiting on the blocker's row locks: `sql` with `{blocker}` replaced by
/// the blocker's session id (which `session_id` reads), and how many waited before.
struct LockWaits {
    sql: String,
    before: i64,
}

impl LockWaits {
    /// Read before the blocker's transaction begins (the session id query runs outside it).
    async fn of<DB>(blocker: &mut DB::Connection, session_id: &str, sql: &str) -> String
    where
        DB: sqlx::Database,
        i64: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
        usize: sqlx::ColumnIndex<DB::Row>,
        for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    {
        let id = count::<DB>(blocker, session_id).await;
        sql.replace("{blocker}", &id.to_string())
    }

    /// The count now, once the blocker holds its row.
    async fn mark<DB>(probe: &mut DB::Connection, sql: String) -> LockWaits
    where
        DB: sqlx::Database,
        i64: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
        usize: sqlx::ColumnIndex<DB::Row>,
        for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    {
        let before = count::<DB>(probe, &sql).await;
        LockWaits { sql, before }
    }

    /// Until one more statement waits (A's), bounded by 20 s for a loaded machine.
    async fn one_more<DB>(&self, probe: &mut DB::Connection, what: &str)
    where
        DB: sqlx::Database,
        i64: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
        usize: sqlx::ColumnIndex<DB::Row>,
        for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    {
        bounded(what, Duration::from_secs(20), async {
            while count::<DB>(probe, &self.sql).await <= self.before {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }
}

/// A connection cut while the `table` scheme's `INSERT` is in the database: the insert
/// goes through there but its reply never comes back. An uncommitted row of the same name
/// (another session's open transaction) holds A's `INSERT` waiting on the unique index; the
/// relay to A is cut; the transaction rolls back, so A's row is inserted with nobody to
/// hear of it. A's acquire fails with a typed error, and the row it left is no orphan: it
/// carries A's lease on the database's clock, so C is granted once that lease ends (3 s
/// here; the bound adds 20 s for a loaded machine) and the reclaim removes A's row.
/// `blocker` and `probe` are plain connections; `lock_waits` counts the statements
/// waiting on the blocker's row (`{blocker}` in it: the blocker's session id, which
/// `session_id` reads).
pub(crate) async fn cut_mid_acquire<DB>(
    url: &str,
    blocker: &mut DB::Connection,
    probe: &mut DB::Connection,
    session_id: &str,
    lock_waits: &str,
) where
    DB: sqlx::Database,
    i64: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    use sqlx::Executor;
    let lease = Duration::from_secs(3);
    let (relay, a, c) = relayed_pair(url).await;
    let name = unique("cut-mid-acquire");
    let rows = format!("SELECT COUNT(*) FROM baton_lock WHERE name = '{name}'");
    // A's first step makes the tables; done now, so that it does not wait for the
    // blocker's transaction on the table's metadata lock (MariaDB) instead of on the row.
    a.lock(&name).try_acquire().await.unwrap().expect("free").release().await.unwrap();
    let lock_waits = LockWaits::of::<DB>(blocker, session_id, lock_waits).await;
    let mut tx = sqlx::Connection::begin(blocker).await.unwrap();
    let row = format!(
        "INSERT INTO baton_lock (name, owner, expires_at, hold_count, token) VALUES ('{name}', 'blocker', NULL, 1, 0)"
    );
    (&mut *tx).execute(row.as_str()).await.unwrap();
    let waits = LockWaits::mark::<DB>(probe, lock_waits).await;
    let lock = a.lock_with(&name, baton::LockOptions::new().lease(lease));
    let acquire = tokio::spawn(async move { lock.acquire_timeout(Duration::from_secs(6)).await });
    waits.one_more::<DB>(probe, "A's INSERT waiting on the blocker's row").await;
    relay.cut();
    tx.rollback().await.unwrap();
    // The database now inserts A's row; its reply stays in the cut relay.
    bounded("A's row inserted in the database", Duration::from_secs(20), async {
        while count::<DB>(probe, &rows).await == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let e = bounded("A's acquire", Duration::from_secs(30), acquire).await.unwrap().map(drop).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Connection), "{e}");
    let g =
        bounded("C's grant after A's lease", lease + Duration::from_secs(20), c.lock(&name).acquire()).await.unwrap();
    let owners = format!("SELECT COUNT(*) FROM baton_lock WHERE name = '{name}' AND owner = '{}'", g.owner());
    assert_eq!(count::<DB>(probe, &rows).await, 1, "A's row is gone, C's is the only one");
    assert_eq!(count::<DB>(probe, &owners).await, 1, "the row is C's");
    g.release().await.unwrap();
    assert_eq!(count::<DB>(probe, &rows).await, 0, "C's release deletes its row");
    drop(relay);
    a.close().await;
    c.close().await;
}

/// baton's default scheme (`scheme=state`) cut mid-acquire. Its step is one transaction
/// that locks the key's row (`SELECT … FOR UPDATE`), decides and writes; the worst moment
/// to lose the route is right after that lock is taken, which leaves the row locked by a
/// session whose client hears nothing more. Made deterministic as in [`cut_mid_acquire`]:
/// a plain transaction (`blocker`) locks the row, A's step waits on it, the relay to A is
/// cut, the blocker commits, and A's `SELECT` takes the row lock in the database with its
/// reply held in the relay.
///
/// A's acquire must fail with a typed error (`Timeout`/`Connection`), not hang while the
/// route is cut (it did, past its 6 s timeout, until the store bounded a step's replies):
/// within the store's bound on a step (20 s, above the 10 s a live step may wait behind a
/// silent one) plus 20 s of margin for a loaded machine. No orphan: A's step never
/// committed, so once the server ends A's session (10 s idle inside a step's transaction,
/// set on every connection of the store) the transaction rolls back. C, whose acquire
/// starts at the cut and waits on the row meanwhile, is granted within those 10 s plus
/// 20 s of margin, not after a lease (A's would be 60 s, so a grant that went through A's
/// write would show), and the row's state never names A's owner. `{blocker}` in
/// `lock_waits`: the blocker's session id (`session_id`).
pub(crate) async fn state_cut_mid_acquire<DB>(
    url: &str,
    blocker: &mut DB::Connection,
    probe: &mut DB::Connection,
    session_id: &str,
    lock_waits: &str,
) where
    DB: sqlx::Database,
    i64: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    use sqlx::Executor;
    let (relay, a, c) = relayed_pair(url).await;
    let name = unique("state-cut-mid-acquire");
    let a_owner = unique("cut-a").replace('/', "-");
    let key = format!("family = 'lock' AND name = '{name}'");
    // A's owner anywhere in the key's state (as a holder or a queue place).
    let a_traces = format!("SELECT COUNT(*) FROM baton_state WHERE {key} AND state LIKE '%{a_owner}%'");
    // The key's row exists from a first grant on (the table too), so A's step locks it.
    a.lock(&name).try_acquire().await.unwrap().expect("free").release().await.unwrap();
    assert_eq!(count::<DB>(probe, &format!("SELECT COUNT(*) FROM baton_state WHERE {key}")).await, 1);
    let lock_waits = LockWaits::of::<DB>(blocker, session_id, lock_waits).await;
    let mut tx = sqlx::Connection::begin(blocker).await.unwrap();
    (&mut *tx).execute(format!("SELECT state FROM baton_state WHERE {key} FOR UPDATE").as_str()).await.unwrap();
    let waits = LockWaits::mark::<DB>(probe, lock_waits).await;
    let opts = baton::LockOptions::new().lease(Duration::from_secs(60)).owner(a_owner.clone());
    let lock = a.lock_with(&name, opts);
    let started = tokio::time::Instant::now();
    let acquire = tokio::spawn(async move { lock.acquire_timeout(Duration::from_secs(6)).await });
    waits.one_more::<DB>(probe, "A's step waiting on the blocker's row lock").await;
    relay.cut();
    let cut = tokio::time::Instant::now();
    tx.commit().await.unwrap();
    // A's session now holds the row lock; the reply saying so stays in the cut relay.
    let c_lock = c.lock(&name);
    let c_acquire = tokio::spawn(async move { c_lock.acquire().await.map(|g| (g, cut.elapsed())) });
    let e = bounded("A's acquire", Duration::from_secs(40), acquire).await.unwrap().map(drop).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Timeout | ErrorKind::Connection), "{e}");
    eprintln!("A's acquire failed {:?} after it began: {e}", started.elapsed());
    let (g, after) =
        bounded("C's grant after A's session ends", Duration::from_secs(30), c_acquire).await.unwrap().unwrap();
    eprintln!("C granted {after:?} after the cut");
    assert!(after < Duration::from_secs(30), "C granted {after:?} after the cut");
    assert_eq!(count::<DB>(probe, &a_traces).await, 0, "A's owner left in the key's state");
    g.release().await.unwrap();
    relay.heal();
    assert_eq!(count::<DB>(probe, &a_traces).await, 0, "A's owner left in the key's state");
    drop(relay);
    a.close().await;
    c.close().await;
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
        baton_testkit::cross_process_suite!(self::table_store);

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn killed_holder_for_each_scheme() {
            for s in ["optimistic", "for-update", "advisory"] {
                super::killed_holder(&url(s)).await;
            }
        }

        #[tokio::test]
        async fn other_kinds_are_unsupported() {
            for s in ["table", "for-update", "optimistic", "advisory"] {
                super::other_kinds_are_unsupported(&url(s), s).await;
            }
        }

        #[tokio::test]
        async fn bad_identifiers_are_refused() {
            super::bad_identifiers_are_refused(&url("table")).await;
            super::bad_identifiers_are_refused(&url("optimistic")).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn table_cut_mid_acquire() {
            let (mut blocker, mut probe) = (raw().await, raw().await);
            super::cut_mid_acquire::<<$conn as sqlx::Connection>::Database>(
                &url("table"),
                &mut blocker,
                &mut probe,
                SESSION_ID,
                LOCK_WAITS,
            )
            .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn state_cut_mid_acquire() {
            let (mut blocker, mut probe) = (raw().await, raw().await);
            super::state_cut_mid_acquire::<<$conn as sqlx::Connection>::Database>(
                &url("state"),
                &mut blocker,
                &mut probe,
                SESSION_ID,
                STATE_LOCK_WAITS,
            )
            .await;
        }

        /// Every design of the database: baton's own and the four schemes.
        fn designs() -> Vec<(&'static str, String)> {
            let mut d = vec![("state", base())];
            for s in ["table", "for-update", "optimistic", "advisory"] {
                d.push((s, url(s)));
            }
            d
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn designs_exclude_each_other() {
            super::designs_exclude_each_other(&designs()).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn mixed_designs_never_overlap() {
            super::mixed_designs_never_overlap(&designs()).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn pool_exhaustion_is_an_error() {
            super::pool_exhaustion_is_an_error(&url("for-update")).await;
            super::pool_exhaustion_is_an_error(&url("advisory")).await;
        }
    };
    // One scheme's module: its store and the behaviour checks of its set (`@locks`, or
    // `@pinned_locks` where a hold pins a connection).
    (@row $module:ident, $scheme:literal, $set:ident) => {
        mod $module {
            pub(crate) fn store() -> baton_testkit::behaviour::Store {
                baton_testkit::behaviour::Store { url: super::url($scheme), keep: None }
            }
            baton_testkit::behaviour_suite!(@ $set super::store);
        }
    };
}

/// Every design of one database (`(label, url)`: baton's own `state` and the schemes)
/// against every other on one name: held under A, an attempt under B is busy (never a
/// second grant; the hold shows in B's `inspect`), B is granted once A releases, with a
/// larger token, and A is then busy in turn. Before the claims (`scheme/claim.rs`) every
/// pair granted both at once, and the counter's tokens (1, 2, …) fell below `state`'s.
pub(crate) async fn designs_exclude_each_other(designs: &[(&str, String)]) {
    let mut clients = Vec::new();
    for (label, url) in designs {
        clients.push((*label, Client::connect(url).await.unwrap()));
    }
    for (la, a) in &clients {
        for (lb, b) in &clients {
            if la == lb {
                continue;
            }
            let name = unique("cross-design");
            let g = a.lock(&name).try_acquire().await.unwrap().expect("a fresh name is free");
            match b.lock(&name).try_acquire().await {
                Ok(None) => {}
                Ok(Some(g2)) => panic!(
                    "{name}: held under {la} (token {}), granted under {lb} too (token {})",
                    g.token().get(),
                    g2.token().get()
                ),
                Err(e) => panic!("{name}: held under {la}, {lb} failed instead of busy: {e}"),
            }
            assert!(b.inspect(&name).await.unwrap().is_held(), "{name}: {la}'s hold not seen under {lb}");
            let t = g.token();
            g.release().await.unwrap();
            let g2 = b.lock(&name).try_acquire().await.unwrap();
            let g2 = g2.unwrap_or_else(|| panic!("{name}: free again after {la}'s release, busy under {lb}"));
            assert!(g2.token() > t, "{name}: {lb}'s token {} after {la}'s {}", g2.token().get(), t.get());
            assert!(
                a.lock(&name).try_acquire().await.unwrap().is_none(),
                "{name}: held under {lb}, granted under {la}"
            );
            let t2 = g2.token();
            g2.release().await.unwrap();
            let g3 = a.lock(&name).try_acquire().await.unwrap().expect("free after the release");
            assert!(g3.token() > t2, "{name}: {la}'s token {} after {lb}'s {}", g3.token().get(), t2.get());
            g3.release().await.unwrap();
        }
    }
    for (_, c) in clients {
        c.close().await;
    }
}

/// Two tasks per design, every design contending for one name at once, each grant held
/// for 10 ms: never two holders at a time (an in-process count), and tokens rise in grant
/// order across the designs. A wait for a hold under another design ends at the engine's
/// re-check (each second) at the latest, so each acquire gets 60 s on a loaded machine.
pub(crate) async fn mixed_designs_never_overlap(designs: &[(&str, String)]) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let name = unique("mixed-designs");
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let grants = Arc::new(std::sync::Mutex::new(Vec::<(u64, String)>::new()));
    let mut tasks = Vec::new();
    let mut clients = Vec::new();
    for (label, url) in designs {
        let c = Client::connect(url).await.unwrap();
        for _ in 0..2 {
            let (c, name, label) = (c.clone(), name.clone(), label.to_string());
            let (inside, overlaps, grants) = (inside.clone(), overlaps.clone(), grants.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..3 {
                    let lock = c.lock(&name);
                    let g = bounded("a grant", Duration::from_secs(70), lock.acquire_timeout(Duration::from_secs(60)))
                        .await
                        .unwrap_or_else(|e| panic!("{label}: {e}"));
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    grants.lock().unwrap().push((g.token().get(), label.clone()));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.unwrap();
                }
            }));
        }
        clients.push(c);
    }
    for t in tasks {
        t.await.unwrap();
    }
    let grants = grants.lock().unwrap().clone();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two holders at once; grants: {grants:?}");
    assert!(grants.windows(2).all(|w| w[1].0 > w[0].0), "tokens did not rise in grant order: {grants:?}");
    for c in clients {
        c.close().await;
    }
}

/// The server ends the holder's session while it holds under `scheme` (`for-update`,
/// `advisory`): `kill` runs the server's statement for it (`pg_terminate_backend`, `KILL
/// CONNECTION`) on the session the counter row names. The lock is free at once on the
/// server, so the holder's lost signal must fire at once too — not at its next renewal,
/// 20 s away here (lease 60 s, renewed every 20 s). The bound, 1 s after the kill, is far
/// below that and far above the loopback close's delivery (well under 10 ms), for a
/// loaded machine. The next holder is granted (the lock was free), with a larger token.
pub(crate) async fn killed_session_is_lost_at_once<F, Fut>(url: &str, scheme: &str, kill: F)
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (a, b) = (Client::connect(url).await.unwrap(), Client::connect(url).await.unwrap());
    let name = unique("killed-session");
    let opts = baton::LockOptions::new().lease(Duration::from_secs(60)).renew_every(Duration::from_secs(20));
    let g = a.lock_with(&name, opts).acquire().await.unwrap();
    let lost = g.lost();
    let waiter = tokio::spawn({
        let (b, name) = (b.clone(), name.clone());
        async move {
            let g = b.lock(&name).acquire_timeout(Duration::from_secs(30)).await;
            (g, tokio::time::Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let killed = tokio::time::Instant::now();
    kill(name.clone()).await;
    let r = tokio::time::timeout(Duration::from_secs(1), lost).await;
    let lost_after = killed.elapsed();
    assert!(r.is_ok(), "{scheme}: the holder's session was ended but its lost signal did not fire within 1 s");
    let (g2, granted_at) = bounded("the next holder", Duration::from_secs(40), waiter).await.unwrap();
    let g2 = g2.unwrap();
    eprintln!(
        "{scheme}: lost {lost_after:?} after the kill; the next holder granted {:?} after it",
        granted_at.saturating_duration_since(killed)
    );
    assert!(g2.token() > g.token(), "{scheme}: tokens rise");
    assert!(g.is_lost());
    drop(g);
    g2.release().await.unwrap();
    a.close().await;
    b.close().await;
}

mod faults;
mod mysql;
mod postgres;
mod sqlite;
