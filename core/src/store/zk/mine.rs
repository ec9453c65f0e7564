//! What baton writes in its own contender nodes (`Data`), and the nodes this client wrote,
//! as it wrote them (`Mine`), kept per (queue directory, holder) in `Mines`: the session's
//! holder cache, apart from the session itself so that reading nodes (`entries`) and
//! keeping the session (`conn`) do not import each other.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use zookeeper_client as zk;

use super::path::Kind;

/// What baton writes in its contender nodes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Data {
    pub(crate) holder: String,
    /// Re-entry count; 0 while waiting.
    pub(crate) count: u32,
    pub(crate) lease_ms: u64,
    /// A semaphore lease's record of the semaphore's size (`crate::state::check_size`);
    /// absent in lock nodes and in leases written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) permits: Option<u32>,
}

impl Data {
    pub(crate) fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A node this client wrote, as it wrote it (see `Mines`).
#[derive(Debug, Clone)]
pub(crate) struct Mine {
    /// Its full path.
    pub(crate) path: String,
    pub(crate) kind: Kind,
    pub(crate) version: i32,
    pub(crate) czxid: i64,
    pub(crate) mtime: i64,
    pub(crate) data: Data,
    /// A waiting node whose only predecessor was seen deleted (`ZkSub`): first now, as
    /// nodes behind it are newer.
    pub(crate) first: bool,
}

impl Mine {
    /// This node after a write of its own that left `stat` and `data` on it.
    pub(crate) fn rewritten(self, stat: &zk::Stat, data: Data) -> Mine {
        Mine { version: stat.version, mtime: stat.mtime, data, first: false, ..self }
    }

    /// Held, and not past its lease at server time `now` (with 50 ms to spare for the
    /// clock estimate: a hold that close to its end takes the reading path).
    pub(crate) fn held_at(&self, now: i64) -> bool {
        let lease = i64::try_from(self.data.lease_ms).unwrap_or(i64::MAX);
        self.data.count > 0 && self.mtime.saturating_add(lease).saturating_sub(50) > now
    }
}

/// The node each (queue directory, holder) has here, as this client last wrote it: a
/// release or renewal goes straight to it, and a first attempt creates its node before
/// reading the queue only when none is known. Only ever a hint: a node changed or gone
/// meanwhile fails the version check and the step reads the queue.
#[derive(Debug, Default)]
pub(crate) struct Mines(Mutex<HashMap<(String, String), Mine>>);

impl Mines {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<(String, String), Mine>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Records `holder`'s node in `dir` as this client just wrote it.
    pub(crate) fn remember(&self, dir: &str, holder: &str, m: Mine) {
        self.with(|mine| mine.insert((dir.to_owned(), holder.to_owned()), m));
    }

    /// Takes `holder`'s recorded node in `dir` out (the step that uses it records it again).
    pub(crate) fn forget(&self, dir: &str, holder: &str) -> Option<Mine> {
        self.with(|mine| mine.remove(&(dir.to_owned(), holder.to_owned())))
    }

    /// Marks `holder`'s recorded waiting node in `dir` as first in its queue.
    pub(crate) fn now_first(&self, dir: &str, holder: &str) {
        self.with(|mine| {
            if let Some(m) = mine.get_mut(&(dir.to_owned(), holder.to_owned())).filter(|m| m.data.count == 0) {
                m.first = true;
            }
        });
    }

    /// Whether a node of `holder` in `dir` is recorded.
    pub(crate) fn knows(&self, dir: &str, holder: &str) -> bool {
        self.with(|mine| mine.contains_key(&(dir.to_owned(), holder.to_owned())))
    }
}
