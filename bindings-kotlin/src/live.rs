//! A count of the native objects alive (clients, handles, guards) and of calls in flight:
//! the JVM tests check that every one is freed once the Kotlin side is done with it.

use std::sync::atomic::{AtomicI64, Ordering};

static LIVE: AtomicI64 = AtomicI64::new(0);

/// A field of every exported object: counted from creation to drop.
#[derive(Debug)]
pub(crate) struct Live(());

impl Live {
    pub(crate) fn new() -> Live {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Live(())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many exported objects are alive (test hook).
#[uniffi::export]
pub fn live_objects() -> i64 {
    LIVE.load(Ordering::Relaxed)
}
