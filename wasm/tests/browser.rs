//! The core in headless Chromium (wasm-bindgen-test): locks, fair locks, read-write locks,
//! semaphores and latches on `memory://` and on a real etcd through its JSON gateway
//! (`BATON_TEST_ETCD_HTTP_URL` when this test is compiled, e.g. `etcd+http://127.0.0.1:2379`),
//! with the timers, tasks and clock of the runtime seam being the page's.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver cargo test -p baton-wasm --target wasm32-unknown-unknown`
//! (the runner is set in .cargo/config.toml). The JavaScript API (BatonError codes,
//! AbortSignal, bad input, panics) is tested from a plain page: wasm/test/.
#![cfg(target_arch = "wasm32")]
// Test code: an unwrap that fails is a failing test (clippy sees no #[test] in wasm_bindgen_test).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use baton::{Client, ErrorKind, LockOptions};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Names unique to this run, so runs against the shared etcd never meet.
fn unique(what: &str) -> String {
    format!("wasm-test/{}/{what}", uuid_ish())
}

fn uuid_ish() -> String {
    format!("{:x}-{:x}", js_sys::Date::now() as u64, (js_sys::Math::random() * 1e12) as u64)
}

fn etcd_url() -> String {
    option_env!("BATON_TEST_ETCD_HTTP_URL").unwrap_or("etcd+http://127.0.0.1:2379").to_owned()
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &js_sys::Function, ms: i32) -> JsValue;
}

async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// Exclusion, timeouts, a hand-off to a waiting task, tokens that grow, ttl expiry.
async fn locks(url: &str) {
    let client = Client::connect(url).await.unwrap();
    let name = unique("lock");
    let (a, b) = (client.lock(&name), client.lock(&name));
    let g = a.acquire().await.unwrap();
    let first = g.token().get();
    assert!(b.try_acquire().await.unwrap().is_none(), "held: a second owner gets none");
    let e = b.acquire_timeout(Duration::from_millis(200)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);

    // A task waits; the release hands the lock over to it.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let waiter = b.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let g = waiter.acquire_timeout(Duration::from_secs(10)).await;
        let _ = tx.send(g.map(|g| g.token().get()));
    });
    sleep(100).await;
    g.release().await.unwrap();
    let second = rx.await.unwrap().unwrap();
    assert!(second > first, "tokens grow: {second} > {first}");
    client.inspect(&name).await.unwrap();

    // A ttl grant ends by itself.
    let ttl = client.lock_with(&unique("ttl"), LockOptions::new().ttl(Duration::from_millis(1200)));
    let t = ttl.acquire().await.unwrap();
    let other = client.lock(ttl.name());
    other.acquire_timeout(Duration::from_secs(10)).await.unwrap().release().await.unwrap();
    assert_eq!(t.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    client.close().await;
}

/// A watchdog lease outlives several lease periods while the page's timers renew it.
async fn watchdog(url: &str) {
    let client = Client::connect(url).await.unwrap();
    let name = unique("watchdog");
    let lock = client.lock_with(
        &name,
        LockOptions::new().lease(Duration::from_millis(1500)).renew_every(Duration::from_millis(400)),
    );
    let g = lock.acquire().await.unwrap();
    sleep(3500).await;
    assert!(!g.lost_signal().is_lost(), "renewed by the page's timers");
    assert!(client.lock(&name).try_acquire().await.unwrap().is_none());
    g.release().await.unwrap();
    client.close().await;
}

