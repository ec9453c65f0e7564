//! The I/O-free state machine of one key, shared by every store that can run a
//! transaction around "read the state, decide, write it back": `memory://` runs it
//! under a mutex, `sqlite://` inside `BEGIN IMMEDIATE`, and the other SQL stores can
//! follow on the same code. Stores with their own atomic scripts (Redis Lua, etcd txn)
//! implement the same decisions natively.
//!
//! Time is passed in (`now_us`, microseconds on the store's clock: tokens take it whole,
//! leases and queue places count in its milliseconds), so every rule here is unit-tested
//! without sleeping.

mod ops;

pub(crate) use ops::{acquire, inspect, leave_queue, proclaim, read_holder_of, release, renew};

use crate::error::{Error, Result};

/// The size rule of a semaphore, the same on every store: the grant made while no permit
/// is held records the semaphore's size; while any permit is held, a handle of another
/// size is refused (`recorded` is the size recorded while permits are held, `None` when
/// none are or none was recorded). Two sizes at once would let each handle count against
/// its own total, and the store would admit more permits than either handle expects.
pub(crate) fn check_size(name: &str, recorded: Option<u32>, asked: u32) -> Result<()> {
    match recorded {
        Some(size) if size != asked => Err(Error::semaphore_size(name, size, asked)),
        _ => Ok(()),
    }
}

/// Whether going from `before` to `after` may let a waiter in: a hold or queue place went
/// away, permits came back, or the latch count moved — or an election's observers have
/// news: a leader came or went, or proclaimed a value. Renewals, new lock holds and
/// refreshed queue places free nothing, so they wake nobody.
pub(crate) fn frees(before: &KeyState, after: &KeyState) -> bool {
    let permits = |s: &KeyState| s.holds.iter().map(|h| u64::from(h.count)).sum::<u64>();
    // Only election holds carry a value, so for the locks this list is always empty.
    fn proclaimed(s: &KeyState) -> Vec<(&str, &str)> {
        s.holds.iter().filter_map(|h| Some((h.holder.as_str(), h.value.as_deref()?))).collect()
    }
    after.holds.len() < before.holds.len()
        || after.queue.len() < before.queue.len()
        || permits(after) < permits(before)
        || after.count != before.count
        || proclaimed(after) != proclaimed(before)
}

use serde::{Deserialize, Serialize};

/// The fencing token of a fresh grant after `last`, at the store's time `now_us` (µs):
/// above `last`, and at least the clock, so that a lost counter (a key's state removed
/// while it was free, a database restored from an older backup) still yields tokens above
/// every earlier one, as long as the store's clock does not step back.
pub(crate) fn next_token(last: u64, now_us: u64) -> u64 {
    last.saturating_add(1).max(now_us)
}

/// Everything a store keeps for one `(family, name)`. `fence` is the last token handed out.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct KeyState {
    /// The last fencing token handed out for this key.
    #[serde(default)]
    pub(crate) fence: u64,
    /// Live grants, one per holder id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) holds: Vec<Hold>,
    /// Fair-lock waiters and writers waiting on readers, in arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) queue: Vec<Waiter>,
    /// Count-down latch value.
    #[serde(default)]
    pub(crate) count: u64,
    /// A semaphore's size, recorded by the grant made while no permit was held; it means
    /// nothing once every permit is back (`check_size`). Absent in rows written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<u32>,
}

impl KeyState {
    /// Whether the state can be removed at the store's time `now_us` (µs) with nothing
    /// lost: nothing held, nobody queued, no latch count, and a last token below the clock,
    /// so that the next grant's token (at least the clock, `next_token`) is still above it.
    /// Stores remove such a key's state, so that names used once leave nothing behind.
    pub(crate) fn forgettable(&self, now_us: u64) -> bool {
        let now_ms = now_us / 1000;
        self.holds.iter().all(|h| h.expires_ms <= now_ms)
            && self.queue.iter().all(|w| w.expires_ms <= now_ms)
            && self.count == 0
            && self.fence < now_us
    }

