//! The behaviour suite on the 3-member ZooKeeper ensemble of `scripts/services`
//! (`BATON_TEST_ZK_ENSEMBLE_URL`): every write is a quorum write through whichever member
//! the session talks to.
#![cfg(feature = "zookeeper")]

use baton_testkit::{behaviour, behaviour_suite, cross_process_suite};
use behaviour::Store;

fn store() -> Store {
    Store::from_env("BATON_TEST_ZK_ENSEMBLE_URL", "ZooKeeper ensemble", "")
}

// Every check of `behaviour_suite!` but the two whose "dead" waiter is a runtime shut
// down (`fair::vanished_waiter_is_skipped`, `rw::vanished_writer_unblocks_readers`): the
// ZooKeeper client closes its session when its last handle goes while its task can still
// run, and the server then deletes the waiter's node at once, so those checks race with
// the runtime's shutdown. A waiter that really vanishes (its node left behind) is checked
// in `zk_layout.rs`; a SIGKILLed holder process by `cross_process_suite!`.
behaviour_suite!(crate::ensemble::store; except vanished, election);
cross_process_suite!(crate::ensemble::store);

/// One client per member of the ensemble (`zk://h1,h2,h3` split).
async fn one_client_per_member() -> Vec<baton::Client> {
    let url = std::env::var("BATON_TEST_ZK_ENSEMBLE_URL").expect("BATON_TEST_ZK_ENSEMBLE_URL (scripts/services)");
    let hosts = url.strip_prefix("zk://").expect("a zk:// url");
    let mut out = Vec::new();
    for h in hosts.split(',') {
        out.push(baton::Client::connect(&format!("zk://{h}")).await.unwrap());
    }
    out
}

// A follower answers reads from its own copy: a node written through one member may not be
// on another yet. Release by id, lease update and a shared owner's re-entry and release,
// each right after the write through another member, must still find the node (they read
// again after a `sync` when they find none). 30 rounds each: a stale read is a matter of
// milliseconds, so most rounds would pass without the `sync`; one that does not fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_one_member_are_found_through_another() {
    baton_testkit::needs_server!("BATON_TEST_ZK_ENSEMBLE_URL");
    use baton::LockOptions;
    use baton_testkit::behaviour::unique;
    use std::time::Duration;

    let cs = one_client_per_member().await;
    for round in 0..30 {
        let (a, b) = (&cs[round % 3], &cs[(round + 1) % 3]);
        let name = unique("psem-member");
        let p = a.permit_semaphore(&name, 1).acquire().await.unwrap();
        let id = p.id().to_owned();
        b.permit_semaphore(&name, 1).update_lease(&id, Duration::from_secs(30)).await.unwrap();
        b.permit_semaphore(&name, 1).release(&id).await.unwrap();
        std::mem::forget(p);
        assert_eq!(a.permit_semaphore(&name, 1).available().await.unwrap(), 1, "round {round}");

        let name = unique("owner-member");
        let owner = LockOptions::new().owner(unique("job"));
        let g1 = a.lock_with(&name, owner.clone()).acquire().await.unwrap();
        let g2 = b.lock_with(&name, owner.clone()).try_acquire().await.unwrap().expect("the shared owner re-enters");
        assert_eq!(g1.token(), g2.token(), "round {round}");
        let info = a.lock(&name).inspect().await.unwrap();
        assert!(info.waiters.is_empty(), "round {round}: a second node for one owner: {info:?}");
        g2.release().await.unwrap();
        g1.release().await.unwrap();
        assert!(a.lock(&name).try_acquire().await.unwrap().is_some(), "round {round}");
    }
}
