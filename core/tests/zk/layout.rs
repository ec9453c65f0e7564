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
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
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
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
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
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
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
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
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
    // Another identity is refused at connect (`wrong_digest_credentials_are_refused`).
    let e = Client::connect(&format!("zk://bob:other@{host}/{root}-auth")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
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
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
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
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
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

/// `connect_timeout` bounds the first connect (issue #39, item 9): a closed port fails with
/// `Connection` naming the address soon after it, where the client used to retry for the
/// whole session timeout (30 s by default), also for `--wait 0` and `inspect`.
#[tokio::test]
async fn closed_port_fails_within_connect_timeout() {
    let port = baton_testkit::free_port();
    let secret = "pw-not-shown";
    let t0 = Instant::now();
    let e = Client::connect(&format!("zk://u:{secret}@127.0.0.1:{port}?connect_timeout=500ms"))
        .await
        .expect_err("no server on a closed port");
    // 500 ms asked; 4 s leaves room for a loaded machine and stays far below the 30 s the
    // session timeout made it before.
    assert!(t0.elapsed() < Duration::from_secs(4), "failed after {:?}", t0.elapsed());
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "names the address: {e}");
    assert!(!e.to_string().contains(secret), "{e}");
}

/// A ttl lease far longer than the session timeout (issue #39, item 10: every ttl ≥ 50 ×
/// `session_timeout` read as lost at once): 2000 s and 30 days are granted, stay held past
/// several session timeouts (the ttl keeper sees the node still there each time its
/// session-bounded local end nears), exclude others, and release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_leases_beyond_fifty_session_timeouts_hold() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    // 4 s: the old bound refused every ttl from 200 s on.
    let c = Client::connect(&format!("{}?session_timeout=4s", url())).await.unwrap();
    let other = Client::connect(&url()).await.unwrap();
    let mut held = Vec::new();
    for ttl in [Duration::from_secs(2000), Duration::from_secs(30 * 86_400)] {
        let name = unique("zk-long-ttl");
        let g = c.lock_with(&name, LockOptions::new().ttl(ttl)).acquire().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!g.is_lost(), "a {ttl:?} lease lost at once");
        let left = other.inspect(&name).await.unwrap().holders[0].lease_left.unwrap();
        assert!(left > ttl - Duration::from_secs(60), "{left:?} of {ttl:?} left");
        held.push((name, g));
    }
    // Three session timeouts: each local end (one session timeout after the last look)
    // passed and was moved on.
    tokio::time::sleep(Duration::from_secs(12)).await;
    for (name, g) in held {
        assert!(!g.is_lost(), "{name}: lost while its node stands");
        assert!(other.lock(&name).try_acquire().await.unwrap().is_none(), "{name}: held for others");
        g.release().await.unwrap();
        let again = other.lock(&name).try_acquire().await.unwrap().expect("free after the release");
        again.release().await.unwrap();
    }
}

