//! Loopback ports for servers baton starts itself: the lab's and the tests' (baton's test
//! kit), one rule.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Mutex;

/// A free loopback port for a server to bind next, never the same twice in this process;
/// `None` after 1000 tries. Taken from 10000–19999, below Linux's ephemeral range
/// (32768–60999): a port the OS hands out as free from that range can become the local
/// port of some outgoing connection before the server binds it (seen in CI: a cluster bus
/// port "already in use").
///
/// `BATON_PORT_RANGE=LOW-HIGH` sets the range (inclusive, within 1024–65535): test
/// processes that run side by side each take their own range, so one cannot take the port
/// another is about to bind or to re-bind after a restart. A range in the ephemeral one
/// is allowed (a developer's machine may have no other room) at the risk named above.
pub fn free_loopback_port() -> Option<u16> {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let (low, high) = port_range();
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..1000 {
        let port = rand::random_range(low..=high);
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.insert(port);
            return Some(port);
        }
    }
    None
}

/// The range `free_loopback_port` draws from: `BATON_PORT_RANGE` when it is a valid
/// `LOW-HIGH`, else 10000–19999.
fn port_range() -> (u16, u16) {
    let parse = |v: &str| {
        let (l, h) = v.split_once('-')?;
        let (l, h) = (l.trim().parse::<u16>().ok()?, h.trim().parse::<u16>().ok()?);
        (1024 <= l && l <= h).then_some((l, h))
    };
    std::env::var("BATON_PORT_RANGE").ok().as_deref().and_then(parse).unwrap_or((10_000, 19_999))
}
