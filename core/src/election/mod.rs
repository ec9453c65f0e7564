//! Leader election: one leader at a time per name, whose **term is a fencing token**
//! (rising with every new leader), so a deposed leader's writes through `fence()` are
//! refused. Built on the engine as the locks are: a campaign is a fair acquire of the
//! election's key whose grant records the proposal beside the hold; `proclaim` rewrites
//! it guarded by the hold; `observe` follows the store's notifications.

mod leadership;
mod watch;

pub use leadership::Leadership;
pub use watch::LeaderWatch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::engine::{self, Ctx, Slot, Wait};
use crate::error::{Error, Result};
use crate::key::{Family, Key};
use crate::options::LockOptions;
use crate::state::Mode;
use crate::token::FencingToken;

/// Longest proposal (and proclaimed value) accepted, in bytes of UTF-8: small enough for
/// every store's record (a ZooKeeper node, an etcd value, a SQL row, a Redis string).
pub const MAX_PROPOSAL_BYTES: usize = 4096;

/// Checks a proposal or proclaimed value: 1..=4096 bytes of UTF-8, no NUL byte.
pub(crate) fn validate_proposal(what: &str, value: &str) -> Result<()> {
    crate::name::validate_text(what, value, MAX_PROPOSAL_BYTES)
}

/// Who leads an election: what `Election::leader` and `Election::observe` report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderInfo {
    /// The election's name.
    pub name: String,
    /// The value the leader campaigned with or last proclaimed.
    pub proposal: String,
    /// The leader's term: the fencing token of its grant.
    pub term: FencingToken,
    /// The leader's holder id (`{client uuid}:{n}`, or the caller-given owner).
    pub holder: String,
}

/// An election handle: campaign for leadership, ask who leads, observe changes.
/// Cheap to clone; one campaign (or leadership) at a time per handle and its clones.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let election = client.election("scheduler");
/// let leadership = election.campaign("node-a").await?;
/// assert_eq!(election.leader().await?.unwrap().proposal, "node-a");
/// leadership.proclaim("node-a:v2").await?;
/// assert_eq!(election.leader().await?.unwrap().term, leadership.term());
/// leadership.resign().await?;
/// assert!(election.leader().await?.is_none());
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    ctx: Arc<Ctx>,
    name: String,
    key: std::result::Result<Key, Error>,
    options: LockOptions,
    /// Set while a campaign of this handle waits or its leadership lasts.
    busy: Arc<AtomicBool>,
}

/// Clears the handle's "campaigning" mark when the campaign or leadership ends.
#[derive(Debug)]
pub(crate) struct Campaigning(Arc<AtomicBool>);

impl Drop for Campaigning {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Election {
    pub(crate) fn new(ctx: &Arc<Ctx>, name: &str, options: LockOptions) -> Election {
        Election {
            ctx: ctx.clone(),
            name: name.to_owned(),
            key: ctx.key(Family::Election, name),
            options,
            busy: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn key(&self) -> Result<&Key> {
        self.key.as_ref().map_err(Clone::clone)
    }

    /// Waits until this candidate leads, with `proposal` as its value.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name, proposal or options, or a second campaign on one
    /// handle; `Closed`; `Connection`/`Backend`/`Unsupported` from the store.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future leaves no candidate and no hold behind.
    pub async fn campaign(&self, proposal: &str) -> Result<Leadership> {
        self.run(proposal, Wait::Until(None)).await?.ok_or_else(|| self.timed_out())
    }

    /// Waits at most `timeout`.
    ///
    /// # Errors
    /// `Timeout` when not elected in time; otherwise as [`Self::campaign`].
    pub async fn campaign_timeout(&self, proposal: &str, timeout: Duration) -> Result<Leadership> {
        self.run(proposal, Wait::timeout(timeout)?).await?.ok_or_else(|| self.timed_out())
    }

    /// One attempt: `Ok(None)` when another candidate leads (or waits ahead).
    ///
    /// # Errors
    /// As [`Self::campaign`].
    pub async fn try_campaign(&self, proposal: &str) -> Result<Option<Leadership>> {
        self.run(proposal, Wait::No).await
    }

    fn timed_out(&self) -> Error {
        Error::timeout(format!("timed out campaigning in election `{}`", self.name))
    }

    async fn run(&self, proposal: &str, wait: Wait) -> Result<Option<Leadership>> {
        let mut spec = crate::lock::spec(&self.ctx, Family::Election, &self.name, &self.options, Mode::Fair, "")?;
        validate_proposal("proposal", proposal)?;
        spec.value = Some(proposal.to_owned());
        if self.busy.swap(true, Ordering::SeqCst) {
            return Err(Error::invalid_argument(format!(
                "election `{}`: this handle is already campaigning or leading; resign first, or campaign on \
                 another handle",
                self.name
            )));
        }
        let busy = Campaigning(self.busy.clone());
        let grant = engine::acquire(&Slot::new(spec), wait).await?;
        Ok(grant.map(|g| Leadership::new(g, &self.name, proposal, busy)))
    }

    /// Who leads now, `None` when nobody does.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name, `Closed`, `Connection`/`Backend` from the store.
    pub async fn leader(&self) -> Result<Option<LeaderInfo>> {
        leader(&self.ctx, self.key()?, &self.name).await
    }

    /// Every change of leader or proclaimed value, in order, starting with the current
    /// leader (when there is one). Changes between two reads of a slow reader may be
    /// seen as their last state only.
    pub fn observe(&self) -> LeaderWatch {
        LeaderWatch::new(self.ctx.clone(), self.key.clone(), &self.name)
    }
}

/// The leader of `key`: the store lists it first among the holders.
pub(crate) async fn leader(ctx: &Ctx, key: &Key, name: &str) -> Result<Option<LeaderInfo>> {
    let info = ctx.inspect(key).await?;
    Ok(info.holders.into_iter().next().map(|h| LeaderInfo {
        name: name.to_owned(),
        proposal: h.value.unwrap_or_default(),
        term: h.token,
        holder: h.owner,
    }))
}
