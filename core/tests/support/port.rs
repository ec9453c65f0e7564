//! Loopback ports for servers a test starts itself (`own_redis`, `etcd_faults`).

// `pub` for `own_redis`, which re-exports it; `etcd_faults` uses it privately.
#![allow(unreachable_pub)]

use std::net::TcpListener;

/// A free loopback port for a server to bind next, never the same twice in this process.
/// Taken from 10000–19999, below Linux's ephemeral range (32768–60999): a port the OS
/// hands out as free from that range can become the local port of some outgoing
/// connection before the server binds it (seen in CI: a cluster bus port "already in use").
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..1000 {
        let port = rand::random_range(10_000..20_000);
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            return port;
        }
    }
    panic!("no free loopback port in 10000-19999 after 1000 tries");
}
