//! Key and channel names, in Redisson's naming (`RedissonObject.prefixName` /
//! `suffixName`): every key of one primitive carries the name's `{…}` hash tag, so they
//! all live in one Redis Cluster slot. docs/redis-layout.md lists them.

use crate::error::{Error, Result};
use crate::key::{Family, Key};

/// Redisson's hash tag around `name` (`{`, `}`), or nothing when `name` already has a `{`:
/// the one rule of `prefixName` and `suffixName`. The parts are joined with `concat` (one
/// exact allocation; the names are built on every call).
fn tag(name: &str) -> [&str; 3] {
    if name.contains('{') { ["", name, ""] } else { ["{", name, "}"] }
}

/// `prefixName(p, n)`: `p:{n}`, or `p:n` when `n` already has a `{`.
pub(super) fn prefix_name(prefix: &str, name: &str) -> String {
    let [open, name, close] = tag(name);
    [prefix, ":", open, name, close].concat()
}

/// `suffixName(n, s)`: `{n}:s`, or `n:s` when `n` already has a `{`.
pub(super) fn suffix_name(name: &str, suffix: &str) -> String {
    let [open, name, close] = tag(name);
    [open, name, close, ":", suffix].concat()
}

/// What `suffixName` puts before `:suffix` (`{n}`, or `n` when it has a `{`): the
/// read-write lock's per-hold timeout keys are `base:<field>:rwlock_timeout:<k>`.
pub(super) fn suffix_base(name: &str) -> String {
    tag(name).concat()
}

/// The prefixes of the keys a name owns besides its own (`prefix_name`).
const OWNED_PREFIXES: [&str; 5] = [
    "redisson_lock_token:",
    "redisson_lock_queue:",
    "redisson_lock_timeout:",
    "baton_rwlock_queue:",
    "baton_rwlock_timeout:",
];

/// Refuses a Redis name that is another name's key: a counter, queue, side hash or timeout
/// key (`prefix_name`/`suffix_name` of some name), or, for a lock, another kind's
/// `kind:` key (`typed`: the other kinds are namespaced). Taking one would break that
/// name's primitive (a hash where its counter should be, say).
pub(super) fn check_not_owned(n: &str, family: Family, typed: bool) -> Result<()> {
    let suffixed =
        n.contains('{') && (n.ends_with(":baton") || n.ends_with(":timeout") || n.contains(":rwlock_timeout:"));
    let other_kind = typed
        && family == Family::Lock
        && [Family::RwLock, Family::Semaphore, Family::Latch]
            .iter()
            .any(|f| n.strip_prefix(f.as_str()).is_some_and(|r| r.starts_with(':')));
    if suffixed || other_kind || OWNED_PREFIXES.iter().any(|p| n.starts_with(p)) {
        return Err(Error::invalid_argument(format!(
            "`{n}` is a key another name's primitive keeps on Redis (docs/redis-layout.md); choose another name"
        )));
    }
    Ok(())
}

/// Redisson's fencing counter (`RFencedLock`); baton's token counter for every
/// primitive of the name.
pub(super) fn token_counter(name: &str) -> String {
    prefix_name("redisson_lock_token", name)
}

/// baton's own hash of the name (`t:<holder>` → the token of that holder's grant), a key
/// Redisson never reads.
pub(super) fn meta(name: &str) -> String {
    suffix_name(name, "baton")
}

/// `RCountDownLatch`'s channel: literal braces around the raw name, no colon.
pub(super) fn latch_channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// The Redis name of `key`: a lock's (and fair lock's) name as is, as Redisson's
/// `getLock(name)` has it; the other kinds under `rwlock:`, `semaphore:` and `latch:`, so
/// that one name serves every kind of primitive as on the other stores (Redisson's
/// objects of different kinds on one name would overwrite each other). `bare`
/// (`?names=bare`) drops those prefixes: Redisson's exact names for every kind, one kind
/// per name.
pub(super) fn redis_name(key: &Key, bare: bool) -> String {
    match key.family {
        Family::Lock => key.name.clone(),
        _ if bare => key.name.clone(),
        f => format!("{}:{}", f.as_str(), key.name),
    }
}

/// The channel every waiter of a `family` object called `name` (its Redis name) listens
/// on (fair-lock waiters listen on their own).
pub(super) fn channel(family: Family, name: &str) -> String {
    match family {
        Family::Lock => prefix_name("redisson_lock__channel", name),
        Family::RwLock => prefix_name("redisson_rwlock", name),
        Family::Semaphore => prefix_name("redisson_sc", name),
        Family::Latch => latch_channel(name),
        Family::Election => prefix_name("baton_election", name),
    }
}

/// The first zset member of a permit holder: a permit id of 32 hex digits is stored as
/// its 16 raw bytes, as `RPermitExpirableSemaphore` stores ids (so Redisson can release
/// it by id); any other holder (a semaphore's `uuid:n` owner) as `holder/1`. Further
/// permits of one holder are `holder/2`, `holder/3`, …
pub(super) fn first_member(holder: &str) -> Vec<u8> {
    match permit_id_bytes(holder) {
        Some(b) => b.to_vec(),
        None => format!("{holder}/1").into_bytes(),
    }
}

/// Whether `holder` is a permit id (32 hex digits), not a semaphore holder.
pub(super) fn is_permit_id(holder: &str) -> bool {
    permit_id_bytes(holder).is_some()
}

