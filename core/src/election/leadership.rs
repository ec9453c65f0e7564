//! `Leadership`: a won campaign, a guard whose token is the term.

use std::sync::Mutex;

use super::{Campaigning, validate_proposal};
use crate::engine::Grant;
use crate::error::{Error, Result};
use crate::sync::LockExt;

/// Leadership of an election, held until [`Leadership::resign`], a drop (which resigns
/// in the background) or the lease's loss (the `lost` signal fires).
#[derive(Debug)]
#[must_use = "dropping a leadership resigns at once"]
pub struct Leadership {
    pub(crate) grant: Grant,
    name: String,
    proposal: Mutex<String>,
    _busy: Campaigning,
}

impl Leadership {
    pub(super) fn new(grant: Grant, name: &str, proposal: &str, busy: Campaigning) -> Leadership {
        Leadership { grant, name: name.to_owned(), proposal: Mutex::new(proposal.to_owned()), _busy: busy }
    }

    crate::lock::grant_methods!();

    /// The term: the fencing token of this leadership, above every earlier leader's.
    /// Pass it (or this leadership) to `fence()` so that writes of a deposed leader are
    /// refused.
    pub fn term(&self) -> crate::token::FencingToken {
        self.grant.token()
    }

    /// The election's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The holder id this leadership is held under.
    pub fn holder(&self) -> &str {
        self.grant.holder()
    }

    /// The value last proclaimed (the proposal until `proclaim`).
    pub fn proposal(&self) -> String {
        self.proposal.locked().clone()
    }

    /// Publishes a new value, only while still leader (one step guarded by the hold).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad value; `LockLost` when leadership was lost (the lost
    /// signal fires too); `Closed`; `Connection`/`Backend` from the store.
    pub async fn proclaim(&self, value: &str) -> Result<()> {
        validate_proposal("proclaimed value", value)?;
        if self.grant.lost_token().is_cancelled() {
            return Err(self.lost_error());
        }
        let spec = self.grant.spec();
        spec.ctx.check_open()?;
        let proclaimed = spec.ctx.closed_or(spec.ctx.store.proclaim(&spec.key, &spec.holder, value).await)?;
        if !proclaimed {
            self.grant.mark_lost();
            return Err(self.lost_error());
        }
        *self.proposal.locked() = value.to_owned();
        Ok(())
    }

    fn lost_error(&self) -> Error {
        Error::lock_lost(format!("no longer the leader of election `{}`: its lease was lost", self.name))
    }

    /// Gives up leadership: the next candidate may be elected at once.
    ///
    /// # Errors
    /// `LockLost` if leadership was lost before (another may lead meanwhile), `Closed`,
    /// `Connection`/`Backend` from the store.
    pub async fn resign(self) -> Result<()> {
        self.grant.release().await
    }
}
