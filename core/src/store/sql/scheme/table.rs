//! `?scheme=table`: the unique-index lock table. A held name is a row; acquiring inserts
//! it (a duplicate key means busy), releasing deletes it by name **and** owner. With the
//! fixes the flaws of the bare recipe call for: an expiry column compared with the
//! database's clock and reclaimed by the next acquirer in one `DELETE … WHERE expired`
//! (no cron job), an owner column (no foreign release), a hold count (re-entry), and a
//! token from the counter table (`fence`), which outlives the row. Every step is a few
//! single statements, each atomic on its own, so no transaction spans two of them (an
//! InnoDB gap lock taken by one and an insert by another would deadlock).

use async_trait::async_trait;

use super::config::{Names, SchemeConfig};
use super::db::{Arg, Dialect, err};
use super::{Conns, LockScheme, create, fence};
use crate::error::Result;
use crate::state::{Attempt, Hold, HoldMode, KeyState, Released, Request};

/// How many times one attempt reclaims an expired row and inserts again before it calls
/// the name busy (another acquirer took it each time).
const RECLAIMS: usize = 3;

pub(crate) struct Table {
    c: Conns,
    n: Names,
    sql: Sql,
}

/// The scheme's statements, built once from the checked, quoted names.
struct Sql {
    insert: String,
    reclaim: String,
    reenter: String,
    read: String,
    set_token: String,
    count: String,
    decrement: String,
    delete: String,
    renew: String,
    version: String,
}

impl Table {
    pub(crate) async fn open(c: Conns, cfg: &SchemeConfig) -> Result<Table> {
        let d = c.pool.dialect();
        let n = cfg.names.clone();
        create(&c, cfg, &[schema(d, &n), fence::schema(d, &n.fence_table)]).await?;
        Ok(Table { sql: Sql::new(d, &n), c, n })
    }
}

/// The table baton makes (`?create=false`: it must exist with these columns; others,
/// such as the recipe's `id` and `desc`, may be there too).
fn schema(d: Dialect, n: &Names) -> String {
    let (t, name, owner, exp, count, token) =
        (d.q(&n.table), d.q(&n.name), d.q(&n.owner), d.q(&n.expires), d.q(&n.count), d.q(&n.token));
    let (id, owner_type, tail) = d.table_parts();
    format!(
        "CREATE TABLE IF NOT EXISTS {t} ({id}, {name} {} NOT NULL UNIQUE, {owner} {owner_type} NOT NULL DEFAULT '', \
         {exp} BIGINT NULL, {count} BIGINT NOT NULL DEFAULT 1, {token} BIGINT NOT NULL DEFAULT 0){tail}",
        d.name_type()
    )
}

impl Sql {
    fn new(d: Dialect, n: &Names) -> Sql {
        let (t, name, owner, exp, count, token) =
            (d.q(&n.table), d.q(&n.name), d.q(&n.owner), d.q(&n.expires), d.q(&n.count), d.q(&n.token));
        let now = d.now_ms();
        let p = |i| d.p(i);
        let live = format!("({exp} IS NULL OR {exp} > {now})");
        Sql {
            insert: format!(
                "{} {t} ({name}, {owner}, {exp}, {count}, {token}) VALUES ({}, {}, {now} + {}, 1, 0){}",
                d.insert_ignore(),
                p(1),
                p(2),
                p(3),
                d.on_conflict_nothing()
            ),
            reclaim: format!("DELETE FROM {t} WHERE {name} = {} AND {exp} IS NOT NULL AND {exp} <= {now}", p(1)),
            reenter: format!(
                "UPDATE {t} SET {count} = {count} + 1 WHERE {name} = {} AND {owner} = {} AND {live}",
                p(1),
                p(2)
            ),
            read: format!("SELECT {}, {count}, {token}, {exp}, {now} FROM {t} WHERE {name} = {}", d.text(&owner), p(1)),
            set_token: format!("UPDATE {t} SET {token} = {} WHERE {name} = {} AND {owner} = {}", p(1), p(2), p(3)),
            count: format!("SELECT {count} FROM {t} WHERE {name} = {} AND {owner} = {} AND {live}", p(1), p(2)),
            decrement: format!(
                "UPDATE {t} SET {count} = {count} - {} WHERE {name} = {} AND {owner} = {} AND {count} > {}",
                p(1),
                p(2),
                p(3),
                p(4)
            ),
            delete: format!("DELETE FROM {t} WHERE {name} = {} AND {owner} = {}", p(1), p(2)),
            renew: format!(
                "UPDATE {t} SET {exp} = {now} + {} WHERE {name} = {} AND {owner} = {} AND {live}",
                p(1),
                p(2),
                p(3)
            ),
            version: format!("SELECT {token} FROM {t} WHERE {name} = {}", p(1)),
        }
    }
}

