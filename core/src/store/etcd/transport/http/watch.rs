//! Watches over the gateway: one `POST /v3/watch` whose answer is a stream of
//! newline-delimited results, confirmed before it is handed out, and a process-wide cap
//! on how many are open (a browser's connection limit).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use async_trait::async_trait;
use futures_util::{Stream, StreamExt};
use serde_json::json;

use super::Http;
use crate::error::{Error, Result};
use crate::rt::{Instant, Local, local};
use crate::store::etcd::transport::gateway::{JWatchLine, range_json};
use crate::store::etcd::transport::proto::{Event, Range, WatchStream};
use crate::store::etcd::transport::{auth_refused, token_refused};

impl Http {
    pub(super) fn watch_refused(&self, why: &str) -> Error {
        let msg = format!("{}: watch refused: {why}", self.store);
        if auth_refused(0, why) { Error::connection(msg) } else { Error::backend(msg) }
    }

    /// Opens a watch and waits until etcd confirms it (bounded by the request timeout);
    /// events that come with or before the confirmation are kept for the first `next`.
    /// `Ok(Err(reason))`: etcd cancelled it at creation.
    pub(super) async fn watch_once(
        &self,
        r: &Range,
        after: Option<i64>,
    ) -> Result<std::result::Result<Box<dyn WatchStream>, String>> {
        let slot = WatchSlot::take(&self.store)?;
        let mut create = range_json(r);
        if let Some(o) = create.as_object_mut() {
            o.remove("sort_order");
            o.remove("sort_target");
        }
        if let Some(after) = after {
            create["start_revision"] = json!((after + 1).to_string());
        }
        let body = json!({ "create_request": create });
        let idx = self.current.load(Ordering::Relaxed) % self.endpoints.len();
        // No overall timeout: the answer is a stream that lasts as long as the watch.
        let resp = crate::rt::timeout(self.timeout, local(self.request(idx, "/v3/watch", &body, true).send()))
            .await
            .map_err(|_| Error::connection(format!("{}: watch request timed out", self.store)))?
            .map_err(|e| self.transport_error(idx, e))
            .map(Local)?;
        if !resp.0.status().is_success() {
            let status = resp.0.status().as_u16();
            let bytes = local(resp.0.bytes()).await.unwrap_or_default();
            return Err(self.answer_error(idx, status, &bytes));
        }
        let body = Local(Box::pin(resp.0.bytes_stream()));
        let mut w = HttpWatch {
            body,
            _slot: slot,
            buf: Vec::new(),
            store: self.store.clone(),
            created: false,
            refused: None,
            pending: None,
        };
        let until = Instant::now() + self.timeout;
        while !w.created && w.pending.is_none() {
            match w.next(until).await {
                Ok(Some(evs)) => w.pending = Some(evs),
                Ok(None) if w.created => {}
                Ok(None) => return Err(Error::connection(format!("{}: watch not confirmed in time", self.store))),
                Err(e) => return w.refused.take().map(Err).ok_or(e),
            }
        }
        Ok(Ok(Box::new(w)))
    }
}

/// How many watch streams may be open at once. A browser opens at most 6 HTTP/1.1
/// connections to one host for the whole page, and each watch holds one for as long as it
/// lasts: past 3 the requests that would release a lock queue behind the watches. A watch
/// refused here is a failed watch, and the waiter polls instead (`watch::pause`).
const MAX_WATCHES: usize = if cfg!(target_family = "wasm") { 3 } else { usize::MAX };

/// Open watch streams of this process (the browser's connection limit is per page).
static OPEN_WATCHES: AtomicUsize = AtomicUsize::new(0);

/// One of the [`MAX_WATCHES`], given back when the watch ends.
struct WatchSlot;

impl WatchSlot {
    fn take(store: &str) -> Result<WatchSlot> {
        OPEN_WATCHES
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_WATCHES).then_some(n + 1))
            .map(|_| WatchSlot)
            .map_err(|n| Error::connection(format!("{store}: {n} watches open already: polling instead")))
    }
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        OPEN_WATCHES.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A watch over the gateway: newline-delimited `{"result": {...}}` objects, read from the
/// response body as a stream (hyper's natively, a `ReadableStream` under `fetch`).
struct HttpWatch<S> {
    body: S,
    _slot: WatchSlot,
    buf: Vec<u8>,
    store: String,
    /// etcd confirmed the watch.
    created: bool,
    /// Why etcd cancelled the watch at its creation (an expired token, say).
    refused: Option<String>,
    /// Events that came before the first `next`.
    pending: Option<Vec<Event>>,
}

