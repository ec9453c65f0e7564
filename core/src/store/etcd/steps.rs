//! One step at a time per name (per holder of a lock) in this process, over every client
//! of one etcd: steps are optimistic (a txn guarded on revisions, retried when another
//! writer got in between), and contenders of one process would otherwise mostly race
//! each other.

use std::sync::{Arc, OnceLock};

use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::sync::Registry;

/// A turn: held while one step runs.
type Turn = Mutex<()>;

/// The turns of the names of one etcd (its endpoints, as given).
#[derive(Debug, Clone)]
pub(crate) struct Steps {
    store: String,
}

impl Steps {
    pub(crate) fn new(endpoints: &[String]) -> Steps {
        Steps { store: endpoints.join(",") }
    }

    /// Waits for the turn of `key`; the turn lasts as long as the returned guard.
    pub(crate) async fn lock(&self, key: &[u8]) -> OwnedMutexGuard<()> {
        static REG: OnceLock<Registry<(String, Vec<u8>), Turn>> = OnceLock::new();
        let turn: Arc<Turn> =
            REG.get_or_init(Registry::default).get_or_insert_with((self.store.clone(), key.to_vec()), Mutex::default);
        // The owned guard keeps the mutex, and so the registry entry, alive.
        turn.lock_owned().await
    }
}
