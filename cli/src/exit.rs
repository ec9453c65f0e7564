//! Exit codes and the error every command returns.
//!
//! baton's own failures use sysexits.h codes where one fits, so that scripts can tell
//! "the lock was busy" (75, EX_TEMPFAIL: try again later) from a broken setup (64, 78).
//! `baton run` otherwise exits with its command's own code, as `env`, `nice` and
//! `timeout` do, and uses the shell's 126/127/128+N conventions.

use baton::ErrorKind;

/// Bad arguments, duration, name or store URL.
pub(crate) const USAGE: u8 = 64;
/// The store could not be reached, or refused the credentials.
pub(crate) const UNAVAILABLE: u8 = 69;
/// The store answered with an error, or baton failed internally.
pub(crate) const SOFTWARE: u8 = 70;
/// A local file or directory could not be read or written.
pub(crate) const IOERR: u8 = 74;
/// `--wait` elapsed (or `--wait 0` found the lock busy).
pub(crate) const TEMPFAIL: u8 = 75;
/// The lease was lost while the command ran.
pub(crate) const LOST: u8 = 76;
/// The URL names a store this build of baton lacks.
pub(crate) const CONFIG: u8 = 78;
/// The command exists but could not be executed.
pub(crate) const CANNOT_EXEC: u8 = 126;
/// The command was not found.
pub(crate) const NOT_FOUND: u8 = 127;

/// Shown under `baton --help` and `baton run --help`.
pub(crate) const HELP: &str = "\
Exit codes (baton's own; `baton run` otherwise exits with the command's code):
   64  bad usage: arguments, duration, lock name or store URL (InvalidArgument, InvalidUrl)
   69  the store cannot be reached, or refused the credentials, on every store (Connection)
   70  the store failed, or an internal error (Backend, NotHeld, Closed)
   74  local I/O error (e.g. the data directory cannot be created)
   75  --wait elapsed before the lock was granted (Timeout)
   76  the lease was lost, or about to end, while the command ran (or it stayed stopped
       for a whole lease); the command's whole tree was stopped first (LockLost)
   78  the URL's scheme is not available in this build (Unsupported)
  126  the command could not be executed     127  the command was not found
  128+N  the command was killed by signal N, or baton was interrupted by it while waiting

Store URL: --url, else $BATON_URL, else sqlite://<data dir>/baton/baton.db
(e.g. ~/.local/share/baton/baton.db): one file shared by every process on this machine.";

/// A failed command: what to print after `baton: ` and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) msg: String,
}

impl Failure {
    pub(crate) fn new(code: u8, msg: impl Into<String>) -> Failure {
        Failure { code, msg: msg.into() }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Failure {
        Failure::new(USAGE, msg)
    }
}

/// The exit code of a baton error kind.
pub(crate) fn code_of(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::InvalidArgument | ErrorKind::InvalidUrl => USAGE,
        ErrorKind::Connection => UNAVAILABLE,
        ErrorKind::Timeout => TEMPFAIL,
        ErrorKind::LockLost => LOST,
        ErrorKind::Unsupported => CONFIG,
        // Backend, NotHeld, Closed, and kinds added later.
        _ => SOFTWARE,
    }
}

impl From<baton::Error> for Failure {
    fn from(e: baton::Error) -> Failure {
        // Display is "Kind: message" and never contains a URL's password.
        Failure::new(code_of(e.kind()), e.to_string())
    }
}

/// Parses a duration flag with baton's own rules (`30s`, `250ms`, `2m`; zero rejected).
pub(crate) fn duration(flag: &str, value: &str) -> Result<std::time::Duration, Failure> {
    baton::duration::parse(value)
        .map_err(|e| Failure::new(code_of(e.kind()), format!("{}: {flag}: {}", e.kind(), e.message())))
}

/// As [`duration`], for a lease: at least `baton::duration::MIN_LEASE` (100 ms).
pub(crate) fn lease(flag: &str, value: &str) -> Result<std::time::Duration, Failure> {
    let d = duration(flag, value)?;
    baton::duration::validate_lease(flag, d)
        .map_err(|e| Failure::new(code_of(e.kind()), format!("{}: {}", e.kind(), e.message())))
}

/// As [`duration`], but also accepts a zero (`0`, `0s`, `0ms`): "do not wait at all".
pub(crate) fn duration_or_zero(flag: &str, value: &str) -> Result<std::time::Duration, Failure> {
    let trimmed = value.trim();
    let number = trimmed.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit_ok = matches!(&trimmed[number.len()..], "" | "ms" | "s" | "m" | "min" | "h");
    if unit_ok && number.parse::<f64>().is_ok_and(|n| n == 0.0) && !number.starts_with('-') {
        return Ok(std::time::Duration::ZERO);
    }
    duration(flag, value)
}

/// Checks a lock name before connecting, so a bad one fails fast with the value shown.
pub(crate) fn check_name(name: &str) -> Result<(), Failure> {
    baton::validate_name(name).map_err(Failure::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_durations() {
        for z in ["0", "0s", "0ms", "0.0s", " 0 "] {
            assert_eq!(duration_or_zero("--wait", z).unwrap(), std::time::Duration::ZERO, "{z}");
        }
        for bad in ["-0", "0x", "abc", "-1", ""] {
            assert!(duration_or_zero("--wait", bad).is_err(), "{bad}");
        }
        assert!(duration("--ttl", "0s").is_err());
        assert_eq!(duration_or_zero("--wait", "2s").unwrap(), std::time::Duration::from_secs(2));
    }
}
