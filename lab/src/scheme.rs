//! Every scheme of the lab by name: what it is, its fault points, and its opener.

use std::sync::Arc;

use baton::{Error, ErrorKind, Result};

use crate::baton_lock::BatonLock;
use crate::clock::Clock;
use crate::getset_timestamp::GetsetTimestamp;
use crate::hooks::{Hooks, Point};
use crate::lab_lock::LabLock;
use crate::set_nx_px::SetNxPx;
use crate::set_nx_px_lua::SetNxPxLua;
use crate::set_nx_px_owned::SetNxPxOwned;
use crate::setnx::Setnx;
use crate::setnx_expire::SetnxExpire;

/// Every scheme of the lab, by the name `baton lab` prints.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(into = "&'static str")]
pub enum Scheme {
    /// `SETNX key 123`, released by `DEL`: no expiry ([`Setnx`]).
    Setnx,
    /// `SETNX` then `EXPIRE`, two commands ([`SetnxExpire`]).
    SetnxExpire,
    /// `SET key 123 NX PX ttl` with a value every client shares, released by `DEL`
    /// ([`SetNxPx`]).
    SetNxPx,
    /// `SET key <uuid> NX PX ttl`, released by `GET`, compare, then `DEL`
    /// ([`SetNxPxOwned`]).
    SetNxPxOwned,
    /// `SET key <uuid> NX PX ttl`, released by one compare-and-delete Lua script
    /// ([`SetNxPxLua`]).
    SetNxPxLua,
    /// `SETNX key <expiry timestamp>`, taken over by `GETSET` once the timestamp passed
    /// ([`GetsetTimestamp`]).
    GetsetTimestamp,
    /// baton's `redis://` lock: Redisson's `RLock` hash layout, fenced ([`BatonLock`]).
    Redisson,
    /// baton's `redlock://` lock over independent Redis nodes ([`BatonLock`]).
    Redlock,
    /// baton's `zk://` lock on a 3-member ZooKeeper ensemble: Curator's ephemeral-sequential
    /// queue, the grant's `czxid` as its token ([`BatonLock`]).
    Zookeeper,
    /// baton's own SQL design (`sqlite://`, no `?scheme=`: a row of JSON state per name,
    /// judged in one transaction on the database's clock), on a SQLite file of the lab's
    /// own ([`BatonLock`]).
    SqliteState,
    /// `sqlite://…?scheme=table`: a row per held name under a unique index, an expiry
    /// column on the database's clock, tokens from the counter table ([`BatonLock`]).
    SqliteTable,
    /// `sqlite://…?scheme=optimistic`: the owner set by a version-checked `UPDATE`, the
    /// version as the token ([`BatonLock`]).
    SqliteOptimistic,
    /// baton's own SQL design on PostgreSQL (`postgres://`, no `?scheme=`) ([`BatonLock`]).
    PostgresState,
    /// `postgres://…?scheme=table` ([`BatonLock`]).
    PostgresTable,
    /// `postgres://…?scheme=for-update`: an open transaction holding the name's row lock,
    /// its lease the session's idle limit ([`BatonLock`]).
    PostgresForUpdate,
    /// `postgres://…?scheme=optimistic` ([`BatonLock`]).
    PostgresOptimistic,
    /// `postgres://…?scheme=advisory`: a session holding `pg_try_advisory_lock`, its lease
    /// the session's idle limit ([`BatonLock`]).
    PostgresAdvisory,
    /// baton's own SQL design on MySQL/MariaDB (`mysql://`, no `?scheme=`) ([`BatonLock`]).
    MysqlState,
    /// `mysql://…?scheme=table` ([`BatonLock`]).
    MysqlTable,
    /// `mysql://…?scheme=for-update` (`wait_timeout` as the lease, whole seconds) ([`BatonLock`]).
    MysqlForUpdate,
    /// `mysql://…?scheme=optimistic` ([`BatonLock`]).
    MysqlOptimistic,
    /// `mysql://…?scheme=advisory`: `GET_LOCK` on a session, `wait_timeout` as the lease
    /// ([`BatonLock`]).
    MysqlAdvisory,
}

/// The database behind an SQL row of the lab.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Database {
    /// A SQLite file of the lab's own.
    Sqlite,
    /// The PostgreSQL server of [`Config::postgres_url`].
    Postgres,
    /// The MySQL/MariaDB server of [`Config::mysql_url`].
    Mysql,
}