    /// The recorded semaphore size while any permit is held.
    pub(crate) fn held_size(&self) -> Option<u32> {
        self.size.filter(|_| !self.holds.is_empty())
    }
}

/// One grant: a holder id, what it holds, how many times, and until when.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Hold {
    pub(crate) holder: String,
    pub(crate) mode: HoldMode,
    /// Re-entry count for locks, number of permits for semaphores.
    pub(crate) count: u32,
    pub(crate) token: u64,
    pub(crate) expires_ms: u64,
    /// What the holder proclaimed (an election's leader); `None` for every other hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) value: Option<String>,
}

/// A queued request that has not been granted yet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Waiter {
    pub(crate) holder: String,
    pub(crate) mode: HoldMode,
    /// A waiter that stops refreshing its place is skipped after this time.
    pub(crate) expires_ms: u64,
}

/// What a hold is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HoldMode {
    Exclusive,
    Read,
    Write,
    Permits,
}

impl HoldMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HoldMode::Exclusive => "exclusive",
            HoldMode::Read => "read",
            HoldMode::Write => "write",
            HoldMode::Permits => "permits",
        }
    }
}

/// What a caller asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A plain lock (Redisson `RLock`): ignores the fair queue.
    Exclusive,
    /// A fair lock: granted only to the head of the queue.
    Fair,
    /// A shared hold; `writer` is the same handle's writer id, whose hold allows a downgrade.
    Read { writer: String },
    /// The exclusive side of a read-write lock.
    Write,
    /// `count` permits out of `limit`.
    Permits { count: u32, limit: u32 },
}

impl Mode {
    pub(crate) fn hold_mode(&self) -> HoldMode {
        match self {
            Mode::Exclusive | Mode::Fair => HoldMode::Exclusive,
            Mode::Read { .. } => HoldMode::Read,
            Mode::Write => HoldMode::Write,
            Mode::Permits { .. } => HoldMode::Permits,
        }
    }
}

/// One acquire attempt.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) holder: String,
    pub(crate) mode: Mode,
    pub(crate) lease_ms: u64,
    /// Take a place in the queue when busy (fair locks, writers); false for `try_` calls.
    pub(crate) enqueue: bool,
    /// How long a queued place lives without being refreshed by another attempt.
    pub(crate) queue_ttl_ms: u64,
    /// Renewed by the watchdog (not a `ttl` hold): stores with a per-client lease (etcd's
    /// session) may put it under that.
    #[cfg_attr(not(any(feature = "etcd", feature = "etcd-http")), allow(dead_code))]
    pub(crate) watchdog: bool,
    /// Other handles or clients may give this hold back (an `owner` shared with them, a
    /// permit released by id): a store that answers a grant before every replica has
    /// (Redlock) waits for them all, so that their release never overtakes it there.
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))]
    pub(crate) shared: bool,
    /// The least token a fresh grant may carry: `redlock://` proposes one to every node of
    /// a round, a little ahead of their clocks, so that the nodes answer the same token and
    /// none needs it written back. Read by the Redis layouts (`token.lua`); None elsewhere.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) token_floor: Option<u64>,
    /// What a fresh grant records beside its hold: an election's proposal (`None` for the
    /// locks).
    pub(crate) value: Option<String>,
}

/// The answer to an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Granted; `fresh` is false for a re-entry, which keeps the first grant's token.
    Granted { token: u64, count: u32, fresh: bool },
    /// Not now; `retry_ms` is when the earliest blocking lease ends, if known.
    Busy { retry_ms: Option<u64> },
}

/// The answer to a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// The holder no longer holds anything.
    Freed,
    /// Re-entered or partially released holds remain.
    StillHeld(u32),
    /// The holder held nothing (lease expired, or never held).
    NotHeld,
}
