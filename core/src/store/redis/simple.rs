//! The simple safe lock (`?scheme=simple`): `SET name token NX PX ttl`, released by an
//! atomic compare-and-delete and extended by an atomic compare-and-extend — the layout of
//! redis-py's `Lock`, redsync and node-redlock, so those clients and baton contend on the
//! same names. The key's value is the baton holder id (`uuid:n`), a token string as the
//! others store; baton's hold count and fencing token live in keys those clients ignore
//! (docs/redis-layout.md). Only `Lock` changes: a fair lock has no queue in this layout
//! (`Unsupported`); the other kinds keep Redisson's layouts.

use std::time::Duration;

use redis::{Cmd, Value};

use super::keys::SimpleKeys;
use super::scripts::SCRIPTS;
use super::{Redis, bytes, bytes_u64, evalsha, expiry, int, items, ms, pairs, uint};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::{Hold, HoldMode, KeyState, Mode, Released, Request};

/// What a fair lock under `?scheme=simple` answers.
pub(super) fn fair_unsupported(store: &str) -> Error {
    Error::unsupported(format!(
        "{store}: fair locks are not available with ?scheme=simple (the SET NX PX layout of redis-py, redsync and \
         node-redlock has no queue); use the default scheme (Redisson's RFairLock layout) for fair locks"
    ))
}

impl Redis {
    /// The raw reply of the acquire script (`Redis::attempt` reads it).
    pub(super) async fn simple_acquire(&self, key: &Key, req: &Request) -> Result<Value> {
        if !matches!(req.mode, Mode::Exclusive) {
            return Err(fair_unsupported(&self.store));
        }
        let k = SimpleKeys::new(&self.name(key));
        let lease = req.lease_ms.to_string();
        self.eval(
            &SCRIPTS.simple_acquire,
            &[k.key.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
            &[req.holder.as_bytes(), lease.as_bytes()],
        )
        .await
    }

    pub(super) async fn simple_release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        let k = SimpleKeys::new(&self.name(key));
        let c = super::count_arg(count).to_string();
        let v = self
            .eval(
                &SCRIPTS.simple_release,
                &[k.key.as_bytes(), k.meta.as_bytes()],
                &[holder.as_bytes(), c.as_bytes(), k.channel.as_bytes()],
            )
            .await?;
        self.released(&v, count)
    }

    pub(super) fn simple_renew_call(&self, key: &Key, holder: &str, lease: Duration) -> Cmd {
        let k = SimpleKeys::new(&self.name(key));
        let lease = ms(lease).to_string();
        evalsha(&SCRIPTS.simple_renew, &[k.key.as_bytes(), k.meta.as_bytes()], &[holder.as_bytes(), lease.as_bytes()])
    }

    pub(super) async fn simple_inspect(&self, key: &Key) -> Result<(KeyState, u64)> {
        let k = SimpleKeys::new(&self.name(key));
        let v = self
            .eval(&SCRIPTS.simple_inspect, &[k.key.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()], &[])
            .await?;
        let bad = || self.reply_err("inspect", &v);
        let [now, value, pttl, meta, counter] = items(&v).ok_or_else(bad)? else {
            return Err(bad());
        };
        let now = uint(now).ok_or_else(bad)?;
        let pttl = int(pttl).ok_or_else(bad)?;
        let meta = pairs(meta);
        let field = |prefix: &str, holder: &str| {
            let f = format!("{prefix}{holder}");
            meta.iter().find(|(m, _)| *m == f.as_bytes()).and_then(|(_, v)| bytes_u64(v))
        };
        let holds = match bytes(value) {
            None => Vec::new(),
            Some(value) => {
                // A foreign holder (redis-py, redsync, node-redlock) has no count or token
                // here: one hold, token 0 (unknown).
                let holder = String::from_utf8_lossy(value).into_owned();
                vec![Hold {
                    count: field("c:", &holder).and_then(|c| u32::try_from(c).ok()).unwrap_or(1),
                    token: field("t:", &holder).unwrap_or(0),
                    mode: HoldMode::Exclusive,
                    expires_ms: expiry(now, pttl),
                    holder,
                }]
            }
        };
        Ok((KeyState { fence: uint(counter).unwrap_or(0), holds, queue: Vec::new(), count: 0 }, now))
    }
}
