//! RwLock as etcd's `contrib/recipes` RWMutex lays it out: `NAME/read/<holder id>` and
//! `NAME/write/<holder id>` keys (see `keyed` for values, leases and tokens), with the rules
//! of `crate::state` (every store's): readers share unless a writer holds or waits (a
//! waiting writer keeps new readers out: no writer starvation); the writer's own read side
//! may enter while it holds (downgrade), a reader may not upgrade; writers wait in
//! create-revision order, each with a key under a queue-ttl lease; readers wait without a
//! key (as in the state machine, they hold no queue place).

use async_trait::async_trait;

use super::keyed::{self, Blocker, Held, RACES, key_of, raced};
use super::local::Local;
use super::transport::{Compare, Transport};
use crate::error::{Error, Result};
use crate::inspect::Holder;
use crate::state::{Attempt, Mode, Request, read_holder_of};

/// The keys of one RwLock name.
#[derive(Debug, Clone)]
pub(crate) struct RwKeys {
    /// `NAME/read/`
    pub(crate) read: Vec<u8>,
    /// `NAME/write/`
    pub(crate) write: Vec<u8>,
    /// `baton/rwlock/NAME`: the last token released.
    pub(crate) fence: Vec<u8>,
}

impl RwKeys {
    pub(crate) fn new(name: &str) -> RwKeys {
        RwKeys {
            read: format!("{name}/read/").into_bytes(),
            write: format!("{name}/write/").into_bytes(),
            fence: format!("baton/rwlock/{name}").into_bytes(),
        }
    }

    /// The key a holder asking in `mode` owns.
    pub(crate) fn own(&self, holder: &str, write: bool) -> Vec<u8> {
        key_of(if write { &self.write } else { &self.read }, holder)
    }
}

/// Both sides of one name as one read saw them, and the recorded last token.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub(crate) reads: Vec<Held>,
    pub(crate) writes: Vec<Held>,
    pub(crate) fence: u64,
}

pub(crate) async fn view(t: &dyn Transport, keys: &RwKeys) -> Result<View> {
    let (mut all, fence, _) = keyed::read(t, &[&keys.read, &keys.write], &keys.fence).await?;
    let writes = all.pop().unwrap_or_default();
    let reads = all.pop().unwrap_or_default();
    Ok(View { reads, writes, fence })
}

/// What one attempt does, decided from one read (no I/O: unit-tested below).
#[derive(Debug)]
enum Plan {
    Reenter(Held),
    /// Create the holder's key granted, if these still hold.
    Create(Vec<Compare>),
    /// Grant the holder's waiting key.
    Promote(Held),
    /// Take a queue place (a writer).
    Enqueue,
    /// Busy; refresh the holder's queue place if it has one.
    Wait(Option<Held>),
}