/// The 16 bytes of a 32-hex-digit permit id.
fn permit_id_bytes(id: &str) -> Option<[u8; 16]> {
    if id.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in id.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

/// The canonical form of a semaphore holder id (permit ids in lower case, as the member
/// they are stored as reads back).
pub(super) fn canonical_holder(holder: &str) -> String {
    if permit_id_bytes(holder).is_some() { holder.to_ascii_lowercase() } else { holder.to_owned() }
}

/// The holder a permit member belongs to (the inverse of the member naming).
pub(super) fn member_holder(member: &[u8]) -> String {
    if member.len() == 16 {
        return member.iter().map(|b| format!("{b:02x}")).collect();
    }
    let s = String::from_utf8_lossy(member);
    match s.rsplit_once('/') {
        Some((holder, n)) if !holder.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            holder.to_owned()
        }
        _ => s.into_owned(),
    }
}

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its `{tag}` if it has a
/// non-empty one, else of the whole key, mod 16384.
pub(super) fn slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|b| *b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|b| *b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    let mut crc: u16 = 0;
    for b in hashed {
        crc ^= u16::from(*b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc % 16384
}

/// Refuses, for a cluster, `key` whose Redis name `name` would put its keys in several
/// slots (a `{` or `}` without a non-empty `{tag}`), before any script runs into
/// `CROSSSLOT`.
pub(super) fn check_cluster_safe(key: &Key, name: &str) -> Result<()> {
    if cluster_safe(name) {
        return Ok(());
    }
    Err(Error::invalid_argument(format!(
        "{key} cannot be used on Redis Cluster: a name with `{{` or `}}` needs a non-empty `{{tag}}` so that all its \
         keys share one hash slot"
    )))
}

/// Whether every key of the primitive named `name` (its Redis name) shares one slot:
/// true without braces (the others carry `{name}`), or with a non-empty `{tag}` (which all
/// of them keep).
fn cluster_safe(name: &str) -> bool {
    let b = name.as_bytes();
    match b.iter().position(|c| *c == b'{') {
        None => !b.contains(&b'}'),
        Some(open) => matches!(b[open + 1..].iter().position(|c| *c == b'}'), Some(len) if len > 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redis::layout::lock::LockKeys;
    use crate::store::redis::layout::semaphore::SemKeys;

    #[test]
    fn redisson_naming() {
        assert_eq!(prefix_name("redisson_lock__channel", "a"), "redisson_lock__channel:{a}");
        assert_eq!(prefix_name("redisson_lock__channel", "x{t}y"), "redisson_lock__channel:x{t}y");
        assert_eq!(suffix_name("a", "timeout"), "{a}:timeout");
        assert_eq!(suffix_name("x{t}y", "timeout"), "x{t}y:timeout");
        assert_eq!(latch_channel("a"), "redisson_countdownlatch__channel__{a}");
        let k = LockKeys::new("jobs");
        assert_eq!(
            (k.queue.as_str(), k.timeouts.as_str(), k.counter.as_str(), k.meta.as_str()),
            (
                "redisson_lock_queue:{jobs}",
                "redisson_lock_timeout:{jobs}",
                "redisson_lock_token:{jobs}",
                "{jobs}:baton"
            )
        );
    }

    #[test]
    fn permit_members_round_trip() {
        let id = "0123456789abcdef0123456789ABCDEF";
        let m = first_member(id);
        assert_eq!(m.len(), 16);
        assert_eq!(member_holder(&m), id.to_ascii_lowercase());
        assert_eq!(canonical_holder(id), id.to_ascii_lowercase());
        let owner = "5f0c1d2e-0000-4000-8000-000000000000:7";
        assert_eq!(first_member(owner), format!("{owner}/1").into_bytes());
        assert_eq!(member_holder(format!("{owner}/12").as_bytes()), owner);
        assert_eq!(member_holder(b"odd"), "odd");
    }

    #[test]
    fn cluster_slots() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"123456789"), 12739);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        for name in ["jobs", "a/b:c", "x{t}y", "{t}"] {
            assert!(cluster_safe(name), "{name}");
            let k = LockKeys::new(name);
            let s = slot(name.as_bytes());
            for other in [&k.queue, &k.timeouts, &k.counter, &k.meta] {
                assert_eq!(slot(other.as_bytes()), s, "{name}: {other}");
            }
            assert_eq!(slot(SemKeys::new(name).permits.as_bytes()), s, "{name}");
        }
        for name in ["a{b", "a}b", "x{}y"] {
            assert!(!cluster_safe(name), "{name}");
        }
    }

    #[test]
    fn kinds_are_namespaced_unless_bare() {
        let key = |family| Key { family, name: "x".to_owned() };
        assert_eq!(redis_name(&key(Family::Lock), false), "x");
        assert_eq!(redis_name(&key(Family::RwLock), false), "rwlock:x");
        assert_eq!(redis_name(&key(Family::Semaphore), false), "semaphore:x");
        assert_eq!(redis_name(&key(Family::Latch), false), "latch:x");
        assert_eq!(redis_name(&key(Family::Semaphore), true), "x");
        assert_eq!(channel(Family::Semaphore, "semaphore:x"), "redisson_sc:{semaphore:x}");
    }
}
