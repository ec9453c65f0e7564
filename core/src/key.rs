//! What the engine and every store address: a primitive family and a validated name.

use std::fmt;

/// Which primitive a key belongs to. Lock and FairLock share a family (they contend,
/// as Redisson's `RLock` and `RFairLock` do on one hash); the others are separate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Family {
    Lock,
    RwLock,
    Semaphore,
    Latch,
    /// Leader election: one leader at a time, its proclaimed value beside its hold.
    Election,
}

impl Family {
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn from_name(s: &str) -> Option<Family> {
        [Family::Lock, Family::RwLock, Family::Semaphore, Family::Latch, Family::Election]
            .into_iter()
            .find(|f| f.as_str() == s)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Family::Lock => "lock",
            Family::RwLock => "rwlock",
            Family::Semaphore => "semaphore",
            Family::Latch => "latch",
            Family::Election => "election",
        }
    }
}

/// A validated name within a family.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) family: Family,
    pub(crate) name: String,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.family.as_str(), self.name)
    }
}