/// Fair locks grant in request order; read-write locks share reads, not writes.
async fn fair_and_rw(url: &str) {
    let client = Client::connect(url).await.unwrap();
    let name = unique("fair");
    let g = client.fair_lock(&name).acquire().await.unwrap();
    let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..3 {
        let (lock, order, tx) = (client.fair_lock(&name), order.clone(), tx.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let g = lock.acquire_timeout(Duration::from_secs(20)).await.unwrap();
            order.borrow_mut().push(i);
            g.release().await.unwrap();
            let _ = tx.send(());
        });
        sleep(150).await;
    }
    g.release().await.unwrap();
    for _ in 0..3 {
        rx.recv().await.unwrap();
    }
    assert_eq!(*order.borrow(), vec![0, 1, 2]);

    let rw = unique("rw");
    let r1 = client.rw_lock(&rw).read().await.unwrap();
    let r2 = client.rw_lock(&rw).try_read().await.unwrap().expect("reads share");
    assert!(client.rw_lock(&rw).try_write().await.unwrap().is_none(), "no write while read");
    r1.release().await.unwrap();
    r2.release().await.unwrap();
    let w = client.rw_lock(&rw).write_timeout(Duration::from_secs(5)).await.unwrap();
    assert!(client.rw_lock(&rw).try_read().await.unwrap().is_none(), "no read while written");
    w.release().await.unwrap();
    client.close().await;
}

/// Semaphores count permits; latches open at zero.
async fn semaphores_and_latches(url: &str) {
    let client = Client::connect(url).await.unwrap();
    let name = unique("sem");
    let sem = client.semaphore(&name, 2);
    let p1 = sem.acquire().await.unwrap();
    let p2 = client.semaphore(&name, 2).acquire().await.unwrap();
    assert!(client.semaphore(&name, 2).try_acquire().await.unwrap().is_none());
    assert_eq!(sem.available().await.unwrap(), 0);
    p1.release().await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    p2.release().await.unwrap();

    let latch = client.count_down_latch(&unique("latch"));
    assert!(latch.try_set_count(2).await.unwrap());
    let waiter = latch.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = tx.send(waiter.wait_timeout(Duration::from_secs(10)).await);
    });
    assert_eq!(latch.count_down().await.unwrap(), 1);
    assert_eq!(latch.count_down().await.unwrap(), 0);
    rx.await.unwrap().unwrap();
    client.close().await;
}

/// Bad input is a typed error, never a trap.
async fn bad_input(url: &str) {
    assert_eq!(Client::connect("nope://x").await.unwrap_err().kind(), ErrorKind::InvalidUrl);
    assert_eq!(Client::connect("sqlite:///tmp/x.db").await.unwrap_err().kind(), ErrorKind::Unsupported);
    let client = Client::connect(url).await.unwrap();
    assert_eq!(client.lock("").try_acquire().await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let long = "x".repeat(baton::MAX_NAME_BYTES + 1);
    assert_eq!(client.lock(&long).try_acquire().await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    let zero = client.lock_with("z", LockOptions::new().ttl(Duration::ZERO));
    assert_eq!(zero.try_acquire().await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    client.close().await;
    assert_eq!(client.lock("after").try_acquire().await.unwrap_err().kind(), ErrorKind::Closed);
}

#[wasm_bindgen_test]
async fn memory_locks() {
    locks("memory://wasm-locks").await;
}

#[wasm_bindgen_test]
async fn memory_watchdog() {
    watchdog("memory://wasm-watchdog").await;
}

#[wasm_bindgen_test]
async fn memory_fair_and_rw() {
    fair_and_rw("memory://wasm-fair").await;
}

#[wasm_bindgen_test]
async fn memory_semaphores_and_latches() {
    semaphores_and_latches("memory://wasm-sem").await;
}

#[wasm_bindgen_test]
async fn memory_bad_input() {
    bad_input("memory://wasm-bad").await;
}

#[wasm_bindgen_test]
async fn etcd_locks() {
    locks(&etcd_url()).await;
}

#[wasm_bindgen_test]
async fn etcd_watchdog() {
    watchdog(&etcd_url()).await;
}

#[wasm_bindgen_test]
async fn etcd_fair_and_rw() {
    fair_and_rw(&etcd_url()).await;
}

#[wasm_bindgen_test]
async fn etcd_semaphores_and_latches() {
    semaphores_and_latches(&etcd_url()).await;
}

#[wasm_bindgen_test]
async fn etcd_bad_input() {
    bad_input(&etcd_url()).await;
}
