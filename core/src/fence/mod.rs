//! Fenced writes at the protected resource: a write carrying a fencing token that the
//! resource's own store rejects once it has seen a larger token (Kleppmann's fencing). A
//! holder paused past its lease (GC, SIGSTOP, a slow disk) wakes up with an old token;
//! its late write is refused by the store itself, not by a check in the client that a
//! paused client could not run in time.
//!
//! Two forms:
//! - a key/value write on any store baton connects to that can compare and write in one
//!   atomic step ([`Fence::write`]): Redis (one Lua script over a hash `KEY {value, fence}`),
//!   etcd (a txn guarded on the fence key's revision), SQL (a guarded `UPDATE` of the table
//!   `baton_fence`), `memory://`;
//! - the user's own SQL `UPDATE`, rewritten to carry the guard ([`fenced_update`]) and run
//!   by the caller's driver or by [`Fence::execute`].
//!
//! A write is taken when its token is at least the largest one seen: a token equal to the
//! last one is the same grant writing again (tokens of fresh grants are unique), so one
//! holder may write many times, and every later grant shuts it out.

mod sql;

use std::sync::Arc;

pub use self::sql::fenced_update;
use crate::engine::Ctx;
use crate::error::{Error, Result};
use crate::key::Family;
use crate::store::FenceOps;
use crate::token::FencingToken;

/// A value written through a [`Fence`], with the token of the write that put it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    /// The value.
    pub value: String,
    /// The token its writer held.
    pub token: FencingToken,
}

/// Fenced writes on a client's store (see [`Client::fence`](crate::client::Client::fence)): the
/// store itself rejects a write whose token is below one it has seen for the key.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = baton::Client::connect("memory://").await?;
/// let fence = client.fence();
/// let old = client.lock("stock").acquire().await?;
/// let t1 = old.token();
/// old.release().await?;                                      // (or its lease ran out)
/// let new = client.lock("stock").acquire().await?;
/// assert!(fence.write("stock", "4", new.token()).await?);     // the new holder writes
/// assert!(!fence.write("stock", "9", t1).await?);             // the old one is refused
/// assert_eq!(fence.read("stock").await?.unwrap().value, "4");
/// # Ok::<(), baton::Error>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Fence {
    ctx: Arc<Ctx>,
}

impl Fence {
    pub(crate) fn new(ctx: Arc<Ctx>) -> Fence {
        Fence { ctx }
    }

    fn ops(&self) -> Result<&dyn FenceOps> {
        self.ctx.check_open()?;
        self.ctx.store.fence().ok_or_else(|| {
            Error::unsupported(format!(
                "fenced writes need a store that compares and writes in one step (redis, etcd, zk, SQL, memory); \
                 `{}://` is not one: write to the resource's own store",
                self.ctx.url.scheme()
            ))
        })
    }

    /// Writes `value` under `key` unless the store has seen a larger token for `key`.
    /// `true`: written; `false`: refused, a later holder has written.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad key (the rules of lock names), `Unsupported` on a store
    /// without fenced writes, `Connection`/`Backend` from the store (a Redis key of another
    /// type, say).
    pub async fn write(&self, key: &str, value: &str, token: FencingToken) -> Result<bool> {
        let key = self.ctx.key(Family::Lock, key)?;
        let ops = self.ops()?;
        self.ctx.closed_or(ops.write(&key.name, value, token.get()).await)
    }

    /// The value under `key` and the token of the write that put it there.
    ///
    /// # Errors
    /// As [`Fence::write`].
    pub async fn read(&self, key: &str) -> Result<Option<Fenced>> {
        let key = self.ctx.key(Family::Lock, key)?;
        let ops = self.ops()?;
        let got = self.ctx.closed_or(ops.read(&key.name).await)?;
        Ok(got.map(|(value, t)| Fenced { value, token: FencingToken::new(t) }))
    }

    /// Runs the caller's SQL `UPDATE` guarded by `token` (see [`fenced_update`]): the rows
    /// it changed, 0 when no row matched or a row's `fence` column holds a larger token.
    ///
    /// # Errors
    /// `InvalidArgument` for a statement [`fenced_update`] cannot guard, `Unsupported` on a
    /// store that is not SQL, `Backend` for the database's own errors.
    pub async fn execute(&self, statement: &str, token: FencingToken) -> Result<u64> {
        let sql = fenced_update(statement, token)?;
        let ops = self.ops()?;
        self.ctx.closed_or(ops.execute(&sql).await)
    }
}
