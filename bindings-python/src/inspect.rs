//! `Inspection` and `Holder`: what `inspect()` reports, as plain read-only objects.

use pyo3::prelude::*;

/// One holder of a name: owner id, mode, hold count (or permits), token, lease left.
#[pyclass(frozen, get_all, module = "baton")]
#[derive(Clone)]
pub(crate) struct Holder {
    /// The owner id (`{client uuid}:{n}`, or the caller-given owner).
    owner: String,
    /// `"exclusive"`, `"read"`, `"write"` or `"permits"`.
    mode: &'static str,
    /// Hold count for locks (re-entries), number of permits for semaphores.
    count: u32,
    /// The fencing token of this grant.
    token: u64,
    /// Seconds left on the lease, when the store reports it.
    lease_left: Option<f64>,
}

#[pymethods]
impl Holder {
    fn __repr__(&self) -> String {
        format!("Holder(owner={:?}, mode={:?}, count={}, token={})", self.owner, self.mode, self.count, self.token)
    }
}

/// A snapshot of one name on a store: who holds it, who waits, the last fencing token.
#[pyclass(frozen, get_all, module = "baton")]
pub(crate) struct Inspection {
    /// The name inspected.
    name: String,
    /// The primitive family: `"lock"`, `"rwlock"`, `"semaphore"` or `"latch"`.
    kind: &'static str,
    /// Current holders (several for read locks and semaphores).
    holders: Vec<Holder>,
    /// Waiters the store knows about (fair-lock queue, waiting writers), in order.
    waiters: Vec<String>,
    /// The last fencing token granted on this name, or `None` if never granted.
    last_token: Option<u64>,
    /// The count-down latch value (0 for other primitives).
    count: u64,
    /// A semaphore's size as its holders recorded it, while any permit is held.
    permits: Option<u32>,
}

#[pymethods]
impl Inspection {
    /// Whether anyone holds the name.
    #[getter]
    fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }

    fn __repr__(&self) -> String {
        format!(
            "Inspection(name={:?}, kind={:?}, holders={}, waiters={}, last_token={}, count={}, permits={})",
            self.name,
            self.kind,
            self.holders.len(),
            self.waiters.len(),
            self.last_token.map_or_else(|| "None".to_owned(), |t| t.to_string()),
            self.count,
            self.permits.map_or_else(|| "None".to_owned(), |p| p.to_string())
        )
    }
}

impl From<baton::Inspection> for Inspection {
    fn from(i: baton::Inspection) -> Inspection {
        let holders = i
            .holders
            .into_iter()
            .map(|h| Holder {
                owner: h.owner,
                mode: h.mode,
                count: h.count,
                token: h.token.get(),
                lease_left: h.lease_left.map(|d| d.as_secs_f64()),
            })
            .collect();
        Inspection {
            name: i.name,
            kind: i.kind,
            holders,
            waiters: i.waiters,
            last_token: i.last_token.map(baton::FencingToken::get),
            count: i.count,
            permits: i.permits,
        }
    }
}
