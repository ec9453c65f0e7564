//! JavaScript values → core values: millisecond numbers, counts, option objects (the rules
//! and messages are `baton_bind::convert`'s, shared with the other bindings).

use std::time::Duration;

use baton::Result;
use baton_bind::convert::{LockDurations, opt_millis};
use napi_derive::napi;

pub(crate) use baton_bind::convert::{MAX_SAFE_INTEGER, count, millis as ms, safe_number, whole};

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

/// The core options of a handle.
pub(crate) fn lock_options(o: Option<LockOptions>) -> Result<baton::LockOptions> {
    let o = o.unwrap_or_default();
    Ok(LockDurations {
        ttl: opt_millis("ttlMs", o.ttl_ms)?,
        lease: opt_millis("leaseMs", o.lease_ms)?,
        renew: opt_millis("renewMs", o.renew_ms)?,
        queue_ttl: opt_millis("queueTtlMs", o.queue_ttl_ms)?,
        owner: o.owner,
    }
    .options())
}

/// An optional wait limit: `Some(d)` waits at most `d`.
pub(crate) fn timeout(v: Option<f64>) -> Result<Option<Duration>> {
    opt_millis("timeoutMs", v)
}

/// An optional duration in milliseconds.
pub(crate) fn opt_ms(what: &str, v: Option<f64>) -> Result<Option<Duration>> {
    opt_millis(what, v)
}
