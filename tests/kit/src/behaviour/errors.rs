//! Bad input: a typed error naming the bad value, never a panic.

use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};

use super::{Store, bounded, unique, with_option};

fn expect_kind<T: std::fmt::Debug>(r: baton::Result<T>, kind: ErrorKind, needle: &str) {
    let e = r.expect_err("expected an error");
    assert_eq!(e.kind(), kind, "{e}");
    assert!(e.to_string().contains(needle), "`{e}` should mention `{needle}`");
}

/// Empty, too long, NUL: `InvalidArgument` from every primitive.
pub async fn bad_names(store: &Store) {
    let c = store.client().await;
    let long = "x".repeat(256);
    for (name, needle) in [("", "empty"), (long.as_str(), "256 bytes"), ("a\0b", "NUL")] {
        expect_kind(c.lock(name).try_acquire().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.fair_lock(name).acquire().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.rw_lock(name).read().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.semaphore(name, 1).acquire().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.permit_semaphore(name, 1).acquire().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.count_down_latch(name).count_down().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.multi_lock([name, "ok"]).acquire().await, ErrorKind::InvalidArgument, needle);
        expect_kind(c.inspect(name).await, ErrorKind::InvalidArgument, needle);
    }
    let owner = LockOptions::new().owner("");
    expect_kind(c.lock_with("ok", owner).acquire().await, ErrorKind::InvalidArgument, "owner");
}

/// Zero, too long, and inconsistent durations.
pub async fn bad_durations(store: &Store) {
    let c = store.client().await;
    let name = unique("durations");
    let lock = c.lock(&name);
    expect_kind(lock.acquire_timeout(Duration::ZERO).await, ErrorKind::InvalidArgument, "timeout");
    expect_kind(lock.acquire_timeout(Duration::MAX).await, ErrorKind::InvalidArgument, "timeout");
    let zero_ttl = LockOptions::new().ttl(Duration::ZERO);
    expect_kind(c.lock_with(&name, zero_ttl).acquire().await, ErrorKind::InvalidArgument, "ttl");
    let huge_ttl = LockOptions::new().ttl(Duration::from_secs(u64::MAX));
    expect_kind(c.lock_with(&name, huge_ttl).acquire().await, ErrorKind::InvalidArgument, "ttl");
    let inverted = LockOptions::new().lease(Duration::from_secs(1)).renew_every(Duration::from_secs(2));
    expect_kind(c.lock_with(&name, inverted).acquire().await, ErrorKind::InvalidArgument, "renewal");
    // Under the minimum lease (100 ms), everywhere: ttl, watchdog lease, extend, permit
    // lease, and the URL's `lease` option.
    for short in [Duration::from_micros(500), Duration::from_millis(99)] {
        let ttl = LockOptions::new().ttl(short);
        expect_kind(c.lock_with(&name, ttl).acquire().await, ErrorKind::InvalidArgument, "minimum lease");
        let lease = LockOptions::new().lease(short).renew_every(short / 3);
        expect_kind(c.lock_with(&name, lease).acquire().await, ErrorKind::InvalidArgument, "minimum lease");
        let psem = c.permit_semaphore(&name, 1);
        expect_kind(psem.acquire_lease(short).await, ErrorKind::InvalidArgument, "minimum lease");
    }
    let sep = if store.url.contains('?') { '&' } else { '?' };
    let e = baton::Client::connect(&format!("{}{sep}lease=50ms", store.url)).await.err();
    assert_eq!(e.map(|e| e.kind()), Some(ErrorKind::InvalidArgument), "?lease=50ms must be refused");
    let g = lock.acquire().await.unwrap();
    expect_kind(g.extend(Duration::ZERO).await, ErrorKind::InvalidArgument, "lease");
    expect_kind(g.extend(Duration::from_millis(20)).await, ErrorKind::InvalidArgument, "minimum lease");
    g.release().await.unwrap();
    expect_kind(c.count_down_latch(&name).wait_timeout(Duration::ZERO).await, ErrorKind::InvalidArgument, "timeout");
    expect_kind(c.semaphore(&name, 1).acquire_timeout(Duration::MAX).await, ErrorKind::InvalidArgument, "timeout");
}