fn plan(v: &View, keys: &RwKeys, req: &Request) -> Result<Plan> {
    let write = match &req.mode {
        Mode::Write => true,
        Mode::Read { .. } => false,
        other => return Err(Error::backend(format!("etcd: internal error: {other:?} on a read-write lock"))),
    };
    let (mine, theirs) = if write { (&v.writes, &v.reads) } else { (&v.reads, &v.writes) };
    if theirs.iter().any(|h| h.is(&req.holder) && h.granted()) {
        let mode = if write { "read" } else { "write" };
        return Err(Error::invalid_argument(format!("holder already holds this key in {mode} mode")));
    }
    let own = mine.iter().find(|h| h.is(&req.holder));
    if let Some(h) = own.filter(|h| h.granted()) {
        return Ok(Plan::Reenter(h.clone()));
    }
    if let Mode::Read { writer } = &req.mode {
        // Downgrade: the handle's own writer holds, so nobody else does.
        if let Some(w) = v.writes.iter().find(|h| h.is(writer) && h.granted()) {
            return Ok(Plan::Create(vec![
                Compare::create(&w.kv.key, w.kv.create_revision),
                Compare::modified(&w.kv.key, w.kv.mod_revision),
            ]));
        }
        // Any writer, holding or waiting, keeps new readers out.
        return Ok(if v.writes.is_empty() {
            Plan::Create(vec![Compare::none_under(&keys.write)])
        } else {
            Plan::Wait(None)
        });
    }
    if v.reads.iter().any(|h| h.granted() && h.is(read_holder_of(&req.holder))) {
        return Err(Error::invalid_argument(
            "cannot upgrade a read hold to a write hold (it would wait on itself); release the read lock first",
        ));
    }
    let mut others = v.reads.iter().chain(&v.writes).filter(|h| !h.is(&req.holder));
    match own {
        // Granted when everything else is a writer that queued after it.
        Some(o) => {
            let behind = |h: &Held| !h.granted() && h.create() > o.create() && v.writes.iter().any(|w| w.kv == h.kv);
            Ok(if others.all(behind) { Plan::Promote(o.clone()) } else { Plan::Wait(Some(o.clone())) })
        }
        None if others.next().is_none() => {
            Ok(Plan::Create(vec![Compare::none_under(&keys.read), Compare::none_under(&keys.write)]))
        }
        None if req.enqueue => Ok(Plan::Enqueue),
        None => Ok(Plan::Wait(None)),
    }
}

/// One acquire attempt (see `Store::acquire`).
pub(crate) async fn acquire(t: &dyn Transport, local: &Local, keys: &RwKeys, req: &Request) -> Result<Attempt> {
    let write = req.mode == Mode::Write;
    let key = keys.own(&req.holder, write);
    let lease = (req.lease_ms, req.watchdog);
    for _ in 0..RACES {
        let v = view(t, keys).await?;
        let out = match plan(&v, keys, req)? {
            Plan::Reenter(h) => keyed::reenter(t, &h).await?,
            Plan::Create(guards) => keyed::create(t, local, &key, (&req.holder, 1, None), lease, guards)
                .await?
                .map(|token| Attempt::Granted { token, count: 1, fresh: true }),
            Plan::Promote(h) => keyed::promote(t, local, &keys.write, &h, lease).await?,
            Plan::Enqueue => {
                // Queued behind what the read found. Nothing is read again: the engine
                // subscribes and attempts once more right after a first busy answer, and
                // that attempt promotes this writer if the others left meanwhile.
                match keyed::enqueue(t, local, &keys.write, &req.holder, req.queue_ttl_ms).await? {
                    true => Some(Attempt::Busy { retry_ms: None }),
                    false => None,
                }
            }
            Plan::Wait(own) => {
                if let Some(h) = own.filter(|_| req.enqueue) {
                    keyed::refresh(t, &h).await?;
                }
                Some(Attempt::Busy { retry_ms: None })
            }
        };
        if let Some(a) = out {
            return Ok(a);
        }
    }
    Err(raced())
}

/// Holders (readers, or the writer and its own readers) and waiting writers, in order.
pub(crate) async fn describe(t: &dyn Transport, v: &View) -> Result<(Vec<Holder>, Vec<String>)> {
    let reads = v.reads.iter().filter(|h| h.granted()).map(|h| (h, "read"));
    let writes = v.writes.iter().filter(|h| h.granted()).map(|h| (h, "write"));
    let holders = keyed::holders(t, reads.chain(writes)).await?;
    let waiters = v.writes.iter().filter(|h| !h.granted()).map(Held::owner).collect();
    Ok((holders, waiters))
}

/// What a waiter of `req` (or, with none, anyone) waits on: the blocking key with the
/// highest create revision, as the recipe's waiters do. For a reader, that is the last
/// writer in line (readers wait for every writer); for a writer, the last key that is a
/// hold or queued before it. Only a deletion wakes: a writer's promotion lets nobody in.
pub(crate) struct RwBlocker {
    pub(crate) keys: RwKeys,
    pub(crate) req: Option<Request>,
}

