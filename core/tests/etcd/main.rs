//! The `etcd://` and `etcd+http://` stores' tests, one binary: the behaviour suite on the etcd of
//! `scripts/services` and on a 3-member cluster, TLS, interop with `etcdctl`, and faults.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

mod cluster;
mod faults;
mod gateway;
mod gateway_waiters;
mod grpc;
mod tls;
mod txn;
mod v3lock;
