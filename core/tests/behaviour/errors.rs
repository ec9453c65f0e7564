//! Bad input: a typed error naming the bad value, never a panic.

use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};

use super::{Store, unique};

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
    let g = lock.acquire().await.unwrap();
    expect_kind(g.extend(Duration::ZERO).await, ErrorKind::InvalidArgument, "lease");
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
