//! Fencing tokens.

use std::fmt;

/// A number that grows with every fresh grant of a name on a store, including grants
/// that later expired. Pass it to the protected resource and reject writes carrying a
/// smaller token than the last one seen (Kleppmann's fencing).
///
/// A re-entrant acquire by the same holder keeps the token of the first grant.
///
/// ```
/// let t = baton::FencingToken::new(7);
/// assert!(t > baton::FencingToken::new(6));
/// assert_eq!(t.get(), 7);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct FencingToken(u64);

impl FencingToken {
    /// Wraps a raw token.
    pub const fn new(value: u64) -> FencingToken {
        FencingToken(value)
    }

    /// The raw value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<FencingToken> for u64 {
    fn from(t: FencingToken) -> u64 {
        t.0
    }
}
