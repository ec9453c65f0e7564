//! Two small pieces of shared-state machinery every layer uses: a poison-tolerant lock
//! and a registry of weakly held values shared per key.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// `Mutex::lock` that carries on after a panic elsewhere poisoned the lock.
///
/// Every critical section in baton leaves its data consistent at each step (no
/// multi-step invariants are broken mid-way), so a panic in another thread is no reason
/// to fail this one, and a panic must never spread across an FFI boundary.
pub trait LockExt<T: ?Sized> {
    /// Locks, ignoring poisoning.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> LockExt<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Values shared by every user of one key while any of them lives: the per-name memory
/// store, per-store wake-ups, per-key gates and turns. Dead entries are swept when the
/// map has doubled since the last sweep, so an insertion costs O(1) amortised.
pub(crate) struct Registry<K, V> {
    inner: Mutex<Entries<K, V>>,
}

struct Entries<K, V> {
    map: HashMap<K, Weak<V>>,
    sweep_at: usize,
}

impl<K, V> std::fmt::Debug for Registry<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("entries", &self.inner.locked().map.len()).finish()
    }
}

impl<K: Eq + Hash, V> Default for Registry<K, V> {
    fn default() -> Self {
        Registry { inner: Mutex::new(Entries { map: HashMap::new(), sweep_at: 64 }) }
    }
}

impl<K: Eq + Hash, V> Entries<K, V> {
    fn insert(&mut self, key: K, v: &Arc<V>) {
        if self.map.len() >= self.sweep_at {
            self.map.retain(|_, w| w.strong_count() > 0);
            self.sweep_at = (self.map.len() * 2).max(64);
        }
        self.map.insert(key, Arc::downgrade(v));
    }
}

impl<K: Eq + Hash, V> Registry<K, V> {
    /// The live value of `key`, or a new one from `make`, registered for later callers.
    pub(crate) fn get_or_insert_with(&self, key: K, make: impl FnOnce() -> V) -> Arc<V> {
        let mut e = self.inner.locked();
        if let Some(v) = e.map.get(&key).and_then(Weak::upgrade) {
            return v;
        }
        let v = Arc::new(make());
        e.insert(key, &v);
        v
    }

    /// Registers `v` as the value of `key`, in place of any earlier one.
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))] // used by redlock:// only
    pub(crate) fn replace(&self, key: K, v: V) -> Arc<V> {
        let v = Arc::new(v);
        self.insert(key, &v);
        v
    }

    /// Registers `v`, which the caller keeps alive, as the value of `key`.
    pub(crate) fn insert(&self, key: K, v: &Arc<V>) {
        self.inner.locked().insert(key, v);
    }

    /// Forgets `key`.
    pub(crate) fn remove(&self, key: &K) {
        self.inner.locked().map.remove(key);
    }

    /// Takes every entry out: the live values.
    pub(crate) fn drain(&self) -> Vec<Arc<V>> {
        self.inner.locked().map.drain().filter_map(|(_, w)| w.upgrade()).collect()
    }

    /// The live value of `key`, if any.
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))] // used by redlock:// only
    pub(crate) fn get(&self, key: &K) -> Option<Arc<V>> {
        self.inner.locked().map.get(key).and_then(Weak::upgrade)
    }

    /// Every live value.
    #[cfg_attr(not(feature = "redlock"), allow(dead_code))] // used by redlock:// only
    pub(crate) fn live(&self) -> Vec<Arc<V>> {
        self.inner.locked().map.values().filter_map(Weak::upgrade).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_shares_while_alive_and_forgets_after() {
        let reg: Registry<&str, u32> = Registry::default();
        let a = reg.get_or_insert_with("k", || 1);
        let b = reg.get_or_insert_with("k", || 2);
        assert!(Arc::ptr_eq(&a, &b));
        drop((a, b));
        assert!(reg.get(&"k").is_none());
        assert_eq!(*reg.get_or_insert_with("k", || 3), 3);
    }

    #[test]
    fn inserted_values_are_drained_while_alive_and_removed_on_request() {
        let reg: Registry<u64, u32> = Registry::default();
        let (a, b) = (Arc::new(1), Arc::new(2));
        reg.insert(1, &a);
        reg.insert(2, &b);
        reg.insert(3, &Arc::new(3)); // dropped at once: not drained
        reg.remove(&2);
        assert_eq!(reg.drain().iter().map(|v| **v).collect::<Vec<_>>(), vec![1]);
        assert!(reg.get(&1).is_none(), "drained");
        drop(b);
    }

    #[test]
    fn locked_survives_poisoning() {
        let m = Arc::new(Mutex::new(5));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*m.locked(), 5);
    }
}
