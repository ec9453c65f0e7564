//! The behaviour suite: every semantics line of DESIGN.md, as checks that take a store.
//! A store joins by adding a file that calls `behaviour_suite!` with its URL factory.

// Shared by several test crates, each using part of it.
#![allow(dead_code, unreachable_pub)]

pub mod crash;
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
            $crate::behaviour::crash::killed_holder_process_frees(&$make()).await;
        }

        /// The child side of `killed_holder_process_frees_within_lease`.
        #[tokio::test]
        async fn child_holder() {
            $crate::behaviour::crash::child_holder().await;
        }
    };
}

/// Expands into one `#[tokio::test]` per check, for the store the path `$make` (a
/// `fn() -> Store`) returns.
#[macro_export]
macro_rules! behaviour_suite {
    ($make:path) => {
        $crate::behaviour_suite!(@tests $make;
            lock::exclusion_counter, lock::try_and_timeout, lock::release_wakes_waiter,
            lock::reentrancy, lock::owner_option_reenters, lock::ttl_expiry_is_lost,
            lock::extend_keeps_ttl_lock, lock::watchdog_keeps_lock, lock::stalled_holder_frees,
            lock::non_owner_release_never_frees, lock::dropped_guard_is_released,
            lock::cancelled_acquire_leaves_nothing, lock::close_releases,
            fair::grants_in_request_order, fair::vanished_waiter_is_skipped,
            rw::readers_share_writer_excludes, rw::writer_not_starved, rw::downgrade_and_no_upgrade,
            semaphore::never_more_than_permits, semaphore::many_and_available, semaphore::crashed_permits_return,
            permits::ids_and_release_by_id, permits::lease_expiry_and_update,
            latch::set_count_down_wait, latch::wait_timeout,
            multi::all_or_nothing, multi::no_deadlock,
            errors::bad_names, errors::bad_durations, errors::bad_permits, errors::bad_urls, errors::closed_client,
        );
    };
    (@tests $make:path; $($module:ident :: $check:ident),* $(,)?) => {
        $(
            mod $check {
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $check() {
                    let store = $make();
                    $crate::behaviour::$module::$check(&store).await;
                }
            }
        )*
    };
}
