//! A Lua script as the server runs it: its source (for `SCRIPT LOAD` and `EVAL`) and its
//! SHA (for `EVALSHA`). The scripts themselves live with their layouts (`layout/`); the
//! command path (`conn/`) runs and reloads them without knowing which they are.

use std::sync::OnceLock;

/// One script: its source (for `SCRIPT LOAD` and `EVAL`) and its SHA (for `EVALSHA`).
pub(crate) struct Lua {
    pub(crate) code: &'static str,
    sha: OnceLock<String>,
}

impl Lua {
    pub(crate) const fn new(code: &'static str) -> Lua {
        Lua { code, sha: OnceLock::new() }
    }

    pub(crate) fn sha(&self) -> &str {
        self.sha.get_or_init(|| redis::Script::new(self.code).get_hash().to_owned())
    }
}

/// Every script of the store, for loading them all at once.
pub(crate) type Scripts = &'static [&'static Lua];