/// Zero permits, asking for more than exist, releasing more than held.
pub async fn bad_permits(store: &Store) {
    let c = store.client().await;
    let name = unique("permits");
    expect_kind(c.semaphore(&name, 0).acquire().await, ErrorKind::InvalidArgument, "at least one permit");
    expect_kind(c.permit_semaphore(&name, 0).acquire().await, ErrorKind::InvalidArgument, "at least one permit");
    let sem = c.semaphore(&name, 2);
    expect_kind(sem.acquire_many(0).await, ErrorKind::InvalidArgument, "0 permits");
    expect_kind(sem.acquire_many(3).await, ErrorKind::InvalidArgument, "3 permits");
    let mut p = sem.acquire_many(2).await.unwrap();
    expect_kind(p.release_many(3).await, ErrorKind::InvalidArgument, "3 permits");
    expect_kind(p.release_many(0).await, ErrorKind::InvalidArgument, "0 permits");
    p.release_many(2).await.unwrap();
    expect_kind(p.release().await, ErrorKind::NotHeld, "released");
}

/// Malformed URLs, unknown schemes and options; passwords never in messages.
pub async fn bad_urls(store: &Store) {
    let _ = store;
    for (url, kind, needle) in [
        ("", ErrorKind::InvalidUrl, "not a store URL"),
        ("no-scheme-here", ErrorKind::InvalidUrl, "not a store URL"),
        ("foo://u:hunter2@h:1", ErrorKind::InvalidUrl, "unknown scheme `foo`"),
        ("memory://?bogus=1", ErrorKind::InvalidUrl, "bogus"),
        ("memory://?lease=abc", ErrorKind::InvalidArgument, "abc"),
        ("memory://?lease=1s&renew=2s", ErrorKind::InvalidArgument, "renewal"),
        ("m@d://x", ErrorKind::InvalidUrl, "invalid scheme"),
    ] {
        let e = Client::connect(url).await.expect_err(url);
        assert_eq!(e.kind(), kind, "{url}: {e}");
        assert!(e.to_string().contains(needle), "{url}: `{e}` should mention `{needle}`");
        assert!(!e.to_string().contains("hunter2"), "{url}: password leaked in `{e}`");
        assert!(!format!("{e:?}").contains("hunter2"), "{url}: password leaked in Debug");
    }
}

/// Every call after `close` is `Closed`.
pub async fn closed_client(store: &Store) {
    let c = store.client().await;
    let name = unique("closed");
    let lock = c.lock(&name);
    c.close().await;
    c.close().await; // idempotent
    assert!(c.is_closed());
    expect_kind(lock.acquire().await, ErrorKind::Closed, "closed");
    expect_kind(c.semaphore(&name, 1).try_acquire().await, ErrorKind::Closed, "closed");
    expect_kind(c.count_down_latch(&name).count().await, ErrorKind::Closed, "closed");
    expect_kind(c.inspect(&name).await, ErrorKind::Closed, "closed");
}

/// This store's own URL with bad options: unknown option (`InvalidUrl`), bad values
/// (`InvalidArgument`), each naming the culprit; a prefix over the name limit. The limit
/// applies to the prefix and to each name on their own: a 255-byte name under a long
/// prefix is stored whole.
pub async fn bad_store_options(store: &Store) {
    for (opt, kind, needle) in [
        ("bogus=1", ErrorKind::InvalidUrl, "bogus"),
        ("lease=abc", ErrorKind::InvalidArgument, "abc"),
        ("lease=0s", ErrorKind::InvalidArgument, "0s"),
        ("renew=-1s", ErrorKind::InvalidArgument, "-1s"),
        ("lease=1s&renew=1s", ErrorKind::InvalidArgument, "renewal"),
        ("lease=99999h", ErrorKind::InvalidArgument, "99999h"),
    ] {
        let url = with_option(&store.url, opt);
        let e = Client::connect(&url).await.expect_err(&url);
        assert_eq!(e.kind(), kind, "{url}: {e}");
        assert!(e.to_string().contains(needle), "{url}: `{e}` should mention `{needle}`");
    }
    let e = Client::connect(&with_option(&store.url, &format!("prefix={}", "p".repeat(256)))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("256 bytes"), "{e}");
    let prefix = format!("{}/", unique("p").repeat(5));
    let c = Client::connect(&with_option(&store.url, &format!("prefix={prefix}"))).await.unwrap();
    let name = "n".repeat(255);
    let g = c.lock(&name).try_acquire().await.unwrap().expect("a free 255-byte name under a long prefix");
    assert_eq!(g.name(), name);
    let info = c.inspect(&name).await.unwrap();
    assert!(info.is_held() && info.name == name, "{info:?}");
    g.release().await.unwrap();
    expect_kind(c.lock(&"n".repeat(256)).try_acquire().await, ErrorKind::InvalidArgument, "256 bytes");
    c.close().await;
}