/// Names whose znode would be one of another name's own nodes (issue #39, item 11). A
/// contender (`V/lock-0000000000` parsed as a contender of `V` and held it for 27–52 s
/// after its release), or a path under one, is refused with `InvalidArgument` by every
/// primitive, and `V` is free right after its release. A semaphore's `leases` or a latch's
/// `latch`, or a path under one, is a usable name in the escaped form (one segment under
/// `/%`): it neither disturbs `V`'s semaphore or latch nor is disturbed by them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_of_the_layouts_own_nodes_are_refused_or_escaped() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    let (c, other) = (Client::connect(&url()).await.unwrap(), Client::connect(&url()).await.unwrap());
    let v = unique("zk-collide");
    let g = c.lock(&v).acquire().await.unwrap();
    let id = protected_id("someone");
    let names = [
        format!("{v}/lock-0000000000"),
        format!("{v}/_c_{id}-lock-0000000000"),
        format!("{v}/_c_{id}-__READ__0000000003"),
        format!("{v}/__WRIT__0000000004"),
        format!("{v}/block-0000000005"),
        format!("{v}/lock-0000000000/deeper"),
        format!("{v}/latch/lock-0000000006"),
    ];
    for n in &names {
        let refused = |what: &str, e: baton::Error| {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{what} `{n}`: {e}");
            assert!(e.to_string().contains(n.as_str()), "{what}: names the name: {e}");
        };
        refused("lock", c.lock(n).try_acquire().await.expect_err("lock"));
        refused("waiting lock", c.lock(n).acquire_timeout(Duration::from_secs(1)).await.expect_err("lock"));
        refused("read lock", c.rw_lock(n).try_read().await.expect_err("read"));
        refused("write lock", c.rw_lock(n).try_write().await.expect_err("write"));
        refused("semaphore", c.semaphore(n, 2).try_acquire().await.expect_err("semaphore"));
        refused("latch", c.count_down_latch(n).try_set_count(1).await.expect_err("latch"));
        refused("inspect", c.inspect(n).await.expect_err("inspect"));
    }
    // Names that only look alike are names.
    for n in [format!("{v}/lock-1"), format!("{v}/leases-x"), format!("{v}-latch"), format!("{v}/x/latchkey")] {
        let h = c.lock(&n).try_acquire().await.unwrap().unwrap_or_else(|| panic!("{n} free"));
        h.release().await.unwrap();
    }
    g.release().await.unwrap();
    let again = other.lock(&v).try_acquire().await.unwrap().expect("V free right after its release");
    again.release().await.unwrap();

    // `V/leases`, `V/latch`, and names under them, beside V's own semaphore and latch.
    let s = unique("zk-own-children");
    let permit = c.semaphore(&s, 1).try_acquire().await.unwrap().expect("a fresh semaphore has a permit");
    let latch = c.count_down_latch(&s);
    assert!(latch.try_set_count(2).await.unwrap());
    let z = raw().await;
    for n in [
        format!("{s}/leases"),
        format!("{s}/latch"),
        format!("{s}/leases/_c_{id}-lease-0000000001"),
        format!("{s}/latch/x"),
    ] {
        let h = c.lock(&n).try_acquire().await.unwrap().unwrap_or_else(|| panic!("{n} free"));
        assert!(other.lock(&n).try_acquire().await.unwrap().is_none(), "{n}: held is busy");
        h.release().await.unwrap();
        let sem = c.semaphore(&n, 3).try_acquire().await.unwrap().unwrap_or_else(|| panic!("{n}: semaphore"));
        sem.release().await.unwrap();
        let l = c.count_down_latch(&n);
        assert!(l.try_set_count(1).await.unwrap(), "{n}: latch");
        assert_eq!(l.count().await.unwrap(), 1);
        // V's own nodes hold only V's records.
        assert_eq!(latch.count().await.unwrap(), 2, "{n} changed the latch of {s}");
        assert!(other.semaphore(&s, 1).try_acquire().await.unwrap().is_none(), "{n} freed a permit of {s}");
        let kids = z.list_children(&format!("/{s}/leases")).await.unwrap();
        assert_eq!(kids.len(), 1, "{n} wrote under {s}'s leases: {kids:?}");
        l.count_down().await.unwrap();
    }
    permit.release().await.unwrap();
    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
}

/// How many waiters `name`'s queue shows.
async fn waiters(c: &Client, name: &str) -> usize {
    c.inspect(name).await.unwrap().waiters.len()
}

