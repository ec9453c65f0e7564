//! Waiters ride out a short store restart within their wait: a Redis server of the test's
//! own goes away for 0.5 s and comes back (empty: no persistence), and a waiter that was
//! waiting all along is granted the lock instead of failing with `Connection`. A try
//! (`try_acquire`, no wait) still fails at once while the store is down.
#![cfg(feature = "redis")]

use std::time::Duration;

use baton::{Client, ErrorKind};
use baton_testkit::behaviour::{bounded, unique};
use baton_testkit::{OwnRedis, tools_present};
use tokio::time::Instant;

/// A waiter rides out up to 2 s of failures in a row (`engine::wait::RIDE_OUT`) and pauses
/// up to 400 ms between tries: a server answering again within 1.5 s of going down is
/// always within reach. A loaded machine sometimes takes longer than that to start
/// `redis-server` again (seen once in CI); such a round is not a 0.5 s restart, and it
/// checks only that the waiter's failure is the store's `Connection` error.
const BACK_IN_REACH: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_rides_out_a_half_second_restart() {
    if !tools_present(&["redis-server"]) {
        return;
    }
    let mut counted = 0;
    for round in 0..8 {
        if counted == 3 {
            break;
        }
        let mut server = OwnRedis::start().await.unwrap();
        let url = server.url();
        let (a, b) = (Client::connect(&url).await.unwrap(), Client::connect(&url).await.unwrap());
        let name = unique("restart");
        let held = a.lock(&name).acquire().await.unwrap();
        let waiter = tokio::spawn({
            let (b, name) = (b.clone(), name.clone());
            async move { b.lock(&name).acquire_timeout(Duration::from_secs(30)).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "the waiter waits while the lock is held");
        server.kill();
        let down = Instant::now();
        let e = b.lock(&unique("restart-try")).try_acquire().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        tokio::time::sleep(Duration::from_millis(500).saturating_sub(down.elapsed())).await;
        server.restart().await.unwrap();
        let back = down.elapsed();
        // The restarted server is empty: the lock is free, and the waiter gets it.
        let got = bounded("the waiter after the restart", Duration::from_secs(20), waiter).await.unwrap();
        if back > BACK_IN_REACH {
            eprintln!("round {round}: not counted, the server answered again only {back:?} after going down");
            if let Err(e) = &got {
                assert_eq!(e.kind(), ErrorKind::Connection, "round {round}: {e}");
            }
            continue;
        }
        let g = got.unwrap_or_else(|e| {
            panic!("round {round}: the waiter failed on a restart (answering again {back:?} after going down): {e}")
        });
        eprintln!("round {round}: answering again {back:?}, granted {:?} after the server went down", down.elapsed());
        g.release().await.unwrap();
        drop(held);
        counted += 1;
    }
    assert_eq!(counted, 3, "three of at most eight rounds restart the server within {BACK_IN_REACH:?}");
}
