//! JavaScript values → core values: millisecond numbers, counts, option objects.

use std::time::Duration;

use baton::Result;
use napi_derive::napi;

use crate::errors::invalid;

/// Options of a lock-family handle (`client.lock(name, { ttlMs })`).
#[napi(object)]
#[derive(Default)]
pub struct LockOptions {
    /// Explicit lease: the grant expires this long after acquire unless extended.
    pub ttl_ms: Option<f64>,
    /// Watchdog lease (default: the client's, 30 s).
    pub lease_ms: Option<f64>,
    /// Watchdog renewal period (default: a third of the lease, at most 10 s).
    pub renew_ms: Option<f64>,
    /// Reentrancy bound to this owner id instead of the handle.
    pub owner: Option<String>,
    /// How long a fair-lock waiter keeps its place without refreshing it (default 5 s).
    pub queue_ttl_ms: Option<f64>,
}

/// A validated duration from a number of milliseconds (`what` names it in messages).
pub(crate) fn ms(what: &str, ms: f64) -> Result<Duration> {
    baton::duration::from_millis_f64(what, ms)
}

/// An optional duration in milliseconds.
pub(crate) fn opt_ms(what: &str, v: Option<f64>) -> Result<Option<Duration>> {
    v.map(|v| ms(what, v)).transpose()
}

/// A whole number in `0..=max` from a JavaScript number (`what` names it in messages);
/// napi's own integer conversion would wrap negatives and truncate fractions silently.
pub(crate) fn whole(what: &str, v: f64, max: u64) -> Result<u64> {
    // Exactly representable up to 2^53, so the cast below is exact.
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= max as f64 {
        Ok(v as u64)
    } else {
        Err(invalid(format!("{what} must be a whole number from 0 to {max}, got {v}")))
    }
}

/// A count that fits a `u32`.
pub(crate) fn count(what: &str, v: f64) -> Result<u32> {
    whole(what, v, u64::from(u32::MAX)).map(|n| n as u32)
}

/// The core options of a handle.
pub(crate) fn lock_options(o: Option<LockOptions>) -> Result<baton::LockOptions> {
    let o = o.unwrap_or_default();
    let mut out = baton::LockOptions::new();
    if let Some(d) = opt_ms("ttlMs", o.ttl_ms)? {
        out = out.ttl(d);
    }
    if let Some(d) = opt_ms("leaseMs", o.lease_ms)? {
        out = out.lease(d);
    }
    if let Some(d) = opt_ms("renewMs", o.renew_ms)? {
        out = out.renew_every(d);
    }
    if let Some(d) = opt_ms("queueTtlMs", o.queue_ttl_ms)? {
        out = out.queue_ttl(d);
    }
    if let Some(owner) = o.owner {
        out = out.owner(owner);
    }
    Ok(out)
}

/// An optional wait limit: `Some(d)` waits at most `d`.
pub(crate) fn timeout(v: Option<f64>) -> Result<Option<Duration>> {
    opt_ms("timeoutMs", v)
}
