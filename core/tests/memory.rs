//! The behaviour suite on `memory://` (one named in-process store per test).

mod behaviour;

use behaviour::Store;

fn store() -> Store {
    Store { url: format!("memory://{}", uuid::Uuid::new_v4().simple()), keep: None }
}

behaviour_suite!(crate::store);
