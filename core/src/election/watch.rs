//! `LeaderWatch`: the changes of an election's leader, read as the store announces them.

use std::sync::Arc;
use std::time::Duration;

use super::LeaderInfo;
use crate::engine::Ctx;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::rt::Instant;
use crate::store::Subscription;

/// Re-reads at least this often even when the store says nothing (a lost notification):
/// a safety net, not the way changes arrive.
const RECHECK: Duration = Duration::from_secs(2);

/// The leader changes of one election ([`super::Election::observe`]): each call of
/// [`LeaderWatch::next`] returns the next leader or proclaimed value that differs from
/// the last one returned, the first call the current leader. The listening starts before
/// the first read, so no change after it is missed.
#[derive(Debug)]
pub struct LeaderWatch {
    ctx: Arc<Ctx>,
    key: std::result::Result<Key, Error>,
    name: String,
    sub: Option<SubBox>,
    last: Option<LeaderInfo>,
}

/// A subscription, wrapped so `LeaderWatch` can derive `Debug`.
struct SubBox(Box<dyn Subscription>);

impl std::fmt::Debug for SubBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

impl LeaderWatch {
    pub(super) fn new(ctx: Arc<Ctx>, key: std::result::Result<Key, Error>, name: &str) -> LeaderWatch {
        LeaderWatch { ctx, key, name: name.to_owned(), sub: None, last: None }
    }

    /// Waits for the next leader change (the current leader on the first call).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name, `Closed` once the client closed,
    /// `Connection`/`Backend` from the store (the watch may be read again after one).
    ///
    /// # Cancel safety
    /// Cancel-safe: a dropped call loses nothing; the next call reports what changed.
    pub async fn next(&mut self) -> Result<LeaderInfo> {
        let key = self.key.as_ref().map_err(Clone::clone)?.clone();
        loop {
            self.ctx.check_open()?;
            if self.sub.is_none() {
                // Before the read, so a change between the read and the wait still wakes it.
                self.sub = Some(SubBox(self.ctx.store.subscribe(&key).await?));
            }
            let now = super::leader(&self.ctx, &key, &self.name).await;
            let now = match now {
                Ok(n) => n,
                Err(e) => {
                    self.sub = None;
                    return Err(e);
                }
            };
            if let Some(info) = now
                && self.last.as_ref() != Some(&info)
            {
                self.last = Some(info.clone());
                return Ok(info);
            }
            if let Some(SubBox(sub)) = self.sub.as_mut()
                && sub.changed(Instant::now() + RECHECK).await.is_err()
            {
                self.sub = None;
            }
        }
    }

    /// The last leader returned by [`LeaderWatch::next`], if any.
    pub fn last(&self) -> Option<&LeaderInfo> {
        self.last.as_ref()
    }
}
