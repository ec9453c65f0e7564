//! The SQL stores' tests, one binary: the behaviour suite on SQLite, PostgreSQL and
//! MySQL/MariaDB, the SQL lock schemes on each, and TLS to servers of the tests' own.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: an unwrap that fails is a failing test

mod mysql;
mod postgres;
#[macro_use]
mod schemes;
mod sqlite;
mod tls;
