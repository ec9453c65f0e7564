//! `?scheme=advisory`: the database's own named locks, held by a session (a connection
//! pinned to the hold). PostgreSQL: `pg_try_advisory_lock(key)` / `pg_advisory_unlock(key)`
//! on a 64-bit key, [`pg_key`] of the name. MySQL/MariaDB: `GET_LOCK(name, 0)` /
//! `RELEASE_LOCK(name)`, names longer than MySQL's 64 characters replaced by [`mysql_name`].
//! A closed session frees its locks on the server: a dropped connection is a lost lock.

use async_trait::async_trait;
use md5::{Digest, Md5};

use super::config::SchemeConfig;
use super::db::{Arg, Conn, Dialect, Pool};
use super::for_update::session;
use super::pinned::{Held, Session, set_lease};
use super::{Conns, create, fence};
use crate::error::Result;

/// The PostgreSQL advisory-lock key of a name: the first 8 bytes of the MD5 digest of its
/// UTF-8 bytes, as a big-endian signed 64-bit number — in SQL,
/// `('x' || substr(md5(name), 1, 16))::bit(64)::bigint`. Two names with the same key are
/// one lock (a collision is unlikely, about 1 in 2^32 among 2^16 names, but possible).
pub(crate) fn pg_key(name: &str) -> i64 {
    let d = Md5::digest(name.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    i64::from_be_bytes(b)
}

/// MySQL's lock name for a baton name: the name itself up to 64 characters (MySQL's
/// limit), longer ones `baton:` + the hex MD5 of the name (`CONCAT('baton:', MD5(name))`).
pub(crate) fn mysql_name(name: &str) -> String {
    if name.chars().count() <= 64 {
        return name.to_owned();
    }
    let d = Md5::digest(name.as_bytes());
    format!("baton:{}", d.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

pub(crate) struct Advisory {
    d: Dialect,
}

impl Advisory {
    pub(crate) async fn open(c: &Conns, cfg: &SchemeConfig) -> Result<Advisory> {
        let d = c.pool.dialect();
        create(c, cfg, &[fence::schema(d, &cfg.names.fence_table)]).await?;
        Ok(Advisory { d })
    }
}

/// Restores the session's idle limit before the connection goes back to the pool.
async fn reset(d: Dialect, held: &mut Held) -> sqlx::Result<()> {
    #[cfg(feature = "mysql")]
    if d == Dialect::Mysql {
        return held.ex().exec(super::for_update::MYSQL_RESET, &[]).await.map(drop);
    }
    let _ = d;
    held.ex().opt::<(String,)>("SELECT set_config('idle_session_timeout', '0', false)", &[]).await.map(drop)
}

#[async_trait]
impl Session for Advisory {
    async fn take(&self, _conns: &Conns, conn: Conn, name: &str, lease_ms: u64) -> sqlx::Result<Option<(Held, i64)>> {
        let mut held = Held::Conn(conn);
        let sid = session(self.d);
        let (got, session) = if self.d == Dialect::Mysql {
            let n = mysql_name(name);
            let sql = format!("SELECT CAST(GET_LOCK(?, 0) AS SIGNED), {sid}");
            let (r, s): (Option<i64>, i64) = held.ex().one(&sql, &[Arg::S(&n)]).await?;
            (r == Some(1), s)
        } else {
            let sql = format!("SELECT pg_try_advisory_lock($1), {sid}");
            held.ex().one::<(bool, i64)>(&sql, &[Arg::I(pg_key(name))]).await?
        };
        if !got {
            return Ok(None);
        }
        set_lease(self.d, &mut held, lease_ms, "idle_session_timeout", false).await?;
        Ok(Some((held, session)))
    }

    async fn keep(&self, held: &mut Held, lease_ms: u64) -> sqlx::Result<()> {
        set_lease(self.d, held, lease_ms, "idle_session_timeout", false).await
    }

    async fn give_back(&self, mut held: Held, name: &str) -> sqlx::Result<()> {
        if self.d == Dialect::Mysql {
            let n = mysql_name(name);
            held.ex().opt::<(Option<i64>,)>("SELECT CAST(RELEASE_LOCK(?) AS SIGNED)", &[Arg::S(&n)]).await?;
        } else {
            held.ex().opt::<(bool,)>("SELECT pg_advisory_unlock($1)", &[Arg::I(pg_key(name))]).await?;
        }
        reset(self.d, &mut held).await
    }

    async fn holder(&self, pool: &Pool, name: &str) -> sqlx::Result<Option<i64>> {
        if self.d == Dialect::Mysql {
            let n = mysql_name(name);
            let (s,): (Option<i64>,) = pool.one("SELECT CAST(IS_USED_LOCK(?) AS SIGNED)", &[Arg::S(&n)]).await?;
            return Ok(s);
        }
        // A bigint key shows as its high half in `classid`, its low half in `objid`.
        let key = pg_key(name);
        let (hi, lo) = ((key >> 32) & 0xffff_ffff, key & 0xffff_ffff);
        let sql = "SELECT pid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
                   AND classid::bigint = $1 AND objid::bigint = $2 \
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
        let row: Option<(i64,)> = pool.opt(sql, &[Arg::I(hi), Arg::I(lo)]).await?;
        Ok(row.map(|r| r.0))
    }

    fn foreign(&self, session: i64) -> String {
        match self.d {
            Dialect::Mysql => format!("mysql:connection:{session}"),
            _ => format!("postgres:pid:{session}"),
        }
    }

    fn cheap_holder(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_names() {
        // ('x' || substr(md5('orders/42'), 1, 16))::bit(64)::bigint, computed by PostgreSQL 15.
        assert_eq!(pg_key("orders/42"), pg_key("orders/42"));
        assert_ne!(pg_key("a"), pg_key("b"));
        assert_eq!(mysql_name("short"), "short");
        let long = "x".repeat(65);
        assert!(mysql_name(&long).starts_with("baton:") && mysql_name(&long).len() == 38);
    }
}