/// A password in any URL (this store's scheme, a known scheme, an unknown one) never shows
/// in an error's `Display` or `Debug`, nor in `Client::url`.
pub async fn passwords_never_in_messages(store: &Store) {
    let (scheme, rest) = store.url.split_once("://").unwrap();
    let mut urls = vec![
        with_option(&format!("{scheme}://u:hunter2@{rest}"), "bogus=1"),
        with_option(&format!("{scheme}://u:hunter2@{rest}"), "lease=abc"),
        "foo://u:hunter2@h".to_owned(),
        "redis://u:hunter2@127.0.0.1:1".to_owned(),
        "postgres://u:hunter2@127.0.0.1:1/db".to_owned(),
        "mysql://u:hunter2@127.0.0.1:1/db".to_owned(),
        "bad url u:hunter2@h".to_owned(),
    ];
    urls.push(format!("{scheme}://:hunter2@{rest}?bogus=1"));
    for url in &urls {
        // Bounded: a store driver that retries a refused connection must still give up.
        match bounded(url, Duration::from_secs(30), Client::connect(url)).await {
            Err(e) => {
                assert!(!e.to_string().contains("hunter2"), "{url}: password in `{e}`");
                assert!(!format!("{e:?}").contains("hunter2"), "{url}: password in {e:?}");
            }
            Ok(c) => {
                assert!(!c.url().contains("hunter2"), "{url}: password in {}", c.url());
                c.close().await;
            }
        }
    }
}

/// More durations: each zero or out-of-range one, on every primitive and form that takes
/// one, is `InvalidArgument` naming what was wrong.
pub async fn bad_durations_everywhere(store: &Store) {
    let c = store.client().await;
    let name = unique("durations2");
    let opts = |o: LockOptions| c.lock_with(&name, o);
    expect_kind(opts(LockOptions::new().ttl(Duration::MAX)).try_acquire().await, ErrorKind::InvalidArgument, "ttl");
    expect_kind(opts(LockOptions::new().lease(Duration::ZERO)).acquire().await, ErrorKind::InvalidArgument, "lease");
    expect_kind(opts(LockOptions::new().lease(Duration::MAX)).acquire().await, ErrorKind::InvalidArgument, "lease");
    let equal = LockOptions::new().lease(Duration::from_secs(1)).renew_every(Duration::from_secs(1));
    expect_kind(opts(equal).acquire().await, ErrorKind::InvalidArgument, "1s");
    let zero_renew = LockOptions::new().renew_every(Duration::ZERO);
    expect_kind(opts(zero_renew).acquire().await, ErrorKind::InvalidArgument, "renewal");
    let zero_queue = LockOptions::new().queue_ttl(Duration::ZERO);
    expect_kind(c.fair_lock_with(&name, zero_queue).acquire().await, ErrorKind::InvalidArgument, "queue");
    expect_kind(c.fair_lock(&name).acquire_timeout(Duration::ZERO).await, ErrorKind::InvalidArgument, "timeout");
    let rw = c.rw_lock(&name);
    expect_kind(rw.read_timeout(Duration::ZERO).await, ErrorKind::InvalidArgument, "timeout");
    expect_kind(rw.write_timeout(Duration::MAX).await, ErrorKind::InvalidArgument, "timeout");
    let sem = c.semaphore_with(&name, 2, LockOptions::new().ttl(Duration::ZERO));
    expect_kind(sem.acquire().await, ErrorKind::InvalidArgument, "ttl");
    expect_kind(
        c.semaphore(&name, 2).acquire_many_timeout(1, Duration::ZERO).await,
        ErrorKind::InvalidArgument,
        "timeout",
    );
    let psem = c.permit_semaphore(&name, 1);
    expect_kind(psem.acquire_lease(Duration::ZERO).await, ErrorKind::InvalidArgument, "lease");
    expect_kind(psem.acquire_timeout(Duration::MAX).await, ErrorKind::InvalidArgument, "timeout");
    let p = psem.acquire_lease(Duration::from_secs(30)).await.unwrap();
    expect_kind(psem.update_lease(p.id(), Duration::ZERO).await, ErrorKind::InvalidArgument, "lease");
    expect_kind(p.extend(Duration::MAX).await, ErrorKind::InvalidArgument, "lease");
    p.release().await.unwrap();
    expect_kind(c.multi_lock([&name]).acquire_timeout(Duration::ZERO).await, ErrorKind::InvalidArgument, "timeout");
    expect_kind(c.count_down_latch(&name).wait_timeout(Duration::MAX).await, ErrorKind::InvalidArgument, "timeout");
    let g = c.lock(&name).acquire().await.unwrap();
    expect_kind(g.extend(Duration::MAX).await, ErrorKind::InvalidArgument, "lease");
    assert!(!g.is_lost(), "a rejected extend must not lose the lease");
    g.release().await.unwrap();
    // Nothing above took anything.
    assert!(!c.inspect(&name).await.unwrap().is_held());
    let empty: [&str; 0] = [];
    expect_kind(c.multi_lock(empty).acquire().await, ErrorKind::InvalidArgument, "at least one");
}

