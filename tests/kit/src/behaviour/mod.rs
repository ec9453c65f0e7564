//! The behaviour suite: every semantic rule of baton's primitives (exclusion, waiting,
//! reentrancy, leases and their loss, fairness, readers/writers, permits, latches,
//! multi-locks, errors), as checks that take a store. A store joins by adding a test file
//! that calls `behaviour_suite!` with its `fn() -> Store`.

pub mod crash;
pub mod election;
pub mod errors;
pub mod fair;
pub mod latch;
pub mod lock;
pub mod multi;
pub mod permits;
pub mod rw;
pub mod semaphore;

use std::future::Future;
use std::time::Duration;

use baton::Client;

/// One store under test: every call to `url()` names the same shared store.
pub struct Store {
    pub url: String,
    /// Keeps the store's files (a temp dir) alive for the test.
    pub keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Store {
    pub async fn client(&self) -> Client {
        Client::connect(&self.url).await.expect("connect")
    }
}

impl Store {
    /// The shared server of `scripts/services` whose URL is in `var` (see `env_server`),
    /// with `options` (`""` or `a=b&c=d`) added; every check names its keys with
    /// `unique()`.
    pub fn from_env(var: &str, what: &str, options: &str) -> Store {
        let url = env_server(var, what);
        Store { url: if options.is_empty() { url } else { with_option(&url, options) }, keep: None }
    }
}

/// The URL in `var`. Unset: a failure under CI (a skipped store must never count as
/// passing there); elsewhere the running test is a printed, counted skip
/// ([`crate::skip`]: it unwinds to the suite's [`crate::skip::or_skip`], or a test guards
/// itself first with [`crate::needs_server!`]).
pub fn env_server(var: &str, _what: &str) -> String {
    match std::env::var(var) {
        Ok(url) => url,
        Err(_) if std::env::var_os("CI").is_some() => crash::server_url(var),
        Err(_) => {
            crate::skip::report(&format!("{var} not set"));
            crate::skip::unwind()
        }
    }
}

/// `url` with a query option appended.
pub fn with_option(url: &str, opt: &str) -> String {
    format!("{url}{}{opt}", if url.contains('?') { '&' } else { '?' })
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}/{}", uuid::Uuid::new_v4().simple())
}

/// Runs `fut` but fails the test if it takes longer than `limit` (every check is bounded).
pub async fn bounded<T>(what: &str, limit: Duration, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what} took longer than {limit:?}"),
    }
}

/// The longest a waiter may take to notice a release, a count-down or returned permits
/// (release → waiter granted). The engine re-checks every waiter at least every 1 s
/// (+ up to 50 ms jitter) even without a notification, so a bound under that shows the
/// store's wake-up works (memory: in-process watch; SQLite/MySQL: in-process wake-ups and
/// polling capped at 50 ms; PostgreSQL: NOTIFY). 900 ms: the grant after the wake-up is
/// itself a step (three raft writes on the etcd cluster), and with both test groups
/// running a 2-core machine took 809 ms for it once (500 ms was the bound then).
pub const WAKE: Duration = Duration::from_millis(900);

/// What a loaded 2-core CI machine may add to a wait that ends with a lease (timers fire
/// late, the waiter's re-check and the store's round trips queue behind other suites; etcd
/// revokes an expired lease on its own schedule): a bound of `lease + SLACK` still tells a
/// lease-length wait from the 30 s default lease. 10 s: etcd over TLS, with both test
/// groups running, returned a 1 s lease's permit after 8 s once (3 s was the bound then).
pub const SLACK: Duration = Duration::from_secs(10);

/// Polls `cond` every 10 ms until it holds; fails the test after `limit`. Returns how long
/// it took.
pub async fn eventually<F, Fut>(what: &str, limit: Duration, mut cond: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let t0 = tokio::time::Instant::now();
    loop {
        if cond().await {
            return t0.elapsed();
        }
        assert!(t0.elapsed() <= limit, "{what}: still not true after {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Asserts `r` failed with `kind` and a message mentioning `needle`; returns the error.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(r: baton::Result<T>, kind: baton::ErrorKind, needle: &str) -> baton::Error {
    let e = match r {
        Ok(v) => panic!("expected {kind} mentioning `{needle}`, got Ok({v:?})"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.to_string().contains(needle), "`{e}` should mention `{needle}`");
    e
}

/// Runs `f` with a fresh client on a runtime of its own, on another thread, then shuts
/// that runtime down: whatever `f` left held is neither renewed nor released, as with a
/// process that froze or died. Returns when the runtime is gone.
pub fn stalled<F, Fut>(url: &str, f: F) -> tokio::time::Instant
where
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let url = url.to_owned();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let c = Client::connect(&url).await.unwrap();
            f(c).await;
        });
        drop(rt);
        tokio::time::Instant::now()
    })
    .join()
    .unwrap()
}

