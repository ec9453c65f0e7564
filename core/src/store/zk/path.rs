//! Names to znode paths, and the protected-mode names of contender nodes.
//!
//! A name `orders/42` is the znode `/orders/42`, as Curator's
//! `new InterProcessMutex(client, "/orders/42")`. Every baton name is valid (1–255 bytes,
//! no NUL), but not every one is a znode path, so one rule escapes the others: a name
//! that is not a valid znode path (ZooKeeper's `PathUtils.validatePath`: empty segments,
//! a leading or trailing `/`, `.` or `..` segments, control characters, U+D800–U+F8FF,
//! U+FFF0 and above, as the server checks UTF-16 units and refuses surrogate pairs), that lies under ZooKeeper's own `/zookeeper`, or that starts with `%`
//! is the single znode `/%/<name percent-encoded>` (every byte but `A–Z a–z 0–9 _ -` as
//! `%XX`). Direct names never start with `%`, so the two forms never meet.

use crate::error::{Error, Result};

/// Checks `p` (with its leading `/`) the way ZooKeeper's server does.
pub(crate) fn check(p: &str) -> Result<()> {
    let bad = |why: &str| Error::invalid_argument(format!("`{p}` is not a valid znode path: {why}"));
    let Some(rest) = p.strip_prefix('/') else { return Err(bad("it must start with `/`")) };
    if rest.is_empty() {
        return Err(bad("it names the root"));
    }
    for seg in rest.split('/') {
        match seg {
            "" => return Err(bad("empty segment (`//` or a trailing `/`)")),
            "." | ".." => return Err(bad("`.` and `..` segments are not allowed")),
            _ => {}
        }
    }
    if let Some(c) = p.chars().find(|c| {
        let u = *c as u32;
        u == 0
            || (0x01..=0x1f).contains(&u)
            || (0x7f..=0x9f).contains(&u)
            || (0xd800..=0xf8ff).contains(&u)
            || u >= 0xfff0
    }) {
        return Err(bad(&format!("character U+{:04X} is not allowed", c as u32)));
    }
    if rest == "zookeeper" || rest.starts_with("zookeeper/") {
        return Err(bad("`/zookeeper` is ZooKeeper's own tree"));
    }
    Ok(())
}

/// The znode of a name: `/NAME`, or its escaped form (see the module's rule).
pub(crate) fn of_name(name: &str) -> String {
    let p = format!("/{name}");
    if !name.starts_with('%') && check(&p).is_ok() {
        return p;
    }
    escaped(name)
}

/// The escaped znode of a name: one segment under `/%`, which no direct name reaches.
fn escaped(name: &str) -> String {
    let mut out = String::from("/%/");
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The children a name's znode has in the layouts besides other names' znodes: a
/// semaphore's leases and a latch's count (`leases.rs`, `latch.rs`).
const OWN_CHILDREN: [&str; 2] = ["leases", "latch"];

/// The znode of `name` (`of_name`), where no other name's layout has a node. A name with
/// a segment (after the first) that parses as a contender node is refused: `V/lock-0000000000`
/// would be a contender of `V`'s queue, and so would any name under it, as its parent is
/// made on the way. A name with a segment `leases` or `latch` (a semaphore's leases, a
/// latch's count: a name there would write that primitive's token record or count, or make
/// its node a container that ZooKeeper deletes once empty) takes the escaped form instead,
/// one segment under `/%`, so that such plain names (`jobs/latch`) stay usable. The first
/// segment is a child of the root, which is no name's node.
pub(crate) fn of_own_name(name: &str) -> Result<String> {
    let p = of_name(name);
    if p.starts_with("/%/") {
        return Ok(p);
    }
    // A lease node (`lease-<seq>`) is a contender only under `leases`, escaped already.
    let kinds = [Kind::Lock, Kind::Read, Kind::Write];
    let mut own_child = false;
    for seg in p.split('/').skip(2) {
        if OWN_CHILDREN.contains(&seg) {
            own_child = true;
        } else if let Some(n) = parse(seg, &kinds) {
            return Err(Error::invalid_argument(format!(
                "name `{name}` collides with ZooKeeper's lock layout: `{seg}` reads as a contender node \
                 (`{}<sequence>`) of the name before it (docs/zookeeper-layout.md); choose another name",
                n.kind.lock_name()
            )));
        }
    }
    Ok(if own_child { escaped(name) } else { p })
}

/// What a contender node is, by the lock name Curator gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `InterProcessMutex`: `lock-`.
    Lock,
    /// `InterProcessReadWriteLock`'s read side: `__READ__`.
    Read,
    /// Its write side: `__WRIT__`.
    Write,
    /// `InterProcessSemaphoreV2`'s leases: `lease-`.
    Lease,
}

impl Kind {
    pub(crate) fn lock_name(self) -> &'static str {
        match self {
            Kind::Lock => "lock-",
            Kind::Read => "__READ__",
            Kind::Write => "__WRIT__",
            Kind::Lease => "lease-",
        }
    }
}

