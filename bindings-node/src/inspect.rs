//! `Inspection` and `Holder` as plain JavaScript objects.

use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

/// A snapshot of one name on a store.
#[napi(object, object_from_js = false)]
pub struct Inspection {
    pub name: String,
    /// `lock`, `rwlock`, `semaphore` or `latch`.
    pub kind: String,
    pub holders: Vec<Holder>,
    /// Waiters the store knows about (fair-lock queue, waiting writers), in order.
    pub waiters: Vec<String>,
    /// The last fencing token granted on this name, null if none ever was.
    pub last_token: Option<BigInt>,
    /// The count-down latch value (0 for other primitives).
    pub count: f64,
    /// A semaphore's size as its holders recorded it, null unless a permit is held.
    pub permits: Option<u32>,
}

/// One holder in an `Inspection`.
#[napi(object, object_from_js = false)]
pub struct Holder {
    pub owner: String,
    /// `exclusive`, `read`, `write` or `permits`.
    pub mode: String,
    /// Hold count for locks (re-entries), number of permits for semaphores.
    pub count: u32,
    pub token: BigInt,
    /// Time left on the lease in milliseconds, null when the store does not report it.
    pub lease_left_ms: Option<f64>,
}

impl From<baton::Inspection> for Inspection {
    fn from(i: baton::Inspection) -> Inspection {
        Inspection {
            name: i.name,
            kind: i.kind.to_owned(),
            holders: i.holders.into_iter().map(Holder::from).collect(),
            waiters: i.waiters,
            last_token: i.last_token.map(|t| BigInt::from(t.get())),
            count: i.count as f64,
            permits: i.permits,
        }
    }
}

impl From<baton::Holder> for Holder {
    fn from(h: baton::Holder) -> Holder {
        Holder {
            owner: h.owner,
            mode: h.mode.to_owned(),
            count: h.count,
            token: BigInt::from(h.token.get()),
            lease_left_ms: h.lease_left.map(|d| d.as_secs_f64() * 1000.0),
        }
    }
}
