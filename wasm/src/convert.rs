//! JavaScript values → core values. The facade has checked the types already; the rules
//! and messages for ranges are `baton_bind::convert`'s, shared with the other bindings.

use std::time::Duration;

use baton::Result;
use baton_bind::convert::{LockDurations, opt_millis};
use js_sys::Reflect;
use wasm_bindgen::JsValue;

pub(crate) use baton_bind::convert::{MAX_SAFE_INTEGER, count, millis as ms, safe_number, whole};

/// A number property of an options object (absent, null or not a number: none).
fn num(o: &JsValue, key: &str) -> Option<f64> {
    Reflect::get(o, &key.into()).ok().and_then(|v| v.as_f64())
}

/// The core options of a handle from `{ ttlMs, leaseMs, renewMs, owner, queueTtlMs }`.
pub(crate) fn lock_options(o: &JsValue) -> Result<baton::LockOptions> {
    if o.is_undefined() || o.is_null() {
        return Ok(baton::LockOptions::new());
    }
    Ok(LockDurations {
        ttl: opt_millis("ttlMs", num(o, "ttlMs"))?,
        lease: opt_millis("leaseMs", num(o, "leaseMs"))?,
        renew: opt_millis("renewMs", num(o, "renewMs"))?,
        queue_ttl: opt_millis("queueTtlMs", num(o, "queueTtlMs"))?,
        owner: Reflect::get(o, &"owner".into()).ok().and_then(|v| v.as_string()),
    }
    .options())
}

/// An optional wait limit: `Some(d)` waits at most `d`.
pub(crate) fn timeout(v: Option<f64>) -> Result<Option<Duration>> {
    opt_millis("timeoutMs", v)
}
