//! `?scheme=optimistic`: the version-column check. Each name has one row, never deleted;
//! every change is `UPDATE … SET …, version = <read + 1> WHERE name = ? AND version =
//! <read>`, and only one of several writers that read the same version changes the row.
//! Taking the lock is that update setting the owner and an expiry (on the database's
//! clock); a writer that loses the race reports busy, and its wait is retries woken by the
//! version changing (polled with backoff) — many retries under contention, as the recipe
//! warns. The version only grows, so the version of a fresh grant is its fencing token.

use async_trait::async_trait;

use super::config::{Names, SchemeConfig};
use super::db::{Arg, Dialect, err};
use super::{Conns, LockScheme, create};
use crate::error::{Error, Result};
use crate::state::{Attempt, Hold, HoldMode, KeyState, Released, Request};

/// Re-reads of one step on its own row before giving up (another writer changed it each
/// time: renewals, re-entries and releases of the same holder race like this), with a
/// short random pause between them.
const RACES: usize = 500;

async fn pause() {
    tokio::time::sleep(std::time::Duration::from_micros(rand::random_range(100..2_000))).await;
}

pub(crate) struct Optimistic {
    c: Conns,
    sql: Sql,
    /// One step at a time per name and holder in this process: concurrent re-entries and
    /// releases of one holder (attempts given up by their callers and finished in the
    /// background) lost count otherwise, leaving holds behind.
    steps: crate::sync::Registry<(String, String), tokio::sync::Mutex<()>>,
}

struct Sql {
    read: String,
    insert: String,
    take: String,
    count: String,
    free: String,
    renew: String,
    adopt: String,
}

/// A row as read: owner, version, expiry, hold count, token, the DB clock.
type Row = (Option<String>, i64, Option<i64>, i64, i64, i64);

fn schema(d: Dialect, n: &Names) -> String {
    let (t, name, owner, exp, count, token, version) =
        (d.q(&n.table), d.q(&n.name), d.q(&n.owner), d.q(&n.expires), d.q(&n.count), d.q(&n.token), d.q(&n.version));
    let (id, owner_type, tail) = d.table_parts();
    format!(
        "CREATE TABLE IF NOT EXISTS {t} ({id}, {name} {} NOT NULL UNIQUE, {owner} {owner_type} NULL, \
         {version} BIGINT NOT NULL DEFAULT 0, {exp} BIGINT NULL, {count} BIGINT NOT NULL DEFAULT 0, \
         {token} BIGINT NOT NULL DEFAULT 0){tail}",
        d.name_type()
    )
}

impl Optimistic {
    pub(crate) async fn open(c: Conns, cfg: &SchemeConfig) -> Result<Optimistic> {
        let d = c.pool.dialect();
        let n = &cfg.names;
        create(&c, cfg, &[schema(d, n)]).await?;
        let (t, name, owner, exp, count, token, version) = (
            d.q(&n.table),
            d.q(&n.name),
            d.q(&n.owner),
            d.q(&n.expires),
            d.q(&n.count),
            d.q(&n.token),
            d.q(&n.version),
        );
        let (now, p) = (d.now_ms(), |i| d.p(i));
        // Every update sets its own columns (its first `k` arguments), then the next
        // version, checked against the version read: `…, version = ? WHERE name = ? AND version = ?`.
        let cas =
            |k: usize| format!("{version} = {} WHERE {name} = {} AND {version} = {}", p(k + 1), p(k + 2), p(k + 3));
        let sql = Sql {
            read: format!(
                "SELECT {}, {version}, {exp}, {count}, {token}, {now} FROM {t} WHERE {name} = {}",
                d.text(&owner),
                p(1)
            ),
            insert: format!(
                "{} {t} ({name}, {owner}, {version}, {count}) VALUES ({}, NULL, 0, 0){}",
                d.insert_ignore(),
                p(1),
                d.on_conflict_nothing()
            ),
            take: format!(
                "UPDATE {t} SET {owner} = {}, {count} = 1, {exp} = {now} + {}, {token} = {}, {}",
                p(1),
                p(2),
                p(3),
                cas(3)
            ),
            count: format!("UPDATE {t} SET {count} = {}, {}", p(1), cas(1)),
            free: format!("UPDATE {t} SET {owner} = NULL, {exp} = NULL, {count} = 0, {}", cas(0)),
            renew: format!("UPDATE {t} SET {exp} = {now} + {}, {}", p(1), cas(1)),
            adopt: format!("UPDATE {t} SET {token} = {} WHERE {name} = {} AND {owner} = {}", p(1), p(2), p(3)),
        };
        Ok(Optimistic { c, sql, steps: crate::sync::Registry::default() })
    }

    fn steps_of(&self, name: &str, holder: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        self.steps.get_or_insert_with((name.to_owned(), holder.to_owned()), tokio::sync::Mutex::default)
    }

    async fn row(&self, name: &str) -> Result<Option<Row>> {
        self.c.pool.opt(&self.sql.read, &[Arg::S(name)]).await.map_err(err(&self.c.store))
    }