impl Scheme {
    /// Every scheme, from the simplest to baton's own (the order of the matrix).
    pub const ALL: [Scheme; 22] = [
        Scheme::Setnx,
        Scheme::SetnxExpire,
        Scheme::SetNxPx,
        Scheme::SetNxPxOwned,
        Scheme::SetNxPxLua,
        Scheme::GetsetTimestamp,
        Scheme::Redisson,
        Scheme::Redlock,
        Scheme::Zookeeper,
        Scheme::SqliteState,
        Scheme::SqliteTable,
        Scheme::SqliteOptimistic,
        Scheme::PostgresState,
        Scheme::PostgresTable,
        Scheme::PostgresForUpdate,
        Scheme::PostgresOptimistic,
        Scheme::PostgresAdvisory,
        Scheme::MysqlState,
        Scheme::MysqlTable,
        Scheme::MysqlForUpdate,
        Scheme::MysqlOptimistic,
        Scheme::MysqlAdvisory,
    ];

    /// The name `baton lab` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Setnx => "setnx",
            Scheme::SetnxExpire => "setnx-expire",
            Scheme::SetNxPx => "set-nx-px",
            Scheme::SetNxPxOwned => "set-nx-px-owned",
            Scheme::SetNxPxLua => "set-nx-px-lua",
            Scheme::GetsetTimestamp => "getset-timestamp",
            Scheme::Redisson => "redisson",
            Scheme::Redlock => "redlock",
            Scheme::Zookeeper => "zookeeper",
            Scheme::SqliteState => "sqlite-state",
            Scheme::SqliteTable => "sqlite-table",
            Scheme::SqliteOptimistic => "sqlite-optimistic",
            Scheme::PostgresState => "postgres-state",
            Scheme::PostgresTable => "postgres-table",
            Scheme::PostgresForUpdate => "postgres-for-update",
            Scheme::PostgresOptimistic => "postgres-optimistic",
            Scheme::PostgresAdvisory => "postgres-advisory",
            Scheme::MysqlState => "mysql-state",
            Scheme::MysqlTable => "mysql-table",
            Scheme::MysqlForUpdate => "mysql-for-update",
            Scheme::MysqlOptimistic => "mysql-optimistic",
            Scheme::MysqlAdvisory => "mysql-advisory",
        }
    }

    /// The scheme called `name`.
    pub fn from_name(name: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// One line: what the scheme does, and what it keeps or breaks.
    pub fn summary(self) -> &'static str {
        match self {
            Scheme::Setnx => "SETNX, released by DEL: no expiry, so a dead holder deadlocks everyone; no owner check",
            Scheme::SetnxExpire => {
                "SETNX then EXPIRE: a holder dying between the two leaves a lock that never expires; no owner check"
            }
            Scheme::SetNxPx => {
                "atomic SET NX PX with a shared value: a holder past its ttl deletes its successor's lock"
            }
            Scheme::SetNxPxOwned => {
                "SET NX PX with a unique value, released by GET then DEL: the gap between them frees a successor's lock"
            }
            Scheme::SetNxPxLua => {
                "SET NX PX with a unique value, released by a compare-and-delete script: safe on one node, unfenced"
            }
            Scheme::GetsetTimestamp => {
                "SETNX of an expiry timestamp, taken over by GETSET: client clocks decide expiry; no owner check"
            }
            Scheme::Redisson => {
                "Redisson's hash lock with fencing tokens: safe and fenced on one node, lost with that node"
            }
            Scheme::Redlock => "Redlock over independent nodes with fencing tokens: survives a minority of nodes lost",
            Scheme::Zookeeper => {
                "ZooKeeper's ephemeral-sequential queue (Curator's), czxid tokens: a quorum's writes survive a member lost"
            }
            Scheme::SqliteState | Scheme::PostgresState | Scheme::MysqlState => {
                "baton's own SQL design (JSON state rows, database clock, tokens): safe and fenced, on one database"
            }
            Scheme::SqliteTable | Scheme::PostgresTable | Scheme::MysqlTable => {
                "lock table under a unique index, expiry on the database clock, owner-checked delete, counter tokens: safe and fenced, on one database"
            }
            Scheme::PostgresForUpdate | Scheme::MysqlForUpdate => {
                "SELECT … FOR UPDATE SKIP LOCKED in an open transaction, the session's idle limit as lease, counter tokens: safe and fenced, on one database"
            }
            Scheme::SqliteOptimistic | Scheme::PostgresOptimistic | Scheme::MysqlOptimistic => {
                "owner set by a version-checked UPDATE, expiry on the database clock, the version as token: safe and fenced, on one database"
            }
            Scheme::PostgresAdvisory | Scheme::MysqlAdvisory => {
                "the database's named lock on a session, the session's idle limit as lease, counter tokens: safe and fenced, on one database"
            }
        }
    }

    /// The fault points between this scheme's steps.
    pub fn points(self) -> &'static [Point] {
        match self {
            Scheme::SetnxExpire => &[Point::AfterSetnx],
            Scheme::SetNxPxOwned => &[Point::BeforeDelete],
            Scheme::GetsetTimestamp => &[Point::AfterGet],
            _ => &[],
        }
    }

    /// Whether the scheme judges expiry by the client's clock (the clock-jump fault).
    pub fn uses_client_clock(self) -> bool {
        matches!(self, Scheme::GetsetTimestamp)
    }

    /// Whether the scheme spans several independent nodes (the others live on one).
    pub fn multi_node(self) -> bool {
        matches!(self, Scheme::Redlock | Scheme::Zookeeper)
    }

    /// The database and the `?scheme=` of an SQL row (`None`: baton's own design, no
    /// option); `None` for the rows that are not SQL.
    pub fn sql(self) -> Option<(Database, Option<&'static str>)> {
        use Database::{Mysql, Postgres, Sqlite};
        Some(match self {
            Scheme::SqliteState => (Sqlite, None),
            Scheme::SqliteTable => (Sqlite, Some("table")),
            Scheme::SqliteOptimistic => (Sqlite, Some("optimistic")),
            Scheme::PostgresState => (Postgres, None),
            Scheme::PostgresTable => (Postgres, Some("table")),
            Scheme::PostgresForUpdate => (Postgres, Some("for-update")),
            Scheme::PostgresOptimistic => (Postgres, Some("optimistic")),
            Scheme::PostgresAdvisory => (Postgres, Some("advisory")),
            Scheme::MysqlState => (Mysql, None),
            Scheme::MysqlTable => (Mysql, Some("table")),
            Scheme::MysqlForUpdate => (Mysql, Some("for-update")),
            Scheme::MysqlOptimistic => (Mysql, Some("optimistic")),
            Scheme::MysqlAdvisory => (Mysql, Some("advisory")),
            _ => return None,
        })
    }

    /// A client of this scheme on the lock `name` of the store(s) `urls` (one URL, or
    /// every node for Redlock; for an SQL row the database's URL with its `?scheme=`), with its fault hooks and its own clock.
    ///
    /// # Errors
    /// `InvalidArgument` without a URL; `InvalidUrl`/`Connection` when a store cannot be
    /// reached.
    pub async fn open(self, urls: &[String], name: &str, hooks: Hooks, clock: Arc<Clock>) -> Result<Box<dyn LabLock>> {
        let one = || {
            urls.first().map(String::as_str).ok_or_else(|| {
                Error::new(ErrorKind::InvalidArgument, format!("lab: {} needs a store URL", self.as_str()))
            })
        };
        Ok(match self {
            Scheme::Setnx => Box::new(Setnx::open(one()?, name).await?),
            Scheme::SetnxExpire => Box::new(SetnxExpire::open(one()?, name, hooks).await?),
            Scheme::SetNxPx => Box::new(SetNxPx::open(one()?, name).await?),
            Scheme::SetNxPxOwned => Box::new(SetNxPxOwned::open(one()?, name, hooks).await?),
            Scheme::SetNxPxLua => Box::new(SetNxPxLua::open(one()?, name).await?),
            Scheme::GetsetTimestamp => Box::new(GetsetTimestamp::open(one()?, name, hooks, clock).await?),
            Scheme::Redlock => Box::new(BatonLock::open(&redlock_url(urls), name).await?),
            // Baton's own locks on one URL: redis://, zk://, and the SQL rows.
            _ => Box::new(BatonLock::open(one()?, name).await?),
        })
    }
}

impl From<Scheme> for &'static str {
    fn from(s: Scheme) -> &'static str {
        s.as_str()
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `redlock://h1:p1,h2:p2,…` from the nodes' `redis://` URLs.
fn redlock_url(urls: &[String]) -> String {
    let hosts: Vec<&str> = urls.iter().map(|u| u.trim_start_matches("redis://").trim_end_matches('/')).collect();
    format!("redlock://{}", hosts.join(","))
}
