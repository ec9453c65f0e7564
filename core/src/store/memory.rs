//! `memory://`: the reference store, in this process only. Every `Client` connected to
//! `memory://NAME` in one process shares the store called NAME (empty name included), so
//! tests can contend from several clients as they would on a server.

use crate::sync::{LockExt, Registry};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::rt::Instant;
use async_trait::async_trait;
use tokio::sync::watch;

use super::stateful::{Op, StateStore};
use super::{Subscription, WatchSub};
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::KeyState;
use crate::store::FenceOps;
use crate::url::StoreUrl;

#[derive(Debug, Default)]
struct Shared {
    keys: Mutex<HashMap<Key, Entry>>,
    /// `Client::fence`'s values: key → (value, token of its write).
    fenced: Mutex<HashMap<String, (String, u64)>>,
}

#[derive(Debug)]
struct Entry {
    state: KeyState,
    /// Bumped on every change; subscribers watch it.
    version: watch::Sender<u64>,
}

impl Entry {
    fn new() -> Entry {
        Entry { state: KeyState::default(), version: watch::Sender::new(0) }
    }
}

/// The in-process store.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    shared: Arc<Shared>,
    epoch: Instant,
}

/// Stores by name, kept while some client uses them.
fn registry() -> &'static Registry<String, Shared> {
    static REG: OnceLock<Registry<String, Shared>> = OnceLock::new();
    REG.get_or_init(Registry::default)
}

/// The clock of every memory store: one epoch for the whole process.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl Memory {
    pub(crate) fn open(url: &StoreUrl) -> Result<Memory> {
        if !url.path().is_empty() && url.path() != "/" {
            return Err(Error::invalid_url(format!(
                "memory URLs take a store name, not a path: use memory:// or memory://NAME, not {url}"
            )));
        }
        url.check_options(crate::url::COMMON_OPTIONS)?;
        let shared = registry().get_or_insert_with(url.hosts().to_owned(), Shared::default);
        Ok(Memory { shared, epoch: epoch() })
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn with_entry<R>(&self, key: &Key, f: impl FnOnce(&mut Entry) -> R) -> R {
        let mut keys = self.shared.keys.locked();
        f(keys.entry(key.clone()).or_insert_with(Entry::new))
    }
}

#[async_trait]
impl StateStore for Memory {
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let now = self.now_us();
        let mut keys = self.shared.keys.locked();
        let e = keys.entry(key.clone()).or_insert_with(Entry::new);
        let before = e.state.clone();
        let r = f(&mut e.state, now);
        if crate::state::frees(&before, &e.state) {
            e.version.send_modify(|v| *v += 1);
        }
        // A free key nobody watches goes, as on the SQL stores: names used once leave
        // nothing behind. A watched one stays, or its watchers would miss later changes.
        if e.version.receiver_count() == 0 && e.state.forgettable(now) {
            keys.remove(key);
        }
        Ok(r)
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        let now = self.now_us();
        Ok((self.shared.keys.locked().get(key).map(|e| e.state.clone()).unwrap_or_default(), now))
    }

    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(WatchSub(self.with_entry(key, |e| e.version.subscribe()))))
    }

    fn fence(&self) -> Option<&dyn FenceOps> {
        Some(self)
    }
}

#[async_trait]
impl FenceOps for Memory {
    async fn write(&self, key: &str, value: &str, token: u64) -> Result<bool> {
        let mut fenced = self.shared.fenced.locked();
        if fenced.get(key).is_some_and(|(_, seen)| *seen > token) {
            return Ok(false);
        }
        fenced.insert(key.to_owned(), (value.to_owned(), token));
        Ok(true)
    }

    async fn read(&self, key: &str) -> Result<Option<(String, u64)>> {
        Ok(self.shared.fenced.locked().get(key).cloned())
    }
}
