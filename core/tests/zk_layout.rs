//! The ZooKeeper store's own checks on the standalone server of `scripts/services`
//! (`BATON_TEST_ZK_URL`): Curator's node names and paths as a raw ZooKeeper client sees
//! them, a Curator-style contender and baton excluding each other both ways, the guid
//! recovery of a create whose answer was lost, chroot, digest auth, URL errors.
#![cfg(feature = "zookeeper")]

use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use baton_testkit::behaviour::{self, SLACK, WAKE, bounded, unique};
use tokio::time::Instant;
use zookeeper_client as zk;

fn url() -> String {
    behaviour::env_server("BATON_TEST_ZK_URL", "ZooKeeper")
}

async fn raw() -> zk::Client {
    zk::Client::connect(url().trim_start_matches("zk://")).await.expect("raw zk client")
}

/// Curator's protected-mode id as baton derives it from a holder id (FNV-1a, 128 bits).
fn protected_id(holder: &str) -> String {
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in holder.as_bytes() {
        h ^= u128::from(*b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013B);
    }
    let x = format!("{h:032x}");
    format!("{}-{}-{}-{}-{}", &x[..8], &x[8..12], &x[12..16], &x[16..20], &x[20..])
}

fn is_protected(child: &str, lock_name: &str) -> bool {
    let Some(rest) = child.strip_prefix("_c_") else { return false };
    let Some((id, tail)) = rest.split_at_checked(36) else { return false };
    let seq = tail.strip_prefix('-').and_then(|t| t.strip_prefix(lock_name));
    id.len() == 36 && seq.is_some_and(|s| s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_rw_and_semaphore_nodes_are_curators() {
    let (c, z) = (Client::connect(&url()).await.unwrap(), raw().await);
    let name = unique("zk-layout");
    let g = c.lock(&name).acquire().await.unwrap();
    let kids = z.list_children(&format!("/{name}")).await.unwrap();
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert!(is_protected(&kids[0], "lock-"), "{kids:?}");
    let (data, stat) = z.get_data(&format!("/{name}/{}", kids[0])).await.unwrap();
    assert_eq!(g.token().get(), u64::try_from(stat.czxid).unwrap(), "the token is the node's czxid");
    assert!(String::from_utf8_lossy(&data).contains("\"holder\""));
    assert!(stat.ephemeral_owner != 0, "an ephemeral node");
    g.release().await.unwrap();
    assert!(z.list_children(&format!("/{name}")).await.unwrap().is_empty(), "release deletes the node");

    let rw = c.rw_lock(&format!("{name}-rw"));
    let r = rw.read().await.unwrap();
    let kids = z.list_children(&format!("/{name}-rw")).await.unwrap();
    assert!(kids.len() == 1 && is_protected(&kids[0], "__READ__"), "{kids:?}");
    r.release().await.unwrap();
    let w = rw.write().await.unwrap();
    let kids = z.list_children(&format!("/{name}-rw")).await.unwrap();
    assert!(kids.len() == 1 && is_protected(&kids[0], "__WRIT__"), "{kids:?}");
    w.release().await.unwrap();

    let sem = c.semaphore(&format!("{name}-sem"), 3);
    let p = sem.acquire_many(2).await.unwrap();
    let kids = z.list_children(&format!("/{name}-sem/leases")).await.unwrap();
    assert_eq!(kids.len(), 2, "one lease node per permit: {kids:?}");
    assert!(kids.iter().all(|k| is_protected(k, "lease-")), "{kids:?}");
    p.release().await.unwrap();
}

/// A contender that is not baton's (Curator writes the client's address as data) holds
/// the lock while it is lowest; baton waits on it and is woken by its deletion; and a
/// Curator-style contender queued behind baton's holder is not first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_style_contender_and_baton_exclude_each_other() {
    let (c, z) = (Client::connect(&url()).await.unwrap(), raw().await);
    let name = unique("zk-curator");
    let dir = format!("/{name}");
    z.mkdir(&dir, &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())).await.unwrap();
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let id = uuid::Uuid::new_v4();
    let mine = format!("{dir}/_c_{id}-lock-");
    let (stat, seq) = z.create(&mine, b"127.0.0.1", &opts).await.unwrap();
    let node = format!("{mine}{seq}");
    assert!(c.lock(&name).try_acquire().await.unwrap().is_none(), "a Curator holder excludes baton");
    let info = c.inspect(&name).await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].token.get(), u64::try_from(stat.czxid).unwrap());
    let waiter = tokio::spawn({
        let (c, name) = (c.clone(), name.clone());
        async move { c.lock(&name).acquire().await.map(|g| (g, Instant::now())) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    let released = Instant::now();
    z.delete(&node, None).await.unwrap();
    let (g, at) = bounded("baton woken by the Curator release", Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert!(at.duration_since(released) < WAKE, "woken after {:?}", at.duration_since(released));
    assert!(g.token().get() > u64::try_from(stat.czxid).unwrap());
    // A Curator contender arriving now is behind baton's node.
    let (_, seq2) = z.create(&mine, b"127.0.0.1", &opts).await.unwrap();
    let kids = z.list_children(&dir).await.unwrap();
    let lowest = kids.iter().min_by_key(|k| k.rsplit('-').next().unwrap().to_owned()).unwrap();
    assert!(!lowest.contains(&id.to_string()), "baton's node is first: {kids:?}");
    g.release().await.unwrap();
    z.delete(&format!("{mine}{seq2}"), None).await.unwrap();
}

/// A create whose answer was lost (the node exists, the client never learned its name):
/// the next attempt finds the node by its protected-mode id and takes it, leaving no orphan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_answer_is_recovered_by_guid() {
    let (c, z) = (Client::connect(&url()).await.unwrap(), raw().await);
    let name = unique("zk-guid");
    let owner = format!("owner-{}", uuid::Uuid::new_v4().simple());
    let dir = format!("/{name}");
    z.mkdir(&dir, &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())).await.unwrap();
    let data = format!(r#"{{"holder":"{owner}","count":0,"lease_ms":30000}}"#);
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let (stat, _) =
        z.create(&format!("{dir}/_c_{}-lock-", protected_id(&owner)), data.as_bytes(), &opts).await.unwrap();
    let g = c.lock_with(&name, LockOptions::new().owner(owner.as_str())).acquire().await.unwrap();
    assert_eq!(g.token().get(), u64::try_from(stat.czxid).unwrap(), "the orphan-to-be was taken");
    assert_eq!(z.list_children(&dir).await.unwrap().len(), 1, "no second node");
    g.release().await.unwrap();
    assert!(z.list_children(&dir).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chroot_and_digest_auth() {
    let z = raw().await;
    let root = unique("zk-chroot");
    let host = url().trim_start_matches("zk://").to_owned();
    let c = Client::connect(&format!("zk://{host}/{root}")).await.unwrap();
    let g = c.lock("a/b").acquire().await.unwrap();
    assert_eq!(z.list_children(&format!("/{root}/a/b")).await.unwrap().len(), 1, "under the chroot");
    g.release().await.unwrap();

    let secret = "s3cr3t-pw";
    let authed = Client::connect(&format!("zk://alice:{secret}@{host}/{root}-auth")).await.unwrap();
    let g = authed.lock("x").acquire().await.unwrap();
    // Only alice may touch what alice made.
    assert!(matches!(z.list_children(&format!("/{root}-auth/x")).await, Err(zk::Error::NoAuth)));
    let alice =
        zk::Client::connector().with_auth("digest", format!("alice:{secret}").as_bytes()).connect(&host).await.unwrap();
    let kids = alice.list_children(&format!("/{root}-auth/x")).await.unwrap();
    assert_eq!(kids.len(), 1);
    assert!(matches!(z.get_data(&format!("/{root}-auth/x/{}", kids[0])).await, Err(zk::Error::NoAuth)));
    let other = Client::connect(&format!("zk://bob:other@{host}/{root}-auth")).await.unwrap();
    let e = other.lock("x").try_acquire().await.unwrap_err();
    assert!(!e.to_string().contains("other") && !e.to_string().contains(secret), "{e}");
    g.release().await.unwrap();
    let bad =
        Client::connect(&format!("zk://alice:{secret}@127.0.0.1:1/x?connect_timeout=300ms&session_timeout=1s")).await;
    let e = bad.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(!e.to_string().contains(secret), "{e}");
}

#[tokio::test]
async fn bad_urls_and_names() {
    for (u, kind) in [
        ("zk://", ErrorKind::InvalidUrl),
        ("zk://h:0", ErrorKind::InvalidUrl),
        ("zk://h/a//b", ErrorKind::InvalidUrl),
        ("zk://h?nope=1", ErrorKind::InvalidUrl),
        ("zk://h?session_timeout=soon", ErrorKind::InvalidArgument),
    ] {
        let e = Client::connect(u).await.unwrap_err();
        assert_eq!(e.kind(), kind, "{u}: {e}");
    }
    // A name that is no znode path is escaped (one rule), not refused.
    let (c, z) = (Client::connect(&url()).await.unwrap(), raw().await);
    let n = format!("{}//x/", unique("zk-odd"));
    let g = c.lock(&n).acquire().await.unwrap();
    let enc: String = n
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    assert_eq!(z.list_children(&format!("/%/{enc}")).await.unwrap().len(), 1);
    g.release().await.unwrap();
}

/// A waiter that vanished and left its node behind (a frozen process whose session the
/// server still keeps): its place lapses with its lease, and the waiter behind it is
/// granted soon after the holder's release; likewise a writer's place no longer holds
/// readers back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_waiter_node_is_skipped() {
    let (c, z) = (Client::connect(&url()).await.unwrap(), raw().await);
    let name = unique("zk-vanished");
    let g = c.fair_lock(&name).acquire().await.unwrap();
    let dead = "dead-waiter";
    let data = format!(r#"{{"holder":"{dead}","count":0,"lease_ms":2000}}"#);
    let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    z.create(&format!("/{name}/_c_{}-lock-", protected_id(dead)), data.as_bytes(), &opts).await.unwrap();
    assert_eq!(c.inspect(&name).await.unwrap().waiters, vec![dead.to_owned()], "the dead waiter's place stays");
    let b = Client::connect(&url()).await.unwrap();
    let second = tokio::spawn({
        let name = name.clone();
        async move { b.fair_lock(&name).acquire().await.map(|g| g.token()) }
    });
    let first = g.token();
    g.release().await.unwrap();
    let t =
        bounded("second waiter granted past the dead place", Duration::from_secs(6), second).await.unwrap().unwrap();
    assert!(t > first);

    let rw = unique("zk-vanished-rw");
    let r = c.rw_lock(&rw).read().await.unwrap();
    let data = format!(r#"{{"holder":"{dead}:write","count":0,"lease_ms":2000}}"#);
    z.create(&format!("/{rw}/_c_{}-__WRIT__", protected_id(&format!("{dead}:write"))), data.as_bytes(), &opts)
        .await
        .unwrap();
    assert!(c.rw_lock(&rw).try_read().await.unwrap().is_none(), "a queued writer holds new readers back");
    let t0 = Instant::now();
    let g = bounded("read after the dead writer's place lapsed", Duration::from_secs(10), c.rw_lock(&rw).read())
        .await
        .unwrap();
    // The place's 2 s lease, plus the reader's re-check on a loaded machine (`SLACK`).
    assert!(t0.elapsed() < Duration::from_secs(2) + SLACK, "{:?}", t0.elapsed());
    g.release().await.unwrap();
    r.release().await.unwrap();
}

/// `zks://`: TLS to ZooKeeper's `secureClientPort` (a standalone server of this test's
/// own, certificates made here), with the CA of `?ca=`, and with a client certificate when
/// the server asks for one (`ssl.clientAuth=need`, ZooKeeper's default); a client that
/// does not trust the server's certificate gets no session; TLS options on `zk://` are
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_ca_and_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let certs = baton_testkit::Certs::generate(dir.path(), "zk");
    let other = baton_testkit::Certs::generate(dir.path(), "other");
    let (ca, cert, key) = (certs.ca.display(), certs.cert.display(), certs.key.display());
    for client_auth in [false, true] {
        let (_zk, port) = baton_testkit::OwnZk::start_tls(certs.files(), client_auth).await.unwrap();
        let ident = if client_auth { format!("&cert={cert}&key={key}") } else { String::new() };
        let url = format!("zks://127.0.0.1:{port}?ca={ca}{ident}");
        let c = Client::connect(&url).await.unwrap();
        let name = unique("tls");
        let g = c.lock(&name).acquire().await.unwrap();
        assert_eq!(c.lock(&name).inspect().await.unwrap().holders.len(), 1, "{url}");
        g.release().await.unwrap();
        c.close().await;
        let untrusted =
            format!("zks://127.0.0.1:{port}?ca={}{ident}&connect_timeout=1s&session_timeout=2s", other.ca.display());
        let e = Client::connect(&untrusted).await.expect_err("a session without trusting the server");
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        if client_auth {
            let anonymous = format!("zks://127.0.0.1:{port}?ca={ca}&connect_timeout=1s&session_timeout=2s");
            let e = Client::connect(&anonymous).await.expect_err("a session without a client certificate");
            assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        }
    }
    let e = Client::connect(&format!("zk://127.0.0.1:1?ca={ca}")).await.err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}
