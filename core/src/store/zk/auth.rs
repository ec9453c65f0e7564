//! Credentials checked at connect. ZooKeeper's `digest` scheme has no accounts: `addAuth`
//! takes any `user:password`, and the session is then the identity
//! `digest:<user>:<base64(sha1(user:password))>`, so a wrong password is merely another
//! identity (free names work, the owner's nodes answer "not authorized"). A client with
//! credentials is therefore refused (`Connection`, as every store's refused login, the
//! password never in the message) where the ACL of the nodes it starts from — the chroot
//! (or the root) and the directory of `?prefix=` when it exists — grants its identity
//! neither reading nor creating; one without credentials likewise. An ACL entry of a scheme
//! the client cannot evaluate here (`ip`, `x509`, `sasl`) may be the one that lets it in:
//! such an ACL is not judged, and the nodes' own answers decide (`Conn::err` maps "not
//! authorized" to `Connection` too).

use zookeeper_client as zk;

/// Why `acls` (of the node `path`) let the identity `me` (`None`: no credentials) neither
/// read nor create, or `None` when they do, or when they cannot be judged here.
pub(crate) fn refusal(acls: &[zk::Acl], me: Option<&str>, path: &str) -> Option<String> {
    let mut granted = zk::Permission::NONE;
    for a in acls {
        match (a.scheme(), me) {
            ("world", _) if a.id() == "anyone" => granted = granted | a.permission(),
            ("digest", Some(me)) if a.id() == me => granted = granted | a.permission(),
            ("world" | "digest", _) => {}
            // An identity the client may have besides its digest (its address, a certificate).
            _ => return None,
        }
    }
    if granted.has(zk::Permission::READ) && granted.has(zk::Permission::CREATE) {
        return None;
    }
    let user_named = me.and_then(|m| m.split_once(':')).is_some_and(|(u, _)| {
        acls.iter().any(|a| a.scheme() == "digest" && a.id().split_once(':').is_some_and(|(v, _)| v == u))
    });
    let hint = if user_named { " (the ACL names this user with another password)" } else { "" };
    Some(format!("the ACL of `{path}` grants this identity neither reading nor creating ({granted}){hint}"))
}

/// The `digest` identity of `user:password`, as ZooKeeper's `DigestAuthenticationProvider`
/// makes it: `user:` + base64 of the SHA-1 of `user:password`.
pub(crate) fn digest_id(user: &str, password: &str) -> String {
    format!("{user}:{}", base64(&sha1(format!("{user}:{password}").as_bytes())))
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// SHA-1 (FIPS 180-4): only to name a digest identity as the server does.
fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&(u64::try_from(data.len()).unwrap_or(u64::MAX).wrapping_mul(8)).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(*wi);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, t);
        }
        for (x, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_ids_are_zookeepers() {
        // FIPS 180-2's test vector; the digest id as `DigestAuthenticationProvider.generateDigest`
        // makes it (the server's own ids are matched live by zk_layout.rs's
        // `wrong_digest_credentials_are_refused`: the right password gets in).
        let abc: String = sha1(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(abc, "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(digest_id("super", "superpw"), "super:g9oN2HttPfn8MMWJZ2r45Np/LIA=");
    }

    #[test]
    fn acls_that_let_an_identity_in() {
        let all = zk::Permission::ALL;
        let me = digest_id("alice", "pw");
        let alice = [zk::Acl::new(all, zk::AuthId::new("digest", &me))];
        assert_eq!(refusal(&alice, Some(&me), "/a"), None);
        let wrong = digest_id("alice", "nope");
        let why = refusal(&alice, Some(&wrong), "/a").unwrap();
        assert!(why.contains("another password") && why.contains("`/a`"), "{why}");
        assert!(refusal(&alice, None, "/a").is_some());
        let open = [zk::Acl::new(all, zk::AuthId::anyone())];
        assert_eq!(refusal(&open, Some(&wrong), "/"), None);
        let read = [zk::Acl::new(zk::Permission::READ, zk::AuthId::anyone()), alice[0].clone()];
        assert!(refusal(&read, Some(&wrong), "/a").is_some());
        let ip = [zk::Acl::new(all, zk::AuthId::new("ip", "127.0.0.1")), alice[0].clone()];
        assert_eq!(refusal(&ip, Some(&wrong), "/a"), None, "not judged here");
    }
}