/// A row as read: owner, hold count, token, expiry (ms, DB clock), the DB clock.
type Row = (String, i64, i64, Option<i64>, i64);

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[async_trait]
impl LockScheme for Table {
    async fn acquire(&self, name: &str, req: &Request) -> Result<Attempt> {
        let (pool, e, s) = (&self.c.pool, err(&self.c.store), &self.sql);
        let holder = req.holder.as_str();
        for _ in 0..RECLAIMS {
            // Read first: under contention most attempts end here, in one statement.
            if let Some((owner, count, token, exp, now)) =
                pool.opt::<Row>(&s.read, &[Arg::S(name)]).await.map_err(&e)?
            {
                let expired = exp.is_some_and(|x| x <= now);
                if owner == holder && !expired {
                    if pool.exec(&s.reenter, &[Arg::S(name), Arg::S(holder)]).await.map_err(&e)?.rows == 1 {
                        let count = u32::try_from(count + 1).unwrap_or(u32::MAX);
                        return Ok(Attempt::Granted { token: u64::try_from(token).unwrap_or(0), count, fresh: false });
                    }
                    continue;
                }
                if !expired {
                    let retry_ms = exp.map(|x| u64::try_from(x - now).unwrap_or(0));
                    return Ok(Attempt::Busy { retry_ms });
                }
                // One statement decides who reclaims an expired row; then everyone inserts.
                pool.exec(&s.reclaim, &[Arg::S(name)]).await.map_err(&e)?;
            }
            let args = [Arg::S(name), Arg::S(holder), Arg::I(ms(req.lease_ms))];
            if pool.exec(&s.insert, &args).await.map_err(&e)?.rows == 1 {
                let token = async {
                    let token = fence::next(pool, &self.n.fence_table, name, holder, None).await?;
                    pool.exec(&s.set_token, &[Arg::I(ms(token)), Arg::S(name), Arg::S(holder)]).await?;
                    Ok::<_, sqlx::Error>(token)
                }
                .await;
                return match token {
                    Ok(token) => Ok(Attempt::Granted { token, count: 1, fresh: true }),
                    Err(err) => {
                        // The row is in but the attempt fails: nobody would release it, and
                        // it would block everyone for its lease. Taken out again (best
                        // effort: if this fails too, the lease ends it).
                        let _ = pool.exec(&s.delete, &[Arg::S(name), Arg::S(holder)]).await;
                        Err(e(err))
                    }
                };
            }
        }
        Ok(Attempt::Busy { retry_ms: None })
    }

    async fn renew(&self, name: &str, holder: &str, lease_ms: u64) -> Result<bool> {
        let args = [Arg::I(ms(lease_ms)), Arg::S(name), Arg::S(holder)];
        Ok(self.c.pool.exec(&self.sql.renew, &args).await.map_err(err(&self.c.store))?.rows == 1)
    }

