//! A client's wall clock, which the lab can jump (only `getset-timestamp` reads it: every
//! other scheme leaves expiry to the server's clock).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The system clock plus an offset the harness sets (an NTP step, a VM resumed late).
#[derive(Debug, Default)]
pub struct Clock {
    offset_ms: AtomicI64,
}

impl Clock {
    /// The system clock, unshifted.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// Milliseconds since the Unix epoch, as this client believes.
    pub fn now_ms(&self) -> i64 {
        let real = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        i64::try_from(real).unwrap_or(i64::MAX).saturating_add(self.offset_ms.load(Ordering::Relaxed))
    }

    /// Moves this clock by `ms` (negative: backwards) from where it stands.
    pub fn jump(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
    }
}
