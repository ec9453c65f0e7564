//! The behaviour suite on the 3-member ZooKeeper ensemble of `scripts/services`
//! (`BATON_TEST_ZK_ENSEMBLE_URL`): every write is a quorum write through whichever member
//! the session talks to.
#![cfg(feature = "zookeeper")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_ZK_ENSEMBLE_URL", "ZooKeeper ensemble", "")
}

// Every check of `behaviour_suite!` but the two whose "dead" waiter is a runtime shut
// down (`fair::vanished_waiter_is_skipped`, `rw::vanished_writer_unblocks_readers`): the
// ZooKeeper client closes its session when its last handle goes while its task can still
// run, and the server then deletes the waiter's node at once, so those checks race with
// the runtime's shutdown. A waiter that really vanishes (its node left behind) is checked
// in `zk_layout.rs`; a SIGKILLed holder process by `cross_process_suite!`. Keep this list
// in step with the macro.
behaviour_suite!(@tests crate::store;
    lock::exclusion_counter, lock::try_and_timeout, lock::release_wakes_waiter, lock::reentrancy,
    lock::owner_option_reenters, lock::ttl_expiry_is_lost, lock::extend_keeps_ttl_lock,
    lock::watchdog_keeps_lock, lock::stalled_holder_frees, lock::non_owner_release_never_frees,
    lock::dropped_guard_is_released, lock::cancelled_acquire_leaves_nothing, lock::close_releases,
    fair::grants_in_request_order, rw::readers_share_writer_excludes, rw::writer_not_starved,
    rw::downgrade_and_no_upgrade, semaphore::never_more_than_permits, semaphore::many_and_available,
    semaphore::crashed_permits_return, permits::ids_and_release_by_id, permits::lease_expiry_and_update,
    latch::set_count_down_wait, latch::wait_timeout, multi::all_or_nothing, multi::no_deadlock,
    errors::bad_names, errors::bad_durations, errors::bad_permits, errors::bad_urls, errors::closed_client,
    lock::watchdog_default_renewal, lock::fencing_tokens_grow, lock::close_releases_every_primitive,
    lock::pending_calls_fail_on_close, fair::dropped_waiter_leaves_queue,
    fair::random_cancellation_leaves_no_queue_place, fair::fair_exclusion, rw::many_readers_at_once,
    rw::release_wakes_reader, rw::upgrade_waiting_forms_fail_fast, rw::reentrant_read_and_write,
    rw::crashed_writer_lease_ends, semaphore::waiter_woken_and_dropped_permit_returns,
    permits::ids_unique_across_clients, permits::crashed_watchdog_permit_returns,
    latch::count_down_from_many_clients, multi::timeout_cancel_and_dedup, multi::overlapping_subsets_exclude,
    errors::bad_store_options, errors::passwords_never_in_messages, errors::bad_durations_everywhere,
    errors::closed_everywhere, errors::odd_names_are_distinct, lock::watchdog_renews_many,
    lock::dropped_reentrant_guards, rw::random_cancellation_leaves_no_writer_place,
    permits::permit_lost_when_released_elsewhere,
);
cross_process_suite!(crate::store);