    async fn release(&self, name: &str, holder: &str, count: u32) -> Result<Released> {
        let (pool, e, s) = (&self.c.pool, err(&self.c.store), &self.sql);
        let held: Option<(i64,)> = pool.opt(&s.count, &[Arg::S(name), Arg::S(holder)]).await.map_err(&e)?;
        let Some((held,)) = held else { return Ok(Released::NotHeld) };
        if count != u32::MAX && i64::from(count) < held {
            let args = [Arg::I(i64::from(count)), Arg::S(name), Arg::S(holder), Arg::I(i64::from(count))];
            if pool.exec(&s.decrement, &args).await.map_err(&e)?.rows == 1 {
                return Ok(Released::StillHeld(u32::try_from(held - i64::from(count)).unwrap_or(u32::MAX)));
            }
        }
        let gone = pool.exec(&s.delete, &[Arg::S(name), Arg::S(holder)]).await.map_err(&e)?.rows;
        Ok(if gone == 1 { Released::Freed } else { Released::NotHeld })
    }

    async fn read(&self, name: &str) -> Result<(KeyState, u64)> {
        let e = err(&self.c.store);
        let row: Option<Row> = self.c.pool.opt(&self.sql.read, &[Arg::S(name)]).await.map_err(&e)?;
        let last = fence::last(&self.c.pool, &self.n.fence_table, name).await.map_err(&e)?;
        let mut s = KeyState { fence: last.map_or(0, |l| l.0), ..KeyState::default() };
        let mut now_ms = 0;
        if let Some((owner, count, token, exp, now)) = row {
            now_ms = u64::try_from(now).unwrap_or(0);
            if exp.is_none_or(|x| x > now) {
                // A row written by plain SQL names no owner: shown as the table's.
                let holder = if owner.is_empty() { format!("sql:{}", self.n.table) } else { owner };
                s.holds.push(Hold {
                    holder,
                    mode: HoldMode::Exclusive,
                    count: u32::try_from(count).unwrap_or(1),
                    token: u64::try_from(token).unwrap_or(0),
                    // No expiry: held until deleted (shown as a lease of about 100 years).
                    expires_ms: exp.map_or(now_ms + 100 * 365 * 86_400_000, |x| u64::try_from(x).unwrap_or(0)),
                    value: None,
                });
            }
        }
        Ok((s, now_ms))
    }

    async fn version(&self, name: &str) -> Result<i64> {
        let v: Option<(i64,)> =
            self.c.pool.opt(&self.sql.version, &[Arg::S(name)]).await.map_err(err(&self.c.store))?;
        Ok(v.map_or(-1, |v| v.0))
    }

    async fn adopt(&self, name: &str, holder: &str, token: u64) -> Result<()> {
        let (pool, e) = (&self.c.pool, err(&self.c.store));
        pool.exec(&self.sql.set_token, &[Arg::I(ms(token)), Arg::S(name), Arg::S(holder)]).await.map_err(&e)?;
        fence::adopt(pool, &self.n.fence_table, name, token).await.map_err(&e)
    }

    async fn close(&self) {
        self.c.pool.close().await;
    }

    /// An uncontended cycle's statements: the read, the insert, the counter and the
    /// token written into the row; the count read and the delete.
    #[cfg(feature = "bench")]
    async fn yardsticks(&self, name: &str) -> Result<Vec<(&'static str, std::time::Duration)>> {
        let (pool, e, s) = (&self.c.pool, err(&self.c.store), &self.sql);
        let holder = "yardstick";
        let mut t = crate::store::Stopwatch::start();
        pool.opt::<Row>(&s.read, &[Arg::S(name)]).await.map_err(&e)?;
        t.lap("read");
        pool.exec(&s.insert, &[Arg::S(name), Arg::S(holder), Arg::I(30_000)]).await.map_err(&e)?;
        t.lap("insert");
        let token = fence::next(pool, &self.n.fence_table, name, holder, None).await.map_err(&e)?;
        t.lap("token");
        pool.exec(&s.set_token, &[Arg::I(ms(token)), Arg::S(name), Arg::S(holder)]).await.map_err(&e)?;
        t.lap("set_token");
        pool.opt::<(i64,)>(&s.count, &[Arg::S(name), Arg::S(holder)]).await.map_err(&e)?;
        t.lap("count");
        pool.exec(&s.delete, &[Arg::S(name), Arg::S(holder)]).await.map_err(&e)?;
        t.lap("delete");
        Ok(t.laps())
    }
}
