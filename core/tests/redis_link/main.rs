//! The Redis connections baton drives itself (the tasks' link, a thread's own link, a driven
//! link), one binary of their own: each test counts the server's connections of one name and
//! tells its own by their being new, so no other Redis client of this process may run beside
//! it (`ONE_AT_A_TIME`), and no other test binary's tests share this process.
#![cfg(all(feature = "redis", unix))]
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

/// Held by each test of this binary: each tells its connections from others by their being new.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[cfg(feature = "driven-link")]
mod driven;
#[cfg(feature = "driven-link")]
mod own;
mod task;
