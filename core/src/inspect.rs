//! What `inspect` reports about a name.

use std::time::Duration;

use crate::key::Key;
use crate::state::KeyState;
use crate::token::FencingToken;

/// A snapshot of one name on a store: who holds it, who waits, the last token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// The name inspected.
    pub name: String,
    /// The primitive family (`lock`, `rwlock`, `semaphore`, `latch`, `election`).
    pub kind: &'static str,
    /// Current holders (several for read locks and semaphores).
    pub holders: Vec<Holder>,
    /// Waiters the store knows about (fair-lock queue, waiting writers), in order.
    pub waiters: Vec<String>,
    /// The last fencing token granted on this name, if any grant ever happened.
    pub last_token: Option<FencingToken>,
    /// The count-down latch value (0 for other primitives).
    pub count: u64,
    /// A semaphore's size as recorded by its holders, while any permit is held (a handle
    /// of another size is refused until every permit is back); `None` otherwise, and for
    /// a Redis counter that Redisson made (it records no size).
    pub permits: Option<u32>,
}

/// One holder in an [`Inspection`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// The owner id (`{client uuid}:{n}`, or the caller-given owner).
    pub owner: String,
    /// `exclusive`, `read`, `write` or `permits`.
    pub mode: &'static str,
    /// Hold count for locks (re-entries), number of permits for semaphores.
    pub count: u32,
    /// The token of this grant.
    pub token: FencingToken,
    /// Time left on the lease, when the store reports it.
    pub lease_left: Option<Duration>,
    /// What the holder proclaimed: an election's leader's proposal (`None` for locks).
    pub value: Option<String>,
}

impl Inspection {
    /// Is anyone holding it?
    pub fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }

    pub(crate) fn from_state(key: &Key, s: &KeyState, now_ms: u64) -> Inspection {
        Inspection {
            name: key.name.clone(),
            kind: key.family.as_str(),
            holders: s
                .holds
                .iter()
                .map(|h| Holder {
                    owner: h.holder.clone(),
                    mode: h.mode.as_str(),
                    count: h.count,
                    token: FencingToken::new(h.token),
                    lease_left: Some(Duration::from_millis(h.expires_ms.saturating_sub(now_ms))),
                    value: h.value.clone(),
                })
                .collect(),
            waiters: s.queue.iter().map(|w| w.holder.clone()).collect(),
            last_token: (s.fence > 0).then_some(FencingToken::new(s.fence)),
            count: s.count,
            permits: s.held_size(),
        }
    }
}
