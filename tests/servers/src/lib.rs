//! Servers of one's own on loopback, started and killed by baton's lab (`baton lab`, at run
//! time) and by its tests (`baton-testkit`): throwaway `redis-server`s (TLS, replicas, a
//! clock stepped under libfaketime), PostgreSQL and MariaDB servers, a 3-member ZooKeeper
//! ensemble, each on a free loopback port of one rule ([`free_loopback_port`]). Each is
//! killed (that child only, by its own handle) when dropped.

mod port;
mod redis_server;
mod sql;
mod zk;

pub use port::free_loopback_port;
pub use redis_server::{FakeClock, OwnRedis, TlsFiles, faketime_available, faketime_lib, redis_server_available};
pub use sql::{OWN_TLS_PASSWORD, OwnMariaDb, OwnPostgres, own_mariadb_available, own_postgres_available};
pub use zk::{OwnZk, zookeeper_available};
