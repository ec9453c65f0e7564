//! What baton's test crates share: redis-servers of their own with TLS, sentinels and
//! clusters, and under libfaketime with a clock to step ([`OwnRedis`], [`TestServers`],
//! [`Certs`], [`FakeClock`]), PostgreSQL and MariaDB servers to
//! restart ([`OwnPostgres`], [`OwnMariaDb`]), loopback ports ([`free_port`]),
//! the behaviour suite every store runs ([`behaviour_suite!`], [`cross_process_suite!`])
//! and the etcd store's checks ([`etcd_suite!`]).
//!
//! `OwnRedis` itself is `baton_servers::OwnRedis`, re-exported: the lab starts the same
//! servers at run time, and this crate (never published) depends on the lab rather than
//! the other way round, so that the lab and the CLI stay publishable.

// Test support: an unwrap that fails is a failing test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod behaviour;
pub mod etcd;
mod etcd_cluster;
mod relay;
mod servers;
pub mod skip;

pub use baton_servers::{FakeClock, OWN_TLS_PASSWORD, OwnMariaDb, OwnPostgres, OwnRedis, OwnZk};
pub use etcd_cluster::{OwnEtcdCluster, etcd_leader};
pub use relay::{Relay, target_of};
pub use servers::{
    Certs, SentinelSetup, TestServers, faketime_lib, free_port, master_becomes, redlock_url, replica_caught_up,
    sentinel_trio, tools_present,
};
