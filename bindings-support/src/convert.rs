//! Host numbers → core values, with the core's `InvalidArgument` messages, and counts back
//! to host numbers. A binding extracts the host value (a float, an int) and calls these; a
//! bad value fails the same way in every language.

use std::time::Duration;

use baton::{FencingToken, LockOptions, Result};

use crate::kind::invalid;

/// The largest integer a JavaScript `number` (an IEEE double) holds exactly: 2^53 - 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A validated duration from float seconds (`what` names it in messages).
pub fn seconds(what: &str, secs: f64) -> Result<Duration> {
    baton::duration::from_secs_f64(what, secs)
}

/// A validated duration from float milliseconds.
pub fn millis(what: &str, ms: f64) -> Result<Duration> {
    baton::duration::from_millis_f64(what, ms)
}

/// An optional duration in milliseconds.
pub fn opt_millis(what: &str, ms: Option<f64>) -> Result<Option<Duration>> {
    ms.map(|v| millis(what, v)).transpose()
}

/// A whole number in `0..=max` from a float (a JavaScript number): a host's own integer
/// conversion would wrap negatives and truncate fractions silently.
pub fn whole(what: &str, v: f64, max: u64) -> Result<u64> {
    // `max` is at most 2^53 in practice, exactly representable, so the cast is exact.
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= max as f64 {
        Ok(v as u64)
    } else {
        Err(invalid(format!("{what} must be a whole number from 0 to {max}, got {v}")))
    }
}

/// A count that fits a `u32`, from a float.
pub fn count(what: &str, v: f64) -> Result<u32> {
    whole(what, v, u64::from(u32::MAX)).map(|n| n as u32)
}

/// An integer of the core's type `T` from a host integer (a Python int fits `i128` or is
/// out of range anyway); out of range is `InvalidArgument`.
pub fn int<T: TryFrom<i128>>(what: &str, v: i128) -> Result<T> {
    T::try_from(v).map_err(|_| out_of_range(what, &v))
}

/// The `InvalidArgument` for an integer out of range (`shown` as the host prints it).
pub fn out_of_range(what: &str, shown: &dyn std::fmt::Display) -> baton::Error {
    invalid(format!("{what} {shown} is out of range"))
}

/// A fencing token from a host integer (a JVM `Long`): negative is `InvalidArgument`.
pub fn token(v: i128) -> Result<FencingToken> {
    u64::try_from(v).map(FencingToken::new).map_err(|_| invalid(format!("token must be a whole number ≥ 0, not {v}")))
}

/// A fencing token from its decimal text (how JavaScript hands a `bigint` over, so no
/// value loses precision on the way).
pub fn token_text(s: &str) -> Result<FencingToken> {
    s.parse::<u64>().map(FencingToken::new).map_err(|_| invalid(format!("token must be a whole number ≥ 0, not {s:?}")))
}

/// A count as a JavaScript number, saturating at [`MAX_SAFE_INTEGER`] (no store counts
/// that far; fencing tokens, which may, cross as `bigint` instead).
pub fn safe_number(n: u64) -> f64 {
    n.min(MAX_SAFE_INTEGER) as f64
}

/// The durations and owner of a lock-family handle, as every binding takes them.
#[derive(Debug, Default, Clone)]
pub struct LockDurations {
    /// Explicit lease: the grant expires this long after acquire unless extended.
    pub ttl: Option<Duration>,
    /// Watchdog lease.
    pub lease: Option<Duration>,
    /// Watchdog renewal period.
    pub renew: Option<Duration>,
    /// How long a fair-lock waiter keeps its place without refreshing it.
    pub queue_ttl: Option<Duration>,
    /// Reentrancy bound to this owner id instead of the handle.
    pub owner: Option<String>,
}

impl LockDurations {
    /// The core's options (the core checks how they combine when the handle is used).
    pub fn options(self) -> LockOptions {
        let mut out = LockOptions::new();
        if let Some(d) = self.ttl {
            out = out.ttl(d);
        }
        if let Some(d) = self.lease {
            out = out.lease(d);
        }
        if let Some(d) = self.renew {
            out = out.renew_every(d);
        }
        if let Some(d) = self.queue_ttl {
            out = out.queue_ttl(d);
        }
        if let Some(owner) = self.owner {
            out = out.owner(owner);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton::ErrorKind;

    #[test]
    fn durations() {
        assert_eq!(millis("ttlMs", 1500.0).unwrap(), Duration::from_millis(1500));
        assert_eq!(seconds("ttl", 1.5).unwrap(), Duration::from_millis(1500));
        assert_eq!(opt_millis("x", None).unwrap(), None);
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let e = millis("ttlMs", bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.message().contains("ttlMs"), "{}", e.message());
        }
    }

    #[test]
    fn whole_numbers() {
        assert_eq!(whole("count", 7.0, 10).unwrap(), 7);
        assert_eq!(count("n", 4_294_967_295.0).unwrap(), u32::MAX);
        for bad in [-1.0, 0.5, 11.0, f64::NAN] {
            let e = whole("count", bad, 10).unwrap_err();
            assert_eq!(e.message(), format!("count must be a whole number from 0 to 10, got {bad}"));
        }
        assert!(count("n", 2f64.powi(40)).is_err());
    }

    #[test]
    fn integers() {
        assert_eq!(int::<u32>("permits", 3).unwrap(), 3);
        let e = int::<u32>("permits", -1).unwrap_err();
        assert_eq!(e.message(), "permits -1 is out of range");
        assert_eq!(safe_number(u64::MAX), MAX_SAFE_INTEGER as f64);
        assert_eq!(safe_number(42), 42.0);
    }

    #[test]
    fn lock_options() {
        let d = LockDurations { ttl: Some(Duration::from_secs(1)), owner: Some("me".into()), ..Default::default() };
        let _ = d.options();
    }
}
