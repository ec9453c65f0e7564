//! `etcd+http://`: etcd's JSON gateway (`/v3/...`, keys and values in base64, int64 as
//! strings, proto3 defaults omitted), over `reqwest`. Several endpoints: a request that
//! cannot reach one goes to the next.
//!
//! With auth, the token etcd hands out goes in every request's `Authorization` header; it
//! expires once unused for `--auth-token-ttl` (300 s by default; keep-alives do not use
//! it), and a request etcd answers "invalid auth token" authenticates again and is sent
//! once more (the requests that found it expired together authenticate once), as is a
//! watch etcd cancels at creation for its token.

use crate::sync::LockExt;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::rt::Instant;
use async_trait::async_trait;
use futures_util::{Stream, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::{Value as Json, json};

use super::super::config::EtcdConfig;
use super::gateway::{JAuth, JError, JKeepAlive, JLease, JLock, JRange, JTxn, JWatchLine, b64, range_json, txn_json};
use super::proto::{Event, OpResp, Range, RangeResp, Transport, Txn, TxnResp, WatchStream, each_endpoint};
use crate::error::{Error, Result};
use crate::rt::{Local, local};

/// The JSON-gateway transport.
pub(crate) struct Http {
    client: reqwest::Client,
    /// `http://host:port`, one per endpoint.
    endpoints: Vec<String>,
    current: AtomicUsize,
    /// `etcd+http://…` with the password redacted: the prefix of every message.
    store: String,
    timeout: Duration,
    /// User and password, when the URL has them (etcd auth).
    auth: Option<(String, String)>,
    token: Mutex<Option<String>>,
    /// One authentication at a time after an expired token (`authenticate_again`).
    reauth: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http").field("store", &self.store).finish_non_exhaustive()
    }
}

/// The HTTP client: hyper with rustls natively.
#[cfg(not(target_family = "wasm"))]
fn client(cfg: &EtcdConfig) -> Result<reqwest::Client> {
    let EtcdConfig { store, connect_timeout, tls, .. } = cfg;
    let mut builder = reqwest::Client::builder()
        .connect_timeout(*connect_timeout)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(60));
    if tls.on {
        builder = builder.use_rustls_tls().https_only(true);
    }
    if let Some(pem) = &tls.ca {
        // `?ca=` replaces the system's roots, as on `etcds://` and `rediss://`.
        let ca = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| Error::invalid_argument(format!("{store}: option `ca`: {e}")))?;
        builder = ca.into_iter().fold(builder.tls_built_in_root_certs(false), |b, c| b.add_root_certificate(c));
    }
    builder.build().map_err(|e| Error::connection(format!("{store}: cannot build an HTTP client: {e}")))
}

/// The HTTP client on wasm32: the runtime's `fetch`, which owns connections and TLS
/// (the page's trusted roots; a `ca` of our own cannot be given to it).
#[cfg(target_family = "wasm")]
fn client(cfg: &EtcdConfig) -> Result<reqwest::Client> {
    if cfg.tls.ca.is_some() {
        return Err(Error::unsupported(format!("{}: option `ca` is not available to fetch", cfg.store)));
    }
    // fetch has no connect timeout of its own: each request's timeout bounds the connect.
    let _ = cfg.connect_timeout;
    Ok(reqwest::Client::new())
}

impl Http {
    /// Connects to `endpoints` (`host:port`) and checks that one answers.
    pub(crate) async fn connect(cfg: &EtcdConfig) -> Result<Http> {
        let EtcdConfig { endpoints, store, timeout, tls, .. } = cfg.clone();
        let auth = cfg.auth.clone().map(|c| (c.user, c.password));
        let client = client(cfg)?;
        let scheme = tls.url_scheme();
        let http = Http {
            client,
            endpoints: endpoints.into_iter().map(|e| format!("{scheme}://{e}")).collect(),
            current: AtomicUsize::new(0),
            store,
            timeout,
            auth,
            token: Mutex::new(None),
            reauth: tokio::sync::Mutex::new(()),
        };
        if http.auth.is_some() {
            http.authenticate().await?;
        }
        // One read proves the endpoint (and the credentials) work.
        http.range(Range::key(b"baton/ping")).await?;
        Ok(http)
    }

