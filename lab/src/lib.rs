//! The lab: the usual Redis lock schemes, from a bare `SETNX` to Redisson's hash lock and
//! Redlock, flawed ones included, by name, and the torture harness that drives them all
//! through the same scripted faults (`baton lab`). Never a default: it exists so that
//! users can see for themselves why baton's defaults are what they are, and interoperate
//! with legacy deployments knowingly. Each scheme's rustdoc states what it does, what it
//! guarantees and what breaks it. baton's own locks enter the same matrix through
//! [`BatonLock`]: `redis://`, `redlock://`, `zk://`, and every SQL lock scheme
//! (`?scheme=table|for-update|optimistic|advisory` and baton's own design) on SQLite,
//! PostgreSQL and MySQL/MariaDB.
//!
//! Each scheme implements [`LabLock`]: one attempt to acquire, one release, each made of
//! the scheme's separate Redis commands with a fault [`Point`] between them, so that
//! the harness injects crashes and pauses *between* steps deterministically ([`Hooks`]).
//! [`run`] is the whole harness (docs/lab.md has its matrix):
//!
//! ```no_run
//! # async fn f() -> baton::Result<()> {
//! use std::{sync::Arc, time::Duration};
//! use baton_lab::{self as lab, Clock, Hooks, LabLock, Point, Scheme};
//!
//! let matrix = lab::run(&lab::Config::default()).await?; // redis-server children of its own
//! print!("{}", matrix.to_markdown());
//!
//! // One scheme by hand: A's release stops between its GET and its DEL.
//! let url = ["redis://127.0.0.1:6379".to_owned()];
//! let (hooks, gate) = Hooks::pause_at(Point::BeforeDelete);
//! let mut a = Scheme::SetNxPxOwned.open(&url, "jobs/1", hooks, Arc::new(Clock::system())).await?;
//! assert!(a.acquire(Duration::from_millis(300)).await?);
//! let release = tokio::spawn(async move { a.release().await });
//! gate.reached().await; // A has read its own value; its lease runs out meanwhile…
//! gate.open();          // …and its DEL goes out now, whoever holds the lock
//! # Ok(()) }
//! ```

mod baton_lock;
mod clock;
mod fence;
mod getset_timestamp;
mod hooks;
mod lab_lock;
mod matrix;
mod raw;
mod scheme;
mod set_nx_px;
mod set_nx_px_lua;
mod set_nx_px_owned;
mod setnx;
mod setnx_expire;
mod sql;
mod torture;

pub use baton_lock::BatonLock;
pub use clock::Clock;
pub use fence::FencedResource;
pub use getset_timestamp::GetsetTimestamp;
pub use hooks::{Gate, Hooks, Point};
pub use lab_lock::LabLock;
pub use matrix::{Cell, Flaw, Matrix, Property, Row};
pub use scheme::{Database, Scheme};
pub use set_nx_px::SetNxPx;
pub use set_nx_px_lua::SetNxPxLua;
pub use set_nx_px_owned::SetNxPxOwned;
pub use setnx::Setnx;
pub use setnx_expire::SetnxExpire;
pub use torture::{Config, run};
// The servers the harness starts, from the crate the tests share with it (names kept).
pub use baton_servers::{
    FakeClock, OWN_TLS_PASSWORD, OwnMariaDb, OwnPostgres, OwnRedis, OwnZk, TlsFiles, faketime_available, faketime_lib,
    free_loopback_port, own_mariadb_available, own_postgres_available, redis_server_available, zookeeper_available,
};