#[async_trait]
impl<S, B> WatchStream for HttpWatch<S>
where
    S: Stream<Item = reqwest::Result<B>> + Unpin + Send,
    B: AsRef<[u8]>,
{
    async fn next(&mut self, until: Instant) -> Result<Option<Vec<Event>>> {
        if let Some(evs) = self.pending.take() {
            return Ok(Some(evs));
        }
        // Bounded by `until`: each turn either parses a buffered line or waits for bytes.
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let line = line.trim_ascii();
                if line.is_empty() {
                    continue;
                }
                let l: JWatchLine = serde_json::from_slice(line)
                    .map_err(|e| Error::backend(format!("{}: unexpected watch answer: {e}", self.store)))?;
                if let Some(err) = l.error {
                    if !self.created && token_refused(&err.to_string()) {
                        self.refused = Some(err.to_string());
                    }
                    return Err(Error::connection(format!("{}: watch failed: {err}", self.store)));
                }
                let Some(res) = l.result else { continue };
                // A refusal comes as a created and cancelled watch: never a confirmation.
                if res.canceled && !self.created {
                    self.refused = Some(res.cancel_reason.clone());
                }
                if res.created && !self.created && !res.canceled {
                    self.created = true;
                    if res.events.is_empty() {
                        // The confirmation: the caller waiting for it returns.
                        return Ok(None);
                    }
                }
                if res.canceled {
                    return Err(Error::backend(format!(
                        "{}: watch canceled: {} (compacted at {})",
                        self.store, res.cancel_reason, res.compact_revision
                    )));
                }
                if !res.events.is_empty() {
                    let evs = res.events.into_iter().map(|e| Event { delete: e.kind == "DELETE" }).collect();
                    return Ok(Some(evs));
                }
                continue;
            }
            match crate::rt::timeout_at(until, self.body.next()).await {
                Err(_) => return Ok(None),
                Ok(Some(Ok(bytes))) => self.buf.extend_from_slice(bytes.as_ref()),
                Ok(None) => return Err(Error::connection(format!("{}: the watch stream ended", self.store))),
                Ok(Some(Err(e))) => return Err(Error::connection(format!("{}: watch stream: {e}", self.store))),
            }
        }
    }
}

impl<S: Stream + Unpin> Stream for Local<S> {
    type Item = S::Item;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        Pin::new(&mut self.0).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn watch(lines: &[&str]) -> HttpWatch<impl Stream<Item = reqwest::Result<Vec<u8>>> + Unpin + Send + use<>> {
        let chunks: Vec<reqwest::Result<Vec<u8>>> = lines.iter().map(|l| Ok(format!("{l}\n").into_bytes())).collect();
        HttpWatch {
            body: futures_util::stream::iter(chunks),
            _slot: WatchSlot,
            buf: Vec::new(),
            store: "etcd etcd+http://x".into(),
            created: false,
            refused: None,
            pending: None,
        }
    }

    /// etcd answers a watch created with an expired token with a created and cancelled
    /// result: a refusal, never the confirmation (it was taken for one, and the watch
    /// stayed silent).
    #[tokio::test]
    async fn a_watch_cancelled_at_creation_is_refused() {
        OPEN_WATCHES.fetch_add(1, Ordering::AcqRel);
        let why = "rpc error: code = Unauthenticated desc = etcdserver: invalid auth token";
        let line = format!(r#"{{"result":{{"created":true,"canceled":true,"cancel_reason":"{why}"}}}}"#);
        let mut w = watch(&[&line]);
        let until = Instant::now() + Duration::from_secs(1);
        assert!(w.next(until).await.is_err());
        assert!(!w.created);
        assert_eq!(w.refused.as_deref(), Some(why));
        assert!(token_refused(why));
        OPEN_WATCHES.fetch_add(1, Ordering::AcqRel);
        let mut ok = watch(&[r#"{"result":{"created":true}}"#, r#"{"result":{"events":[{"type":"DELETE"}]}}"#]);
        assert!(ok.next(until).await.unwrap().is_none());
        assert!(ok.created && ok.refused.is_none());
        assert!(ok.next(until).await.unwrap().unwrap()[0].delete);
    }
}
