//! Wake-ups through Redis pub/sub: one subscriber connection per client (RESP3 push
//! messages on a `ConnectionManager`, re-subscribed after a reconnect) carries every
//! channel its waiters listen on. Each channel has a local count of wake-ups that its
//! waiters take, so that, as in Redisson's `LockPubSub`, an unlock message `0` on a lock
//! channel wakes one local waiter (no herd: one grant is possible) and any other message
//! wakes them all (a write unlock, a latch opening, permits coming back).

use crate::sync::LockExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::ConnectionManager;
use redis::{PushInfo, PushKind, Value};
use tokio::sync::Semaphore;
use tokio::time::{Instant, sleep_until};

use crate::error::{Error, Result};
use crate::rt::Rt;
use crate::store::Subscription;

/// How long a channel stays subscribed after its last waiter left: a name waited on again
/// soon (a lock handed back and forth) skips the SUBSCRIBE round trip before its wait.
const LINGER: Duration = Duration::from_secs(2);

/// One channel's local state.
#[derive(Debug)]
struct Chan {
    /// Wake-ups not yet taken by a waiter.
    wakes: Semaphore,
    /// Whether the server has us subscribed; held across SUBSCRIBE / UNSUBSCRIBE so that
    /// the commands of one channel are sent in order.
    on: tokio::sync::Mutex<bool>,
    /// A `0` message wakes one waiter (lock channels).
    wake_one: bool,
}

#[derive(Debug)]
struct Entry {
    chan: Arc<Chan>,
    /// Live subscriptions of this process on the channel.
    subs: usize,
}

/// Every channel this client listens on.
#[derive(Debug, Default)]
pub(super) struct Channels {
    map: Mutex<HashMap<Vec<u8>, Entry>>,
}

impl Channels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Entry>> {
        self.map.locked()
    }

    /// A message on `channel`: hands out wake-ups, at most one per subscription.
    fn message(&self, channel: &[u8], payload: &[u8]) {
        let map = self.lock();
        if let Some(e) = map.get(channel) {
            let n = if e.chan.wake_one && payload == b"0" { 1 } else { e.subs };
            give(&e.chan, n, e.subs);
        }
    }

    /// Messages may have been lost (the connection dropped): everyone re-checks.
    fn wake_all(&self) {
        for e in self.lock().values() {
            give(&e.chan, e.subs, e.subs);
        }
    }
}

fn give(chan: &Chan, n: usize, subs: usize) {
    let room = subs.saturating_sub(chan.wakes.available_permits());
    chan.wakes.add_permits(n.min(room));
}

/// The subscriber side of one client.
pub(super) struct Hub {
    conn: Mutex<Option<ConnectionManager>>,
    channels: Arc<Channels>,
    rt: Rt,
    timeout: Duration,
    store: String,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").field("store", &self.store).finish_non_exhaustive()
    }
}

/// The push handler of the subscriber connection: turns messages into wake-ups. It runs
/// on the connection's reader, so it only takes a short lock; it holds the channels
/// weakly (the connection lives inside the hub that owns them).
pub(super) fn push_handler(channels: Weak<Channels>) -> impl Fn(PushInfo) -> std::result::Result<(), ()> {
    move |p: PushInfo| {
        let Some(channels) = channels.upgrade() else { return Err(()) };
        match p.kind {
            PushKind::Message => {
                if let [Value::BulkString(ch), Value::BulkString(payload), ..] = p.data.as_slice() {
                    channels.message(ch, payload);
                }
            }
            PushKind::Disconnection => channels.wake_all(),
            _ => {}
        }
        Ok(())
    }
}

impl Hub {
    pub(super) fn new(
        conn: ConnectionManager,
        channels: Arc<Channels>,
        rt: Rt,
        timeout: Duration,
        store: String,
    ) -> Hub {
        Hub { conn: Mutex::new(Some(conn)), channels, rt, timeout, store }
    }

    fn conn(&self) -> Result<ConnectionManager> {
        self.conn.locked().clone().ok_or_else(Error::closed)
    }