/// Every call on a closed client, its handles, handles made after, and its guards is
/// `Closed`.
pub async fn closed_everywhere(store: &Store) {
    let c = store.client().await;
    let name = unique("closed2");
    let (lock, fair, rw, sem, psem, latch) = (
        c.lock(&name),
        c.fair_lock(&name),
        c.rw_lock(&name),
        c.semaphore(&name, 2),
        c.permit_semaphore(&name, 2),
        c.count_down_latch(&name),
    );
    let g = lock.acquire().await.unwrap();
    c.close().await;
    expect_kind(g.extend(Duration::from_secs(1)).await, ErrorKind::Closed, "closed");
    expect_kind(g.release().await, ErrorKind::Closed, "closed");
    expect_kind(lock.try_acquire().await, ErrorKind::Closed, "closed");
    expect_kind(lock.acquire_timeout(Duration::from_secs(1)).await, ErrorKind::Closed, "closed");
    expect_kind(lock.inspect().await, ErrorKind::Closed, "closed");
    expect_kind(fair.acquire().await, ErrorKind::Closed, "closed");
    expect_kind(rw.read().await, ErrorKind::Closed, "closed");
    expect_kind(rw.try_write().await, ErrorKind::Closed, "closed");
    expect_kind(sem.acquire_many(2).await, ErrorKind::Closed, "closed");
    expect_kind(sem.available().await, ErrorKind::Closed, "closed");
    expect_kind(psem.acquire().await, ErrorKind::Closed, "closed");
    expect_kind(psem.release("0123456789abcdef0123456789abcdef").await, ErrorKind::Closed, "closed");
    expect_kind(latch.try_set_count(1).await, ErrorKind::Closed, "closed");
    expect_kind(latch.count_down().await, ErrorKind::Closed, "closed");
    expect_kind(latch.wait().await, ErrorKind::Closed, "closed");
    expect_kind(c.multi_lock([&name]).try_acquire().await, ErrorKind::Closed, "closed");
    expect_kind(c.lock("made-after-close").acquire().await, ErrorKind::Closed, "closed");
    // The store is still fine for everyone else.
    let d = store.client().await;
    d.lock(&name).try_acquire().await.unwrap().expect("released by close").release().await.unwrap();
}

/// Names are data, never code: quotes, SQL and LIKE wildcards, path and key separators,
/// escapes, non-ASCII and the longest allowed name are each a lock of their own.
pub async fn odd_names_are_distinct(store: &Store) {
    let (a, b) = (store.client().await, store.client().await);
    let base = unique("odd");
    let mut names: Vec<String> = [
        "'",
        "\"",
        "'; DROP TABLE baton_state; --",
        "%",
        "_",
        "a%",
        "ab",
        "a_",
        "\\",
        "\\%",
        "/",
        "a/b",
        "a:b",
        "{x}",
        "*",
        "?",
        "ключ/🔒",
        " ",
        "\t\n",
    ]
    .iter()
    .map(|n| format!("{base}{n}"))
    .collect();
    names.push("é".repeat(127)); // 254 bytes
    names.push(format!("{base}{}", "z".repeat(255 - base.len())));
    let mut guards = Vec::new();
    for n in &names {
        assert!(n.len() <= 255);
        let g = a.lock(n).try_acquire().await.unwrap().unwrap_or_else(|| panic!("{n:?} is taken by another name"));
        guards.push(g);
    }
    for n in &names {
        assert!(b.lock(n).try_acquire().await.unwrap().is_none(), "{n:?} not held");
        assert_eq!(b.inspect(n).await.unwrap().name, *n, "inspect reports another name");
    }
    for g in guards {
        g.release().await.unwrap();
    }
    assert!(b.lock(&names[2]).try_acquire().await.unwrap().is_some());
}

/// A server that refuses the connection (`url` names a closed port) is a `Connection` error
/// at once that says so, not a pool's "timed out" after its acquire timeout; the password
/// stays out of it.
pub async fn refused_connection_is_named(url: &str) {
    let started = std::time::Instant::now();
    let e = bounded(url, Duration::from_secs(30), Client::connect(url)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.to_string().contains("refused"), "{url}: the cause is missing from `{e}`");
    assert!(!e.to_string().contains("hunter2") && !format!("{e:?}").contains("hunter2"), "{e:?}");
    // Bound: a refused connect returns in milliseconds; 5 s is half the pool's acquire
    // timeout, after which the old behaviour answered.
    assert!(started.elapsed() < Duration::from_secs(5), "{url}: took {:?}", started.elapsed());
}
