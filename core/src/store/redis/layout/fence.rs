//! `redlock://`'s write-back of a grant's token to one node: the name's token counter
//! `redisson_lock_token:{N}` is a max-register (raised to `token`, never lowered), and the
//! holder's recorded token (`t:<holder>` in `{N}:baton`) becomes the quorum's. A `Lock` in
//! Redisson's layout keeps no record (its holder's token is the counter) until its node's
//! counter stands above the token (a late grant): then the record is written, with the
//! hold's ttl.

use super::super::conn::Conn;
use super::super::keys;
use super::Lua;
use crate::error::Result;
use crate::key::Family;

/// KEYS: counter, meta, and for a `Lock` its hash. ARGV: token, the holder's meta field
/// (`t:<holder>`), and for a `Lock` the holder.
pub(super) static RAISE: Lua = lua!("fence_raise");

/// Raises the counter of the `family` object with the Redis name `n` to `token` and
/// records it as `holder`'s. `lock_hash`: the name is a `Lock` in Redisson's layout.
pub(crate) async fn raise(c: &Conn, family: Family, n: &str, holder: &str, token: u64, lock_hash: bool) -> Result<()> {
    let holder = if family == Family::Semaphore { keys::canonical_holder(holder) } else { holder.to_owned() };
    let field = format!("t:{holder}");
    let (counter, meta) = (keys::token_counter(n), keys::meta(n));
    let token = token.to_string();
    let (keys, args): (&[&[u8]], &[&[u8]]) = if lock_hash {
        (&[counter.as_bytes(), meta.as_bytes(), n.as_bytes()], &[token.as_bytes(), field.as_bytes(), holder.as_bytes()])
    } else {
        (&[counter.as_bytes(), meta.as_bytes()], &[token.as_bytes(), field.as_bytes()])
    };
    c.eval(&RAISE, keys, args).await?;
    Ok(())
}