#[async_trait]
impl Blocker for RwBlocker {
    async fn blocking(&self, t: &dyn Transport) -> Result<Option<(Vec<u8>, bool)>> {
        let v = view(t, &self.keys).await?;
        let last = match &self.req {
            Some(r) if matches!(r.mode, Mode::Read { .. }) => v.writes.iter().max_by_key(|h| h.create()),
            Some(r) => {
                let own = v.writes.iter().find(|h| h.is(&r.holder)).map_or(i64::MAX, Held::create);
                let all = v.reads.iter().chain(&v.writes).filter(|h| !h.is(&r.holder));
                all.filter(|h| h.granted() || h.create() < own).max_by_key(|h| h.create())
            }
            None => v.reads.iter().chain(&v.writes).max_by_key(|h| h.create()),
        };
        Ok(last.map(|h| (h.kv.key.clone(), true)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::keyed::test_held as held;
    use super::*;

    fn req(holder: &str, mode: Mode) -> Request {
        Request {
            holder: holder.into(),
            mode,
            lease_ms: 1000,
            enqueue: true,
            queue_ttl_ms: 5000,
            watchdog: true,
            shared: false,
            token_floor: None,
            value: None,
        }
    }

    fn read(h: &str) -> Request {
        req(h, Mode::Read { writer: format!("{h}:write") })
    }

    #[test]
    fn readers_share_writers_queue_and_block_readers() {
        let k = RwKeys::new("n");
        let mut v = View::default();
        assert!(matches!(plan(&v, &k, &read("a")).unwrap(), Plan::Create(_)));
        v.reads.push(held(&k.read, "a", 1, 10));
        assert!(matches!(plan(&v, &k, &read("b")).unwrap(), Plan::Create(_)));
        assert!(matches!(plan(&v, &k, &read("a")).unwrap(), Plan::Reenter(_)));
        assert!(matches!(plan(&v, &k, &req("w:write", Mode::Write)).unwrap(), Plan::Enqueue));
        let mut try_w = req("w:write", Mode::Write);
        try_w.enqueue = false;
        assert!(matches!(plan(&v, &k, &try_w).unwrap(), Plan::Wait(None)));
        v.writes.push(held(&k.write, "w:write", 0, 11));
        // A queued writer keeps new readers out, and waits for the reader.
        assert!(matches!(plan(&v, &k, &read("b")).unwrap(), Plan::Wait(None)));
        assert!(matches!(plan(&v, &k, &req("w:write", Mode::Write)).unwrap(), Plan::Wait(Some(_))));
        v.writes.push(held(&k.write, "x:write", 0, 12));
        v.reads.clear();
        assert!(matches!(plan(&v, &k, &req("w:write", Mode::Write)).unwrap(), Plan::Promote(_)));
        assert!(matches!(plan(&v, &k, &req("x:write", Mode::Write)).unwrap(), Plan::Wait(Some(_))));
    }

    #[test]
    fn downgrade_but_no_upgrade() {
        let k = RwKeys::new("n");
        let mut v = View::default();
        v.writes.push(held(&k.write, "a:write", 1, 10));
        assert!(matches!(plan(&v, &k, &read("a")).unwrap(), Plan::Create(g) if g.len() == 2));
        assert!(matches!(plan(&v, &k, &read("b")).unwrap(), Plan::Wait(None)));
        v.reads.push(held(&k.read, "a", 1, 11));
        // The writer left; a later writer waits for the downgraded reader.
        v.writes.clear();
        v.writes.push(held(&k.write, "b:write", 0, 12));
        assert!(matches!(plan(&v, &k, &req("b:write", Mode::Write)).unwrap(), Plan::Wait(Some(_))));
        let e = plan(&v, &k, &req("a:write", Mode::Write)).unwrap_err();
        assert!(e.message().contains("upgrade"), "{e}");
        let mut same = v.reads[0].clone();
        same.kv.key = key_of(&k.write, "a");
        v.writes.push(same);
        let e = plan(&v, &k, &req("a", Mode::Write)).unwrap_err();
        assert!(e.message().contains("read mode"), "{e}");
    }
}
