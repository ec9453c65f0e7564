//! `?semaphore=rsemaphore`: `Semaphore` in the exact form of Redisson's `RSemaphore` — the
//! bare counter `N` (`DECRBY` to take, `INCRBY` + the new count on `redisson_sc:{N}` to
//! give back), so Redisson's `RSemaphore` and baton share permits. The gap this form
//! cannot close (docs/redis-layout.md): a permit has no lease in Redis, so the permits of
//! a holder that crashed never come back by themselves. `PermitSemaphore` (ids) keeps
//! `RPermitExpirableSemaphore`'s leased layout under either option.

use std::time::Duration;

use redis::Cmd;

use super::keys::{self, SemKeys};
use super::scripts::SCRIPTS;
use super::{Redis, bytes_u64, evalsha, items, pairs};
use crate::error::Result;
use crate::key::{Family, Key};
use crate::state::{Attempt, Hold, HoldMode, KeyState, Mode, Released, Request};

impl Redis {
    /// Whether `holder`'s permits of `key` live on the bare counter.
    pub(super) fn bare_counter(&self, key: &Key, holder: &str) -> bool {
        self.rsemaphore && key.family == Family::Semaphore && !keys::is_permit_id(holder)
    }

    pub(super) async fn rsem_acquire(&self, key: &Key, req: &Request) -> Result<Attempt> {
        let Mode::Permits { count, limit } = req.mode else {
            return Err(crate::error::Error::backend(format!("internal error: {:?} on a semaphore", req.mode)));
        };
        let k = SemKeys::new(&self.name(key));
        let v = self
            .eval(
                &SCRIPTS.rsem_acquire,
                &[k.count.as_bytes(), k.counter.as_bytes(), k.meta.as_bytes()],
                &[req.holder.as_bytes(), count.to_string().as_bytes(), limit.to_string().as_bytes()],
            )
            .await?;
        self.attempt("acquire", &v)
    }

    pub(super) async fn rsem_release(&self, key: &Key, holder: &str, count: u32) -> Result<Released> {
        let k = SemKeys::new(&self.name(key));
        let c = super::count_arg(count).to_string();
        let v = self
            .eval(
                &SCRIPTS.rsem_release,
                &[k.count.as_bytes(), k.meta.as_bytes()],
                &[holder.as_bytes(), c.as_bytes(), k.channel.as_bytes()],
            )
            .await?;
        self.released(&v, count)
    }

    /// Nothing to extend on a bare counter: true while the holder's permits are recorded.
    pub(super) fn rsem_renew_call(&self, key: &Key, holder: &str, _lease: Duration) -> Cmd {
        let k = SemKeys::new(&self.name(key));
        evalsha(&SCRIPTS.rsem_renew, &[k.meta.as_bytes()], &[holder.as_bytes()])
    }

    /// The holders recorded for the bare counter (no lease: they hold until released).
    pub(super) async fn rsem_holds(&self, key: &Key) -> Result<Vec<Hold>> {
        let k = SemKeys::new(&self.name(key));
        let v = self.eval(&SCRIPTS.rsem_inspect, &[k.counter.as_bytes(), k.meta.as_bytes()], &[]).await?;
        let bad = || self.reply_err("inspect", &v);
        let [_now, meta, _counter] = items(&v).ok_or_else(bad)? else {
            return Err(bad());
        };
        let meta = pairs(meta);
        let mut holds = Vec::new();
        for (field, count) in &meta {
            let Some(holder) = field.strip_prefix(b"p:") else { continue };
            let holder = String::from_utf8_lossy(holder).into_owned();
            let t = format!("t:{holder}");
            let token = meta.iter().find(|(f, _)| *f == t.as_bytes()).and_then(|(_, v)| bytes_u64(v)).unwrap_or(0);
            holds.push(Hold {
                count: bytes_u64(count).and_then(|c| u32::try_from(c).ok()).unwrap_or(0),
                token,
                mode: HoldMode::Permits,
                expires_ms: u64::MAX,
                holder,
            });
        }
        Ok(holds)
    }

    /// `inspect` of a semaphore under `?semaphore=rsemaphore`: the leased permits (ids)
    /// and the bare counter's holders.
    pub(super) async fn inspect_rsem(&self, key: &Key) -> Result<(KeyState, u64)> {
        let (mut state, now) = self.inspect_sem(key).await?;
        state.holds.extend(self.rsem_holds(key).await?);
        Ok((state, now))
    }
}