    /// Starts listening on `channel`; returns once the server has confirmed the
    /// subscription (or at once when this process already listens there).
    pub(super) async fn subscribe(self: &Arc<Self>, channel: String, wake_one: bool) -> Result<Box<dyn Subscription>> {
        let channel = channel.into_bytes();
        let chan = {
            let mut map = self.channels.lock();
            let e = map.entry(channel.clone()).or_insert_with(|| Entry {
                chan: Arc::new(Chan { wakes: Semaphore::new(0), on: tokio::sync::Mutex::new(false), wake_one }),
                subs: 0,
            });
            if e.subs == 0 {
                // A lingering channel: wake-ups meant for waiters that left are stale.
                e.chan.wakes.forget_permits(usize::MAX);
            }
            e.subs += 1;
            e.chan.clone()
        };
        // From here on, dropping `sub` (a cancelled subscribe too) gives the place back.
        let sub = RedisSub { hub: self.clone(), channel, chan };
        let mut on = sub.chan.on.lock().await;
        if !*on {
            let mut conn = self.conn()?;
            match tokio::time::timeout(self.timeout, conn.subscribe(&sub.channel)).await {
                Ok(Ok(())) => *on = true,
                Ok(Err(e)) => return Err(super::error(&self.store, e)),
                Err(_) => {
                    return Err(Error::connection(format!(
                        "{}: no answer to SUBSCRIBE in {:?}",
                        self.store, self.timeout
                    )));
                }
            }
        }
        drop(on);
        Ok(Box::new(sub))
    }

    /// A subscription went away; the last one of a channel unsubscribes after `LINGER`
    /// unless a new one came meanwhile (in the background, in order with any new
    /// SUBSCRIBE of the channel).
    fn release(self: &Arc<Self>, channel: &[u8], chan: &Arc<Chan>) {
        let idle = {
            let mut map = self.channels.lock();
            match map.get_mut(channel) {
                Some(e) if Arc::ptr_eq(&e.chan, chan) => {
                    e.subs -= 1;
                    e.subs == 0
                }
                _ => false,
            }
        };
        if idle {
            let (hub, channel, chan) = (self.clone(), channel.to_vec(), chan.clone());
            self.rt.spawn(async move { hub.unsubscribe_idle(channel, chan).await });
        }
    }

    async fn unsubscribe_idle(&self, channel: Vec<u8>, chan: Arc<Chan>) {
        tokio::time::sleep(LINGER).await;
        let mut on = chan.on.lock().await;
        let idle = |map: &HashMap<Vec<u8>, Entry>| {
            map.get(&channel).is_some_and(|e| Arc::ptr_eq(&e.chan, &chan) && e.subs == 0)
        };
        if !idle(&self.channels.lock()) {
            return;
        }
        if *on {
            if let Ok(mut conn) = self.conn() {
                let _ = tokio::time::timeout(self.timeout, conn.unsubscribe(&channel)).await;
            }
            *on = false;
        }
        let mut map = self.channels.lock();
        if idle(&map) {
            map.remove(&channel);
        }
        drop(map);
        drop(on);
    }

    /// Moves to another subscriber connection (the new master after a failover): every
    /// channel with listeners is subscribed there again, and every waiter re-checks (the
    /// messages in between are lost).
    pub(super) fn replace(self: &Arc<Self>, conn: ConnectionManager) {
        {
            let mut slot = self.conn.locked();
            if slot.is_none() {
                return; // closed
            }
            *slot = Some(conn.clone());
        }
        let live: Vec<(Vec<u8>, Arc<Chan>)> =
            self.channels.lock().iter().filter(|(_, e)| e.subs > 0).map(|(k, e)| (k.clone(), e.chan.clone())).collect();
        let timeout = self.timeout;
        let hub = self.clone();
        self.rt.spawn(async move {
            for (channel, chan) in live {
                let mut on = chan.on.lock().await;
                let mut conn = conn.clone();
                *on = matches!(tokio::time::timeout(timeout, conn.subscribe(&channel)).await, Ok(Ok(())));
            }
            hub.channels.wake_all();
        });
        self.channels.wake_all();
    }

    /// Wakes every waiter (they re-check, see the client closed, and stop) and drops the
    /// subscriber connection.
    pub(super) fn close(&self) {
        self.conn.locked().take();
        self.channels.wake_all();
    }
}

/// One waiter's subscription.
struct RedisSub {
    hub: Arc<Hub>,
    channel: Vec<u8>,
    chan: Arc<Chan>,
}

#[async_trait]
impl Subscription for RedisSub {
    async fn changed(&mut self, until: Instant) -> Result<()> {
        tokio::select! {
            permit = self.chan.wakes.acquire() => {
                if let Ok(p) = permit {
                    p.forget();
                }
            }
            _ = sleep_until(until) => {}
        }
        Ok(())
    }
}

impl Drop for RedisSub {
    fn drop(&mut self) {
        self.hub.release(&self.channel, &self.chan);
    }
}
