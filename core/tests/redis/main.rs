//! The `redis://` and `redlock://` stores' tests, one binary: the behaviour suite on the server of
//! `scripts/services` and its own checks, and servers of the tests' own (restarts, TLS, sentinels,
//! clusters, a stepped clock).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

mod clock_step;
mod cluster;
mod interop;
mod keys;
mod redlock;
mod redlock_faults;
mod restart;
mod rsemaphore;
mod sentinel;
mod server;
mod simple;
mod suite;