/// Expands into the checks only a store shared across processes can run (a SIGKILLed
/// holder process), for the store the path `$make` returns.
#[macro_export]
macro_rules! cross_process_suite {
    ($make:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn killed_holder_process_frees_within_lease() {
            let Some(store) = $crate::skip::or_skip($make) else { return };
            $crate::behaviour::crash::killed_holder_process_frees(&store).await;
        }

        /// The child side of `killed_holder_process_frees_within_lease`, run only by it
        /// (ignored, so that it never counts as a passing test on its own).
        #[tokio::test]
        #[ignore = "helper process of killed_holder_process_frees_within_lease"]
        async fn child_holder() {
            $crate::behaviour::crash::child_holder().await;
        }
    };
}

/// Expands into one `#[tokio::test]` per check, for the store the path `$make` (a
/// `fn() -> Store`) returns. The checks are written once, in sets named for what they need
/// of a store; a store that lacks something leaves out whole sets, by name:
///
/// - `core`: locks, read-write locks, semaphores, permit semaphores, multi-locks, errors;
/// - `contended`: the 16 × 64 contended-grant count (slow where every grant is a raft write);
/// - `fair`: the fair lock, and the checks that take one beside other primitives;
/// - `latch`: the count-down latch, and the checks that wait on one;
/// - `election`: leader election (one leader, rising terms, succession, observe, fencing);
/// - `vanished`: a waiter whose runtime is shut down mid-wait stands for a vanished
///   process (stores whose client ends its session as its runtime goes leave it out and
///   check a vanished waiter their own way).
///
/// `behaviour_suite!(crate::store)` runs every set; `behaviour_suite!(crate::store; except
/// fair, latch)` leaves those two out (an unknown set name does not compile). Lock-only
/// schemes take `@locks` (or `@pinned_locks`); stores that run a few chosen checks list
/// them with `@tests`.
#[macro_export]
macro_rules! behaviour_suite {
    ($make:path) => {
        $crate::behaviour_suite!($make; except);
    };
    ($make:path; except $($set:ident),* $(,)?) => {
        $( $crate::behaviour_suite!(@known $set); )*
        $crate::behaviour_suite!(@set core $make; $($set)*);
        $crate::behaviour_suite!(@set contended $make; $($set)*);
        $crate::behaviour_suite!(@set fair $make; $($set)*);
        $crate::behaviour_suite!(@set latch $make; $($set)*);
        $crate::behaviour_suite!(@set vanished $make; $($set)*);
        $crate::behaviour_suite!(@set fair_vanished $make; $($set)*);
        $crate::behaviour_suite!(@set election $make; $($set)*);
    };
    (@known core) => {};
    (@known contended) => {};
    (@known fair) => {};
    (@known latch) => {};
    (@known vanished) => {};
    (@known election) => {};
    (@known $other:ident) => {
        compile_error!(concat!("behaviour_suite!: no check set named `", stringify!($other),
            "` (sets: core, contended, fair, latch, vanished, election)"));
    };
    // A set named in the except list expands to nothing; any other name is passed over.
    (@set core $make:path; core $($rest:ident)*) => {};
    (@set contended $make:path; contended $($rest:ident)*) => {};
    (@set fair $make:path; fair $($rest:ident)*) => {};
    (@set latch $make:path; latch $($rest:ident)*) => {};
    (@set vanished $make:path; vanished $($rest:ident)*) => {};
    (@set election $make:path; election $($rest:ident)*) => {};
    // The checks in two sets: left out with either.
    (@set fair_vanished $make:path; fair $($rest:ident)*) => {};
    (@set fair_vanished $make:path; vanished $($rest:ident)*) => {};
    (@set $set:ident $make:path; $head:ident $($rest:ident)*) => {
        $crate::behaviour_suite!(@set $set $make; $($rest)*);
    };
    (@set $set:ident $make:path;) => {
        $crate::behaviour_suite!(@checks $set $make);
    };
    (@checks core $make:path) => {
        $crate::behaviour_suite!(@tests $make;
            lock::try_and_timeout, lock::release_wakes_waiter,
            lock::reentrancy, lock::owner_option_reenters, lock::ttl_expiry_is_lost,
            lock::extend_keeps_ttl_lock, lock::watchdog_keeps_lock, lock::stalled_holder_frees,
            lock::non_owner_release_never_frees, lock::dropped_guard_is_released,
            lock::cancelled_acquire_leaves_nothing, lock::close_releases,
            lock::watchdog_default_renewal, lock::watchdog_renews_many, lock::dropped_reentrant_guards,
            rw::readers_share_writer_excludes, rw::writer_not_starved, rw::downgrade_and_no_upgrade,
            rw::many_readers_at_once, rw::release_wakes_reader, rw::upgrade_waiting_forms_fail_fast,
            rw::reentrant_read_and_write, rw::crashed_writer_lease_ends,
            rw::random_cancellation_leaves_no_writer_place,
            semaphore::never_more_than_permits, semaphore::many_and_available, semaphore::crashed_permits_return,
            semaphore::waiter_woken_and_dropped_permit_returns, semaphore::size_is_state,
            permits::ids_and_release_by_id, permits::permit_size_is_state, permits::lease_expiry_and_update,
            permits::ids_unique_across_clients, permits::crashed_watchdog_permit_returns,
            permits::permit_lost_when_released_elsewhere,
            multi::all_or_nothing, multi::no_deadlock,
            multi::timeout_cancel_and_dedup, multi::overlapping_subsets_exclude,
            errors::bad_names, errors::bad_durations, errors::bad_permits, errors::bad_urls, errors::closed_client,
            errors::bad_store_options, errors::passwords_never_in_messages, errors::bad_durations_everywhere,
            errors::closed_everywhere, errors::odd_names_are_distinct,
        );
    };
    (@checks contended $make:path) => {
        $crate::behaviour_suite!(@tests $make; lock::exclusion_counter);
    };
    (@checks fair $make:path) => {
        $crate::behaviour_suite!(@tests $make;
            fair::grants_in_request_order,
            fair::dropped_waiter_leaves_queue, fair::random_cancellation_leaves_no_queue_place,
            fair::fair_exclusion,
            // Tokens across every kind of grant, the last a fair lock's.
            lock::fencing_tokens_grow,
            lock::close_releases_every_primitive,
        );
    };
    (@checks vanished $make:path) => {
        $crate::behaviour_suite!(@tests $make; rw::vanished_writer_unblocks_readers);
    };
    (@checks fair_vanished $make:path) => {
        $crate::behaviour_suite!(@tests $make; fair::vanished_waiter_is_skipped);
    };
    (@checks election $make:path) => {
        $crate::behaviour_suite!(@tests $make;
            election::one_leader_at_a_time, election::stalled_leader_is_succeeded,
            election::observe_sees_every_change_in_order, election::deposed_leader_is_fenced,
            election::cancelled_campaign_leaves_no_candidate, election::bad_election_input,
        );
    };
    (@checks latch $make:path) => {
        $crate::behaviour_suite!(@tests $make;
            latch::set_count_down_wait, latch::wait_timeout, latch::count_down_from_many_clients,
            lock::pending_calls_fail_on_close,
        );
    };
    // The checks of plain locks only, for stores or schemes that have nothing else (the
    // SQL lock schemes): exclusion, waiting, reentrancy, leases, loss, tokens, multi-locks
    // and names.
    (@locks $make:path) => {
        $crate::behaviour_suite!(@pinned_locks $make);
        $crate::behaviour_suite!(@tests $make; lock::owner_option_reenters, lock::watchdog_renews_many);
    };
    // `@locks` for schemes whose hold is a connection pinned to it (`for-update`,
    // `advisory`): without another client re-entering under a shared owner (a session is
    // one connection's) and without many holds at once (each takes a pooled connection).
    (@pinned_locks $make:path) => {
        $crate::behaviour_suite!(@tests $make;
            lock::exclusion_counter, lock::try_and_timeout, lock::release_wakes_waiter,
            lock::reentrancy, lock::ttl_expiry_is_lost,
            lock::extend_keeps_ttl_lock, lock::watchdog_keeps_lock, lock::stalled_holder_frees,
            lock::non_owner_release_never_frees, lock::dropped_guard_is_released,
            lock::cancelled_acquire_leaves_nothing, lock::close_releases, lock::watchdog_default_renewal,
            lock::fencing_tokens_grow_without_fair, lock::dropped_reentrant_guards,
            multi::all_or_nothing, multi::no_deadlock, multi::timeout_cancel_and_dedup,
            multi::overlapping_subsets_exclude, errors::bad_names, errors::odd_names_are_distinct,
        );
    };
    (@tests $make:path; $($module:ident :: $check:ident),* $(,)?) => {
        $(
            mod $check {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() {
                    // No server: a counted skip (`skip`), not a pass.
                    let Some(store) = $crate::skip::or_skip($make) else { return };
                    // A backstop far above every check's own bounds: a hang fails the test
                    // instead of the whole run.
                    $crate::behaviour::bounded(
                        concat!(stringify!($module), "::", stringify!($check)),
                        ::std::time::Duration::from_secs(300),
                        $crate::behaviour::$module::$check(&store),
                    )
                    .await;
                }
            }
        )*
    };
}
