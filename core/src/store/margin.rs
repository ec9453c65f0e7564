//! The margin of a lease every holder keeps, on every store (the engine ends its holds
//! that early; a store whose lease is its own, such as a ZooKeeper session or an etcd
//! lease, ends its holders' by the same rule).

use std::time::Duration;

/// How much of a lease the holder never counts on, on every store: the clock-rate
/// difference allowed between the holder's and the store's clocks (2 % of the lease) plus
/// the holder's own lateness at noticing that its deadline passed (a timer fired late on a
/// loaded machine, the lost signal reaching its listeners): 50 ms. A store adds its own
/// (`Store::lease_margin`: Redlock's drift between nodes, etcd's cached keep-alives).
pub(crate) fn drift_margin(lease: Duration) -> Duration {
    lease / 50 + Duration::from_millis(50)
}
