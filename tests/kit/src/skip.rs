//! A test whose server is missing is a skip that shows: `SKIP <test>: <what> not set` on
//! stderr as it happens (written past libtest's capture, so a passing run shows it too),
//! and the count when the binary exits (`SKIPPED n tests …`). Under CI (`CI` set) a
//! missing server fails the test instead: a skipped store never counts as passing there.
//!
//! A test guards itself with [`needs_server!`] (`needs_server!("BATON_TEST_REDIS_URL")`
//! as its first line); the suites' macros skip when their store's `fn() -> Store` skips
//! ([`or_skip`] around [`crate::behaviour::env_server`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use baton::ffi::LockExt;

/// The unwinding payload of a skip (never a panic message: `resume_unwind` runs no hook).
pub struct Skipped;

static COUNT: AtomicUsize = AtomicUsize::new(0);
static WHAT: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static AT_EXIT: Once = Once::new();

/// Counts and prints one skip of the running test for `why` ("BATON_TEST_REDIS_URL not
/// set", "[\"redis-server\"] not installed"); fails the test under CI.
pub fn report(why: &str) {
    assert!(std::env::var_os("CI").is_none(), "{why} (under CI a missing server fails; `scripts/services start`)");
    let test = std::thread::current().name().unwrap_or("?").to_owned();
    // stderr itself, not `eprintln!`: libtest captures what the macros print.
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why} (`scripts/services start`, then source its env)");
    COUNT.fetch_add(1, Ordering::Relaxed);
    WHAT.locked().insert(why.to_owned());
    AT_EXIT.call_once(|| {
        // SAFETY: `print_count` is a plain `extern "C" fn()` that only writes to stderr.
        unsafe { libc::atexit(print_count) };
    });
}

extern "C" fn print_count() {
    let why = WHAT.lock().map(|w| w.iter().cloned().collect::<Vec<_>>().join("; ")).unwrap_or_default();
    let n = COUNT.load(Ordering::Relaxed);
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {n} tests of this binary ({why}): libtest counted them in \"passed\" above, they did not run"
    );
}

/// Whether `var` is unset (the test is then counted as skipped: see [`report`]).
pub fn missing(var: &str) -> bool {
    if std::env::var_os(var).is_some() {
        return false;
    }
    report(&format!("{var} not set"));
    true
}

/// Skips the running test, from anywhere below it: unwinds with [`Skipped`], which
/// [`or_skip`] turns into `None`. Reported already ([`report`]).
pub fn unwind() -> ! {
    std::panic::resume_unwind(Box::new(Skipped))
}

/// `make()`, or `None` when it skipped ([`unwind`]); any other panic goes on.
pub fn or_skip<T>(make: impl FnOnce() -> T) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(make)) {
        Ok(v) => Some(v),
        Err(p) if p.is::<Skipped>() => None,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// The first line of a test that needs the server whose URL is in the variable `$var`:
/// unset, the test returns as a counted skip ([`report`]; a failure under CI).
#[macro_export]
macro_rules! needs_server {
    ($var:literal) => {
        if $crate::skip::missing($var) {
            return;
        }
    };
}
