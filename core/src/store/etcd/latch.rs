//! The count-down latch: one JSON value per name, `baton/latch/NAME` (the state machine of
//! `crate::state`), rewritten by a txn guarded on its mod revision and retried on
//! conflict; waiters watch that key.

use std::time::Duration;

use crate::rt::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use super::steps::Steps;
use super::transport::{Compare, Range, Transport, Txn, TxnOp};
use super::watch::KeySub;
use crate::error::{Error, Result};
use crate::key::Key;
use crate::state::KeyState;
use crate::store::Subscription;
use crate::store::stateful::{Op, StateStore};
use std::sync::Arc;

/// How many times a state update re-reads after a conflicting write before giving up.
const STATE_RACES: u32 = 64;

/// The latches of one etcd store.
#[derive(Debug)]
pub(crate) struct Latches {
    pub(crate) t: Arc<dyn Transport>,
    pub(crate) steps: Steps,
}

fn state_key(key: &Key) -> Vec<u8> {
    format!("baton/{}/{}", key.family.as_str(), key.name).into_bytes()
}

/// The clients' wall clock in milliseconds (etcd has no clock to read; the latch has no
/// leases, so nothing depends on it).
fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[async_trait]
impl StateStore for Latches {
    /// Runs `f` on one read of the state and writes the result back in one txn guarded
    /// on the state's mod revision; on a conflicting write, reads and runs it again. One
    /// update at a time per name in this process, so only other processes conflict.
    async fn update<R: Send + 'static>(&self, key: &Key, f: Op<R>) -> Result<R> {
        let skey = state_key(key);
        let _turn = self.steps.lock(&skey).await;
        for attempt in 0..STATE_RACES {
            let (mut s, rev) = load(&*self.t, key).await?;
            let before = s.clone();
            let out = f(&mut s, now_us());
            if s == before {
                return Ok(out);
            }
            let value = serde_json::to_vec(&s).map_err(|e| Error::backend(format!("etcd: {e}")))?;
            let success = vec![TxnOp::Put { key: skey.clone(), value, lease: Some(0) }];
            let txn = Txn { compare: vec![Compare::modified(&skey, rev)], success, failure: vec![] };
            if self.t.txn(txn).await?.succeeded {
                return Ok(out);
            }
            // Another process wrote in between: read again after a short, jittered pause.
            let ms = rand::random_range(0..=u64::from(attempt.min(20)) + 1);
            crate::rt::sleep(Duration::from_millis(ms)).await;
        }
        Err(Error::backend(format!("etcd: too many conflicting updates of {key} in a row")))
    }

    async fn read(&self, key: &Key) -> Result<(KeyState, u64)> {
        Ok((load(&*self.t, key).await?.0, now_us()))
    }

    /// Opened (and confirmed) before the engine's next attempt, from now: that attempt
    /// reads the state, and every later change is on the watch.
    async fn subscribe(&self, key: &Key) -> Result<Box<dyn Subscription>> {
        Ok(Box::new(KeySub::start(self.t.clone(), &state_key(key), false).await?))
    }

    async fn close(&self) {}
}

/// The state of `key`, and the mod revision it was read at (0: none yet).
async fn load(t: &dyn Transport, key: &Key) -> Result<(KeyState, i64)> {
    let r = t.range(Range::key(&state_key(key))).await?;
    match r.kvs.first() {
        None => Ok((KeyState::default(), 0)),
        Some(kv) => {
            let s = serde_json::from_slice(&kv.value)
                .map_err(|e| Error::backend(format!("etcd: the state of {key} is not baton's: {e}")))?;
            Ok((s, kv.mod_revision))
        }
    }
}
