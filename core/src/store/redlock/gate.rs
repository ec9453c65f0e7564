//! Who goes first: the process-wide gates that make a key's attempts take turns, and
//! each node's turns of the steps still answering after their caller moved on.

use std::sync::{Arc, LazyLock};

use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::key::Key;
use crate::sync::Registry;

/// One gate per store and key in this process: the attempts of its clients on one key
/// take turns, so that they never split the nodes between themselves (a split costs
/// every side a release and a random pause); the others learn `Busy` from a quorum.
///
/// With `holder`, one gate per holder of the key: its acquires and releases take turns,
/// so that every node sees them in the same order. A release of a cancelled attempt's
/// grant running beside the next attempt of the same handle would otherwise land before
/// it on some nodes (a fresh grant there) and after it on others (a re-entry there), and
/// the undo of that split round could not give back the same hold everywhere.
pub(super) fn gate(store: &str, key: &Key, holder: Option<&str>) -> Arc<Mutex<()>> {
    type Gates = Registry<(String, Key, Option<String>), Mutex<()>>;
    static GATES: LazyLock<Gates> = LazyLock::new(Gates::default);
    let id = (store.to_owned(), key.clone(), holder.map(str::to_owned));
    GATES.get_or_insert_with(id, || Mutex::new(()))
}

/// One node's steps on a key still answering after their caller moved on: a later step
/// on that key waits for them, so that it never overtakes them on the node's connection
/// (a release sent before its own acquire would leave a hold).
#[derive(Default)]
pub(super) struct Turns(Registry<Key, Mutex<()>>);

/// The turn of a step that some later step must wait for.
pub(super) type Turn = Arc<Mutex<()>>;

impl Turns {
    /// The turn of the last step on `key` still answering, if any.
    pub(super) fn ahead(&self, key: &Key) -> Option<Turn> {
        self.0.get(key)
    }

    /// Marks the step on `key` as answering in the background until the guard drops.
    pub(super) fn straggling(&self, key: &Key) -> Option<OwnedMutexGuard<()>> {
        self.0.replace(key.clone(), Mutex::new(())).try_lock_owned().ok()
    }

    /// Once every background step has ended.
    pub(super) async fn settled(&self) {
        for t in self.0.live() {
            drop(t.lock().await);
        }
    }
}

/// `step`, once the step holding `ahead` (if any) has ended.
pub(super) async fn after<T>(ahead: Option<Turn>, step: impl Future<Output = T>) -> T {
    if let Some(ahead) = ahead {
        drop(ahead.lock().await);
    }
    step.await
}