    /// One compare-and-set: `sql` with its own arguments `set`, then the version check.
    async fn cas(&self, sql: &str, set: &[Arg<'_>], name: &str, version: i64) -> Result<bool> {
        self.cas_to(sql, set, name, version, version + 1).await
    }

    /// [`Optimistic::cas`] to the version `next`.
    async fn cas_to(&self, sql: &str, set: &[Arg<'_>], name: &str, version: i64, next: i64) -> Result<bool> {
        let mut args = set.to_vec();
        args.extend([Arg::I(next), Arg::S(name), Arg::I(version)]);
        Ok(self.c.pool.exec(sql, &args).await.map_err(err(&self.c.store))?.rows == 1)
    }
}

fn live(exp: Option<i64>, now: i64) -> bool {
    exp.is_none_or(|x| x > now)
}

#[async_trait]
impl LockScheme for Optimistic {
    async fn acquire(&self, name: &str, req: &Request) -> Result<Attempt> {
        let steps = self.steps_of(name, &req.holder);
        let _one = steps.lock().await;
        for _ in 0..RACES {
            let Some((owner, version, exp, count, token, now)) = self.row(name).await? else {
                let e = err(&self.c.store);
                self.c.pool.exec(&self.sql.insert, &[Arg::S(name)]).await.map_err(&e)?;
                continue;
            };
            let held = owner.as_deref().is_some_and(|o| !o.is_empty()) && live(exp, now);
            if held && owner.as_deref() == Some(req.holder.as_str()) {
                let n = count.checked_add(1).ok_or_else(|| Error::invalid_argument("hold count overflow"))?;
                if self.cas(&self.sql.count, &[Arg::I(n)], name, version).await? {
                    let count = u32::try_from(n).unwrap_or(u32::MAX);
                    return Ok(Attempt::Granted { token: u64::try_from(token).unwrap_or(0), count, fresh: false });
                }
                pause().await;
                continue;
            }
            if held {
                return Ok(Attempt::Busy { retry_ms: exp.map(|x| u64::try_from(x - now).unwrap_or(0)) });
            }
            let lease = i64::try_from(req.lease_ms).unwrap_or(i64::MAX);
            // The version (and token) is at least the database's clock in µs, as the other
            // designs' tokens are, so that tokens of one name rise across them (`claim`).
            let new = (version + 1).max(now.saturating_mul(1000));
            let set = [Arg::S(&req.holder), Arg::I(lease), Arg::I(new)];
            let took = self.cas_to(&self.sql.take, &set, name, version, new).await?;
            // Lost the race: someone else's update came first, so it holds now.
            return Ok(if took {
                Attempt::Granted { token: u64::try_from(new).unwrap_or(0), count: 1, fresh: true }
            } else {
                Attempt::Busy { retry_ms: None }
            });
        }
        Ok(Attempt::Busy { retry_ms: None })
    }

    async fn renew(&self, name: &str, holder: &str, lease_ms: u64) -> Result<bool> {
        let steps = self.steps_of(name, holder);
        let _one = steps.lock().await;
        for _ in 0..RACES {
            let Some((owner, version, exp, _, _, now)) = self.row(name).await? else { return Ok(false) };
            if owner.as_deref() != Some(holder) || !live(exp, now) {
                return Ok(false);
            }
            let lease = Arg::I(i64::try_from(lease_ms).unwrap_or(i64::MAX));
            if self.cas(&self.sql.renew, &[lease], name, version).await? {
                return Ok(true);
            }
            pause().await;
        }
        Err(Error::backend("optimistic lock: too many conflicting updates of one row in a row"))
    }

    async fn release(&self, name: &str, holder: &str, count: u32) -> Result<Released> {
        let steps = self.steps_of(name, holder);
        let _one = steps.lock().await;
        for _ in 0..RACES {
            let Some((owner, version, exp, held, _, now)) = self.row(name).await? else { return Ok(Released::NotHeld) };
            if owner.as_deref() != Some(holder) || !live(exp, now) {
                return Ok(Released::NotHeld);
            }
            if count != u32::MAX && i64::from(count) < held {
                let left = held - i64::from(count);
                if self.cas(&self.sql.count, &[Arg::I(left)], name, version).await? {
                    return Ok(Released::StillHeld(u32::try_from(left).unwrap_or(u32::MAX)));
                }
            } else if self.cas(&self.sql.free, &[], name, version).await? {
                return Ok(Released::Freed);
            }
            pause().await;
        }
        Err(Error::backend("optimistic lock: too many conflicting updates of one row in a row"))
    }

    async fn read(&self, name: &str) -> Result<(KeyState, u64)> {
        let Some((owner, _, exp, count, token, now)) = self.row(name).await? else {
            return Ok((KeyState::default(), 0));
        };
        let token = u64::try_from(token).unwrap_or(0);
        let mut s = KeyState { fence: token, ..KeyState::default() };
        let now_ms = u64::try_from(now).unwrap_or(0);
        if let Some(holder) = owner.filter(|o| !o.is_empty() && live(exp, now)) {
            let expires_ms = exp.map_or(now_ms + 100 * 365 * 86_400_000, |x| u64::try_from(x).unwrap_or(0));
            let count = u32::try_from(count).unwrap_or(1).max(1);
            s.holds.push(Hold { holder, mode: HoldMode::Exclusive, count, token, expires_ms, value: None });
        }
        Ok((s, now_ms))
    }

    async fn version(&self, name: &str) -> Result<i64> {
        Ok(self.row(name).await?.map_or(-1, |r| r.1))
    }

    async fn adopt(&self, name: &str, holder: &str, token: u64) -> Result<()> {
        let args = [Arg::I(i64::try_from(token).unwrap_or(i64::MAX)), Arg::S(name), Arg::S(holder)];
        self.c.pool.exec(&self.sql.adopt, &args).await.map(drop).map_err(err(&self.c.store))
    }

    async fn close(&self) {
        self.c.pool.close().await;
    }
}
