//! The behaviour suite on `memory://` (one named in-process store per test).

use baton_testkit::{behaviour, behaviour_suite};
use behaviour::Store;

fn store() -> Store {
    Store { url: format!("memory://{}", uuid::Uuid::new_v4().simple()), keep: None }
}

behaviour_suite!(crate::memory::store);