    async fn authenticate(&self) -> Result<()> {
        let Some((user, password)) = &self.auth else { return Ok(()) };
        let body = json!({ "name": user, "password": password });
        let a: JAuth = self.post_once("/v3/auth/authenticate", &body, false).await?;
        *self.token.locked() = Some(a.token);
        Ok(())
    }

    fn token(&self) -> Option<String> {
        self.token.locked().clone()
    }

    /// Authenticates again after the token `stale` was refused, unless another request
    /// did meanwhile (the token is not `stale` any more): requests that found the token
    /// expired together authenticate once.
    async fn authenticate_again(&self, stale: Option<String>) -> Result<()> {
        let _turn = self.reauth.lock().await;
        if self.token() != stale {
            return Ok(());
        }
        self.authenticate().await
    }

    /// POSTs `body` to `path`, moving to the next endpoint when one cannot be reached,
    /// and authenticating again once when the token expired.
    async fn post<T: DeserializeOwned + Default>(&self, path: &str, body: &Json) -> Result<T> {
        let sent_with = self.token();
        match self.post_once(path, body, true).await {
            Err(e) if self.auth.is_some() && token_expired(e.message()) => {
                self.authenticate_again(sent_with).await?;
                self.post_once(path, body, true).await
            }
            r => r,
        }
    }

    async fn post_once<T: DeserializeOwned + Default>(&self, path: &str, body: &Json, with_token: bool) -> Result<T> {
        each_endpoint(&self.current, self.endpoints.len(), &self.store, |idx| self.post_to(idx, path, body, with_token))
            .await
    }

    fn request(&self, idx: usize, path: &str, body: &Json, with_token: bool) -> reqwest::RequestBuilder {
        let mut rb = self.client.post(format!("{}{path}", self.endpoints[idx])).json(body);
        if with_token && let Some(t) = self.token() {
            rb = rb.header("Authorization", t);
        }
        rb
    }

    async fn post_to<T: DeserializeOwned + Default>(
        &self,
        idx: usize,
        path: &str,
        body: &Json,
        with_token: bool,
    ) -> Result<T> {
        let request = self.request(idx, path, body, with_token).timeout(self.timeout);
        let (status, bytes) = local(async move {
            let resp = request.send().await?;
            Ok((resp.status(), resp.bytes().await?))
        })
        .await
        .map_err(|e| self.transport_error(idx, e))?;
        if !status.is_success() {
            return Err(self.answer_error(idx, status.as_u16(), &bytes));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::backend(format!("{}: unexpected answer from {}{path}: {e}", self.store, self.endpoints[idx]))
        })
    }

    fn transport_error(&self, idx: usize, e: reqwest::Error) -> Error {
        // reqwest's messages name the endpoint (never the URL's password, which is not in it);
        // the cause (a refused connection, an untrusted certificate) is at the chain's end.
        let mut cause: &dyn std::error::Error = &e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        let why = if std::ptr::addr_eq(cause, &e) { String::new() } else { format!(" ({cause})") };
        Error::connection(format!("{}: cannot reach {}: {e}{why}", self.store, self.endpoints[idx]))
    }

    fn answer_error(&self, idx: usize, status: u16, body: &[u8]) -> Error {
        let e: JError = serde_json::from_slice(body).unwrap_or_default();
        let what = if e.error.is_empty() { e.message } else { e.error };
        let msg = format!("{}: {} answered {status}: {what} (code {})", self.store, self.endpoints[idx], e.code);
        // 14: Unavailable (no leader, stopping member): worth another endpoint.
        if e.code == 14
            || status == 503
            || status == 401
            || super::auth_refused(i32::try_from(e.code).unwrap_or(0), &what)
        {
            Error::connection(msg)
        } else {
            Error::backend(msg)
        }
    }
}

#[async_trait]
impl Transport for Http {
    async fn range(&self, r: Range) -> Result<RangeResp> {
        let j: JRange = self.post("/v3/kv/range", &range_json(&r)).await?;
        Ok(j.into_resp(0))
    }

