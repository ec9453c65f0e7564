//! Redis names and the keys baton keeps beside them: a lock named after another name's
//! internal key is refused (taking it would break that name), and an acquire script that
//! fails partway (a key of the wrong type) leaves no hold behind.
#![cfg(feature = "redis")]

use baton::{Client, ErrorKind};
use baton_testkit::behaviour::crash::server_url;

fn unique(tag: &str) -> String {
    format!("keys-test-{tag}-{}", uuid::Uuid::new_v4().simple())
}

#[tokio::test]
async fn internal_keys_are_unreachable_by_names() {
    let url = server_url("BATON_TEST_REDIS_URL");
    let c = Client::connect(&url).await.unwrap();
    let x = unique("x");
    let g = c.lock(&x).acquire().await.unwrap();
    g.release().await.unwrap();
    let s = c.semaphore(&x, 2).acquire().await.unwrap();
    s.release().await.unwrap();
    for internal in [
        format!("redisson_lock_token:{{{x}}}"),
        format!("redisson_lock_queue:{{{x}}}"),
        format!("redisson_lock_timeout:{{{x}}}"),
        format!("baton_rwlock_queue:{{{x}}}"),
        format!("{{{x}}}:baton"),
        format!("{{semaphore:{x}}}:timeout"),
        format!("{{{x}}}:w1:rwlock_timeout:1"),
        format!("semaphore:{x}"),
        format!("latch:{x}"),
    ] {
        let e = c.lock(&internal).try_acquire().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{internal}: {e}");
        assert_eq!(c.inspect(&internal).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    // `x` itself is untouched and works.
    let g = c.lock(&x).acquire().await.unwrap();
    assert!(c.lock(&x).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    c.close().await;
}

#[tokio::test]
async fn simple_acquire_failing_partway_leaves_no_hold() {
    let url = server_url("BATON_TEST_REDIS_URL");
    let c = Client::connect(&format!("{url}?scheme=simple")).await.unwrap();
    let n = unique("simple");
    let mut con = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    // The side hash is a string: the script's HSET fails with WRONGTYPE.
    let meta = format!("{{{n}}}:baton");
    let _: () = redis::cmd("SET").arg(&meta).arg("not a hash").arg("EX").arg(60).query_async(&mut con).await.unwrap();
    let e = c.lock(&n).try_acquire().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Backend, "{e}");
    let held: i64 = redis::cmd("EXISTS").arg(&n).query_async(&mut con).await.unwrap();
    assert_eq!(held, 0, "the failed acquire left a hold on `{n}`");
    let _: i64 = redis::cmd("DEL").arg(&meta).query_async(&mut con).await.unwrap();
    let g = c.lock(&n).try_acquire().await.unwrap().expect("free once the bad key is gone");
    g.release().await.unwrap();
    c.close().await;
}
