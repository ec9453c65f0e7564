//! The `zk://` store's tests, one binary: the behaviour suite on the ZooKeeper of
//! `scripts/services` and its ensemble, Curator's layouts both ways, and faults.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

mod curator;
mod ensemble;
mod faults;
mod layout;
mod suite;