    async fn txn(&self, t: Txn) -> Result<TxnResp> {
        let j: JTxn = self.post("/v3/kv/txn", &txn_json(&t)).await?;
        let revision = j.header.revision;
        let responses = j
            .responses
            .into_iter()
            .map(|r| {
                if let Some(rr) = r.response_range {
                    OpResp::Range(rr.into_resp(revision))
                } else if r.response_delete_range.is_some() {
                    OpResp::Delete
                } else {
                    let _ = r.response_put;
                    OpResp::Put
                }
            })
            .collect();
        Ok(TxnResp { succeeded: j.succeeded, revision, responses })
    }

    async fn lease_grant(&self, ttl_s: i64) -> Result<i64> {
        let j: JLease = self.post("/v3/lease/grant", &json!({ "TTL": ttl_s.to_string() })).await?;
        if j.id == 0 {
            return Err(Error::backend(format!("{}: lease grant returned no id", self.store)));
        }
        Ok(j.id)
    }

    async fn lease_keepalive(&self, id: i64) -> Result<i64> {
        let j: JKeepAlive = self.post("/v3/lease/keepalive", &json!({ "ID": id.to_string() })).await?;
        Ok(j.result.map_or(0, |r| r.ttl))
    }

    async fn lease_ttl(&self, id: i64) -> Result<i64> {
        match self.post::<JLease>("/v3/lease/timetolive", &json!({ "ID": id.to_string() })).await {
            Ok(j) => Ok(j.ttl),
            Err(e) if e.message().contains("lease not found") => Ok(-1),
            Err(e) => Err(e),
        }
    }

    async fn lease_revoke(&self, id: i64) -> Result<()> {
        match self.post::<Json>("/v3/lease/revoke", &json!({ "ID": id.to_string() })).await {
            Err(e) if e.message().contains("lease not found") => Ok(()),
            r => r.map(drop),
        }
    }

    async fn lock(&self, name: &[u8], lease: i64, wait: Duration) -> Result<Option<Vec<u8>>> {
        let body = json!({ "name": b64(name), "lease": lease.to_string() });
        match crate::rt::timeout(wait, self.post::<JLock>("/v3/lock/lock", &body)).await {
            Err(_) => Ok(None),
            Ok(r) => Ok(Some(r?.key)),
        }
    }

    async fn unlock(&self, key: &[u8]) -> Result<()> {
        self.post::<Json>("/v3/lock/unlock", &json!({ "key": b64(key) })).await.map(drop)
    }

    async fn watch(&self, r: Range, after: Option<i64>) -> Result<Box<dyn WatchStream>> {
        let sent_with = self.token();
        match self.watch_once(&r, after).await? {
            Ok(w) => Ok(w),
            // etcd checks a watch's token when it creates the watch and cancels a watch
            // created with an expired one (a created and cancelled answer, not a failed
            // call; etcd 3.4.23 gives "invalid auth token" as the reason, older releases
            // "permission denied"): authenticated again, it is opened once more.
            Err(why) if self.auth.is_some() && super::token_refused(&why) => {
                self.authenticate_again(sent_with).await?;
                self.watch_once(&r, after).await?.map_err(|why| self.watch_refused(&why))
            }
            Err(why) => Err(self.watch_refused(&why)),
        }
    }
}

/// Whether an error is etcd's answer to an expired (or unknown) token.
fn token_expired(message: &str) -> bool {
    message.contains("auth token")
}

impl Http {
    fn watch_refused(&self, why: &str) -> Error {
        let msg = format!("{}: watch refused: {why}", self.store);
        if super::auth_refused(0, why) { Error::connection(msg) } else { Error::backend(msg) }
    }

    /// Opens a watch and waits until etcd confirms it (bounded by the request timeout);
    /// events that come with or before the confirmation are kept for the first `next`.
    /// `Ok(Err(reason))`: etcd cancelled it at creation.
    async fn watch_once(
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
                    if !self.created && super::token_refused(&err.to_string()) {
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
        assert!(super::super::token_refused(why));
        OPEN_WATCHES.fetch_add(1, Ordering::AcqRel);
        let mut ok = watch(&[r#"{"result":{"created":true}}"#, r#"{"result":{"events":[{"type":"DELETE"}]}}"#]);
        assert!(ok.next(until).await.unwrap().is_none());
        assert!(ok.created && ok.refused.is_none());
        assert!(ok.next(until).await.unwrap().unwrap()[0].delete);
    }
}
