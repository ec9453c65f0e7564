//! Names to znode paths, and the protected-mode names of contender nodes.
//!
//! A name `orders/42` is the znode `/orders/42`, as Curator's
//! `new InterProcessMutex(client, "/orders/42")`. Names that are not valid znode paths
//! (ZooKeeper's `PathUtils.validatePath`: empty segments, a trailing `/`, `.` or `..`
//! segments, control characters, the surrogate and private-use range U+D800–U+F8FF and
//! U+FFF0–U+FFFF) and names under ZooKeeper's own `/zookeeper` are refused with
//! `InvalidArgument`; nothing is escaped.

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
        u == 0 || (0x01..=0x1f).contains(&u) || (0x7f..=0x9f).contains(&u) || (0xf000..=0xf8ff).contains(&u) || u >= 0xfff0 && u <= 0xffff
    }) {
        return Err(bad(&format!("character U+{:04X} is not allowed", c as u32)));
    }
    if rest == "zookeeper" || rest.starts_with("zookeeper/") {
        return Err(bad("`/zookeeper` is ZooKeeper's own tree"));
    }
    Ok(())
}

/// The znode of a name: `/NAME`, checked.
pub(crate) fn of_name(name: &str) -> Result<String> {
    let p = format!("/{name}");
    check(&p)?;
    Ok(p)
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
    fn names_map_to_paths_or_are_refused() {
        assert_eq!(of_name("orders/42").unwrap(), "/orders/42");
        assert_eq!(of_name("ключ/🔒").unwrap(), "/ключ/🔒");
        for bad in ["a//b", "a/", "/a", "a/./b", "..", "a\u{1}b", "zookeeper", "zookeeper/quota", "a\u{fff5}"] {
            assert_eq!(of_name(bad).unwrap_err().kind(), crate::ErrorKind::InvalidArgument, "{bad}");
        }
        assert!(of_name("zookeeperx").is_ok());
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
