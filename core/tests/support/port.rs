//! Loopback ports for servers a test starts itself (`own_redis`, `etcd_faults`): the lab's
//! own rule (`core/src/lab/port.rs`, included here as it is).

// `pub` for `own_redis`, which re-exports it; `etcd_faults` uses it privately.
#![allow(unreachable_pub)]

#[path = "../../src/lab/port.rs"]
mod shared;

/// A free loopback port in 10000–19999 for a server to bind next, never the same twice in
/// this process.
pub fn free_port() -> u16 {
    shared::free_loopback_port().expect("no free loopback port in 10000-19999 after 1000 tries")
}
