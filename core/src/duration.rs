//! Duration parsing and validation shared by the API, the CLI and every binding.

use std::time::Duration;

use crate::error::{Error, Result};

/// Longest lease, ttl or timeout accepted: 366 days. Longer values are almost
/// always unit mistakes, and bounding them keeps deadline arithmetic from overflowing.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// Shortest lease or ttl accepted, everywhere (API, store URL options, CLI, bindings):
/// 100 ms. The holder counts a lease as lost a drift margin (2 % + 50 ms) before the store
/// does; a shorter lease would leave it next to no time, and a sub-millisecond one none.
pub const MIN_LEASE: Duration = Duration::from_millis(100);

/// [`validate`], and at least [`MIN_LEASE`]: for leases and ttls.
pub fn validate_lease(what: &str, d: Duration) -> Result<Duration> {
    let d = validate(what, d)?;
    if d < MIN_LEASE {
        return Err(Error::invalid_argument(format!(
            "{what} of {d:?} is shorter than the minimum lease of {} ms",
            MIN_LEASE.as_millis()
        )));
    }
    Ok(d)
}

/// Checks that `d` (called `what` in messages) is non-zero and at most [`MAX_DURATION`].
pub fn validate(what: &str, d: Duration) -> Result<Duration> {
    if d.is_zero() {
        return Err(Error::invalid_argument(format!("{what} must be greater than zero")));
    }
    if d > MAX_DURATION {
        return Err(Error::invalid_argument(format!(
            "{what} of {d:?} is longer than the limit of {} days",
            MAX_DURATION.as_secs() / 86400
        )));
    }
    Ok(d)
}

/// Converts float seconds (Python's convention) into a validated duration; negative,
/// NaN, infinite, zero and too-large values are `InvalidArgument`.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(baton::duration::from_secs_f64("timeout", 1.5).unwrap(), Duration::from_millis(1500));
/// assert!(baton::duration::from_secs_f64("timeout", -1.0).is_err());
/// ```
pub fn from_secs_f64(what: &str, secs: f64) -> Result<Duration> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(Error::invalid_argument(format!(
            "{what} must be a finite, positive number of seconds, got {secs}"
        )));
    }
    if secs > MAX_DURATION.as_secs_f64() {
        return validate(what, MAX_DURATION + Duration::from_secs(1));
    }
    validate(what, Duration::from_secs_f64(secs))
}

/// Converts float milliseconds (JavaScript's convention) into a validated duration.
pub fn from_millis_f64(what: &str, ms: f64) -> Result<Duration> {
    from_secs_f64(what, ms / 1000.0).map_err(|e| {
        if ms.is_finite() && ms >= 0.0 {
            e
        } else {
            Error::invalid_argument(format!("{what} must be a finite, positive number of milliseconds, got {ms}"))
        }
    })
}

/// Parses a human duration: `250ms`, `30s`, `1.5s`, `2m`, `1h`, or bare seconds (`10`).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(baton::duration::parse("30s").unwrap(), Duration::from_secs(30));
/// assert_eq!(baton::duration::parse("250ms").unwrap(), Duration::from_millis(250));
/// assert!(baton::duration::parse("0s").is_err());
/// ```
pub fn parse(s: &str) -> Result<Duration> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.parse().map_err(|_| Error::invalid_argument(format!("`{s}` is not a duration (try 30s, 250ms, 2m)")))?;
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(Error::invalid_argument(format!("`{s}` has an unknown unit `{other}` (use ms, s, m or h)")));
        }
    };
    from_secs_f64(&format!("duration `{s}`"), value * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_values() {
        for bad in [-1.0, f64::NAN, f64::INFINITY, 0.0, 1e12] {
            assert!(from_secs_f64("ttl", bad).is_err(), "{bad}");
        }
        for bad in ["", "abc", "5 parsecs", "-3s", "0ms", "99999999h"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(from_millis_f64("timeoutMs", -5.0).unwrap_err().message().contains("milliseconds"));
    }
}
