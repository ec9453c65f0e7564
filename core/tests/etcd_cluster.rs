//! The behaviour suite and the etcd checks on `etcd://h1,h2,h3` (gRPC over the 3-member
//! cluster of `scripts/services`, URL in `BATON_TEST_ETCD_CLUSTER_URL`): the same locks
//! through a balanced channel over every member.
#![cfg(feature = "etcd")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite, etcd_suite};
use behaviour::Store;

fn url() -> String {
    behaviour::crash::server_url("BATON_TEST_ETCD_CLUSTER_URL")
}

fn store() -> Store {
    Store { url: url(), keep: None }
}

// Every check of `behaviour_suite!` except `lock::exclusion_counter` (16×200 contended
// grants within 120 s): on the 3-member cluster every grant and release is a raft write
// acknowledged by a quorum, and on this 2-core machine the run took ~125 s; it runs on
// the single etcd (`etcd.rs`, `etcd_http.rs`). Keep this list in step with the macro.
behaviour_suite!(@tests crate::store;
    lock::try_and_timeout, lock::release_wakes_waiter, lock::reentrancy, lock::owner_option_reenters,
    lock::ttl_expiry_is_lost, lock::extend_keeps_ttl_lock, lock::watchdog_keeps_lock,
    lock::stalled_holder_frees, lock::non_owner_release_never_frees, lock::dropped_guard_is_released,
    lock::cancelled_acquire_leaves_nothing, lock::close_releases, fair::grants_in_request_order,
    fair::vanished_waiter_is_skipped, rw::readers_share_writer_excludes, rw::writer_not_starved,
    rw::downgrade_and_no_upgrade, semaphore::never_more_than_permits, semaphore::many_and_available,
    semaphore::crashed_permits_return, permits::ids_and_release_by_id, permits::lease_expiry_and_update,
    latch::set_count_down_wait, latch::wait_timeout, multi::all_or_nothing, multi::no_deadlock,
    errors::bad_names, errors::bad_durations, errors::bad_permits, errors::bad_urls, errors::closed_client,
    lock::watchdog_default_renewal, lock::fencing_tokens_grow, lock::close_releases_every_primitive,
    lock::pending_calls_fail_on_close, fair::dropped_waiter_leaves_queue,
    fair::random_cancellation_leaves_no_queue_place, fair::fair_exclusion, rw::many_readers_at_once,
    rw::release_wakes_reader, rw::upgrade_waiting_forms_fail_fast, rw::reentrant_read_and_write,
    rw::crashed_writer_lease_ends, rw::vanished_writer_unblocks_readers,
    semaphore::waiter_woken_and_dropped_permit_returns, permits::ids_unique_across_clients,
    permits::crashed_watchdog_permit_returns, latch::count_down_from_many_clients,
    multi::timeout_cancel_and_dedup, multi::overlapping_subsets_exclude, errors::bad_store_options,
    errors::passwords_never_in_messages, errors::bad_durations_everywhere, errors::closed_everywhere,
    errors::odd_names_are_distinct, lock::watchdog_renews_many, lock::dropped_reentrant_guards,
    rw::random_cancellation_leaves_no_writer_place, permits::permit_lost_when_released_elsewhere,
);
cross_process_suite!(crate::store);
etcd_suite!(crate::url);
// 200 waiters in request order: gRPC only (see the check).
etcd_suite!(@tests crate::url; many_waiters_in_order);
