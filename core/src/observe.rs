//! Observability, off by default: `metrics` facade counters and histograms (feature
//! `metrics`) and `tracing` events (feature `tracing`). Without the features every
//! function here is empty and compiles away.
//!
//! Metric names (labels: `kind` = lock, rwlock, semaphore, latch):
//! - `baton_acquired_total`, `baton_acquire_timeouts_total` (counters)
//! - `baton_wait_seconds` (histogram: from the first attempt to the grant)
//! - `baton_hold_seconds` (histogram: from the grant to the release)
//! - `baton_renewals_total`, `baton_renewal_failures_total` (counters, watchdog batches)
//! - `baton_leases_lost_total` (counter)

#![cfg_attr(not(any(feature = "metrics", feature = "tracing")), allow(unused_variables))]

use std::time::Duration;

use crate::key::Key;

/// A grant after waiting `waited`.
pub(crate) fn acquired(key: &Key, waited: Duration, token: u64) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("baton_acquired_total", "kind" => key.family.as_str()).increment(1);
        metrics::histogram!("baton_wait_seconds", "kind" => key.family.as_str()).record(waited.as_secs_f64());
    }
    #[cfg(feature = "tracing")]
    tracing::debug!(key = %key, token, waited_ms = waited.as_millis() as u64, "granted");
}

/// An acquire that gave up at its deadline.
pub(crate) fn timed_out(key: &Key, waited: Duration) {
    #[cfg(feature = "metrics")]
    metrics::counter!("baton_acquire_timeouts_total", "kind" => key.family.as_str()).increment(1);
    #[cfg(feature = "tracing")]
    tracing::debug!(key = %key, waited_ms = waited.as_millis() as u64, "acquire timed out");
}

/// A release after holding for `held`.
pub(crate) fn released(key: &Key, held: Duration) {
    #[cfg(feature = "metrics")]
    metrics::histogram!("baton_hold_seconds", "kind" => key.family.as_str()).record(held.as_secs_f64());
    #[cfg(feature = "tracing")]
    tracing::debug!(key = %key, held_ms = held.as_millis() as u64, "released");
}

/// A watchdog batch: `ok` leases renewed, `failed` not.
pub(crate) fn renewals(ok: usize, failed: usize) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!("baton_renewals_total").increment(ok as u64);
        metrics::counter!("baton_renewal_failures_total").increment(failed as u64);
    }
    #[cfg(feature = "tracing")]
    if failed > 0 {
        tracing::warn!(ok, failed, "watchdog renewals failed");
    }
}

/// A lease found lost (renewal refused, or ttl ended).
pub(crate) fn lost(key: &Key, token: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!("baton_leases_lost_total", "kind" => key.family.as_str()).increment(1);
    #[cfg(feature = "tracing")]
    tracing::warn!(key = %key, token, "lease lost");
}