/// Polls (every 20 ms, at most 10 s) until `name`'s queue shows `n` waiters.
async fn until_waiters(c: &Client, name: &str, n: usize) {
    let t0 = Instant::now();
    while waiters(c, name).await != n {
        assert!(t0.elapsed() < Duration::from_secs(10), "{name}: never {n} waiters");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waiters that give up leave the queue (issue #39, item 17: a waiter ended by SIGINT left
/// its node, and the next waiter was granted ~2.5 s after the release, when the node's
/// place lapsed): one whose acquire future is dropped in a running process, and one that
/// does as `baton run` on SIGINT — drops its acquire, closes its client and ends its
/// runtime at once (a process exiting). The waiter behind both is granted promptly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_that_give_up_leave_no_place() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    let name = unique("zk-gone-waiter");
    let holder = Client::connect(&url()).await.unwrap();
    let g = holder.lock(&name).acquire().await.unwrap();
    // 1: dropped here (the task aborted).
    let dropped = tokio::spawn({
        let (c, name) = (Client::connect(&url()).await.unwrap(), name.clone());
        async move { c.lock(&name).acquire().await.map(drop) }
    });
    until_waiters(&holder, &name, 1).await;
    // 2: a "process" of its own: a current-thread runtime on its own thread, as the CLI's.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (queued_tx, queued) = std::sync::mpsc::channel::<()>();
    let exiting = std::thread::spawn({
        let name = name.clone();
        move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let c = Client::connect(&url()).await.unwrap();
                let lock = c.lock(&name);
                queued_tx.send(()).unwrap();
                tokio::select! {
                    r = lock.acquire() => panic!("granted while held: {:?}", r.map(|g| g.token())),
                    _ = stopped => {}
                }
                c.close().await;
            });
            // The runtime ends here with whatever it had spawned, as a process exits.
        }
    });
    queued.recv().unwrap();
    until_waiters(&holder, &name, 2).await;
    // 3: the one that must not wait for the others' places.
    let third = tokio::spawn({
        let (c, name) = (Client::connect(&url()).await.unwrap(), name.clone());
        async move { c.lock(&name).acquire().await.map(|g| (g, Instant::now())) }
    });
    until_waiters(&holder, &name, 3).await;
    dropped.abort();
    stop.send(()).unwrap();
    exiting.join().unwrap();
    let released = Instant::now();
    g.release().await.unwrap();
    let (g3, at) = bounded("the third waiter granted", Duration::from_secs(10), third).await.unwrap().unwrap();
    // A wake-up takes ~10 ms; 1 s leaves room for a loaded machine and stays below the 2 s
    // a place left behind would last.
    assert!(at.duration_since(released) < Duration::from_secs(1), "granted {:?} after the release", at - released);
    assert_eq!(holder.inspect(&name).await.unwrap().waiters.len(), 0, "no place left behind");
    g3.release().await.unwrap();
}

/// Digest credentials that are not the identity the nodes belong to are refused at connect
/// (issue #39, item 15: a wrong password acted as another identity: free names worked, the
/// owner's nodes answered "not authorized"): under a chroot made by `alice`, `alice` with
/// the wrong password, another user and no credentials get `Connection` (the CLI's 69)
/// naming the user, never the password; the right password works. Without a chroot, the
/// owner's nodes refuse the wrong password with `Connection` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_digest_credentials_are_refused() {
    baton_testkit::needs_server!("BATON_TEST_ZK_URL");
    let host = url().trim_start_matches("zk://").to_owned();
    let root = unique("zk-creds");
    let right = "right-pw-1";
    let alice = Client::connect(&format!("zk://alice:{right}@{host}/{root}")).await.unwrap();
    let g = alice.lock("x").acquire().await.unwrap();
    for (who, creds) in [("alice", "alice:wrong-pw-2@"), ("bob", "bob:other-pw-3@"), ("", "")] {
        let e = Client::connect(&format!("zk://{creds}{host}/{root}")).await.expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::Connection, "{creds}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("refused"), "{msg}");
        if !who.is_empty() {
            assert!(msg.contains(&format!("user `{who}`")), "{msg}");
        }
        assert!(!msg.contains("wrong-pw-2") && !msg.contains("other-pw-3") && !msg.contains(right), "{msg}");
    }
    let again = Client::connect(&format!("zk://alice:{right}@{host}/{root}")).await.unwrap();
    assert!(again.lock("x").try_acquire().await.unwrap().is_none(), "the right password: held by alice's other client");
    g.release().await.unwrap();
    again.lock("x").try_acquire().await.unwrap().expect("free").release().await.unwrap();

    // No chroot: the name's own node refuses the wrong password.
    let name = unique("zk-creds-name");
    let owner = Client::connect(&format!("zk://alice:{right}@{host}")).await.unwrap();
    let g = owner.lock(&name).acquire().await.unwrap();
    let wrong = Client::connect(&format!("zk://alice:wrong-pw-2@{host}")).await.unwrap();
    let e = wrong.lock(&name).try_acquire().await.expect_err("alice's node refuses another identity");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.to_string().contains("user `alice`") && !e.to_string().contains("wrong-pw-2"), "{e}");
    g.release().await.unwrap();
}