/// The protected-mode id of a holder: Curator puts a random UUID per create in
/// `_c_<uuid>-`; baton derives it from the holder id (FNV-1a, 128 bits, in UUID form), so
/// that any process finds a holder's node by name alone, and an attempt whose `create`
/// reply was lost finds the node it made instead of leaving an orphan.
pub(crate) fn protected_id(holder: &str) -> String {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in holder.as_bytes() {
        h ^= u128::from(*b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
    }
    let x = format!("{h:032x}");
    format!("{}-{}-{}-{}-{}", &x[..8], &x[8..12], &x[12..16], &x[16..20], &x[20..])
}

/// The path a holder creates (the server appends the 10-digit sequence).
pub(crate) fn create_path(dir: &str, holder: &str, kind: Kind) -> String {
    format!("{dir}/_c_{}-{}", protected_id(holder), kind.lock_name())
}

/// One contender node, parsed from its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// The protected-mode id, when the node has one.
    pub(crate) id: Option<String>,
    pub(crate) seq: i64,
}

/// Parses a child name of one of `kinds` (Curator's `standardFixForSorting`: what follows
/// the lock name is the sequence); other children are not contenders.
pub(crate) fn parse(name: &str, kinds: &[Kind]) -> Option<Node> {
    for &kind in kinds {
        let ln = kind.lock_name();
        let Some(i) = name.rfind(ln) else { continue };
        let digits = &name[i + ln.len()..];
        if digits.len() < 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let seq = digits.parse::<i64>().ok()?;
        let head = &name[..i];
        let id = head.strip_prefix("_c_").and_then(|r| r.strip_suffix('-')).map(str::to_owned);
        return Some(Node { name: name.to_owned(), kind, id, seq });
    }
    None
}

/// The contenders among `children`, in sequence order.
pub(crate) fn contenders(children: &[String], kinds: &[Kind]) -> Vec<Node> {
    let mut out: Vec<Node> = children.iter().filter_map(|c| parse(c, kinds)).collect();
    out.sort_by_key(|n| n.seq);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_paths_or_are_escaped() {
        assert_eq!(of_name("orders/42"), "/orders/42");
        assert_eq!(of_name("ключ/é"), "/ключ/é");
        assert_eq!(of_name("🔒"), "/%/%F0%9F%94%92");
        assert_eq!(of_name("zookeeperx"), "/zookeeperx");
        let odd =
            ["a//b", "a/", "/a", "a/./b", "..", "a\u{1}b", "zookeeper", "zookeeper/quota", "a\u{fff5}", "%41", "A"];
        let paths: Vec<String> = odd.iter().map(|n| of_name(n)).collect();
        assert_eq!(paths[0], "/%/a%2F%2Fb");
        assert_eq!(paths[4], "/%/%2E%2E");
        for p in &paths {
            assert!(check(p).is_ok(), "{p}");
        }
        let distinct: std::collections::HashSet<_> = paths.iter().collect();
        assert_eq!(distinct.len(), paths.len());
    }

    #[test]
    fn names_of_layout_nodes_are_refused() {
        let id = protected_id("h");
        for bad in [
            "v/lock-0000000000".to_owned(),
            format!("v/_c_{id}-lock-0000000012"),
            "v/__READ__0000000001".to_owned(),
            "v/w/__WRIT__0000000001/x".to_owned(),
            "v/latch/lock-0000000001".to_owned(),
        ] {
            let e = of_own_name(&bad).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument, "{bad}");
            assert!(e.to_string().contains(&bad), "{e}");
        }
        for good in [
            "leases",
            "latch",
            "lock-0000000000",
            "v/lock-1",
            "v/latchkey",
            "v//leases",
            "%/latch",
            "v/release-2024010100",
        ] {
            assert_eq!(of_own_name(good).unwrap(), of_name(good), "{good}");
        }
        // Under another name's own nodes: escaped, one segment under `/%`.
        for own in ["v/leases", "v/latch/x", "v/leases/lease-0000000001", "jobs/latch"] {
            let p = of_own_name(own).unwrap();
            assert!(p.starts_with("/%/") && p.matches('/').count() == 2, "{own}: {p}");
        }
    }

    #[test]
    fn parses_curator_names_in_sequence_order() {
        let id = protected_id("h");
        assert_eq!(id.len(), 36);
        assert_eq!(id, protected_id("h"));
        assert_ne!(id, protected_id("h2"));
        let kids = vec![
            format!("_c_{id}-lock-0000000007"),
            "lock-0000000003".to_owned(),
            "leases".to_owned(),
            format!("_c_{id}-__READ__0000000005"),
        ];
        let ns = contenders(&kids, &[Kind::Lock]);
        assert_eq!(ns.iter().map(|n| n.seq).collect::<Vec<_>>(), vec![3, 7]);
        assert_eq!(ns[0].id, None);
        assert_eq!(ns[1].id.as_deref(), Some(id.as_str()));
        let rw = contenders(&kids, &[Kind::Read, Kind::Write]);
        assert_eq!(rw.len(), 1);
        assert_eq!(rw[0].kind, Kind::Read);
        assert!(create_path("/a", "h", Kind::Write).ends_with("-__WRIT__"));
    }
}
