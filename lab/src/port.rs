//! Loopback ports for servers baton starts itself: the lab's (`servers`) and the tests'
//! (baton's test kit uses this one rule too).

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Mutex;

/// A free loopback port for a server to bind next, never the same twice in this process;
/// `None` after 1000 tries. Taken from 10000–19999, below Linux's ephemeral range
/// (32768–60999): a port the OS hands out as free from that range can become the local
/// port of some outgoing connection before the server binds it (seen in CI: a cluster bus
/// port "already in use").
pub fn free_loopback_port() -> Option<u16> {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..1000 {
        let port = rand::random_range(10_000..20_000);
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            return Some(port);
        }
    }
    None
}
