//! `etcd+http://`: etcd's JSON gateway (`/v3/...`, keys and values in base64, int64 as
//! strings, proto3 defaults omitted), over `reqwest`. Several endpoints: a request that
//! cannot reach one goes to the next.
//!
//! With auth, the token etcd hands out goes in every request's `Authorization` header; it
//! expires once unused for `--auth-token-ttl` (300 s by default; keep-alives do not use
//! it), and a request etcd answers "invalid auth token" authenticates again and is sent
//! once more (the requests that found it expired together authenticate once), as is a
//! watch etcd cancels at creation for its token. `watch` holds the watch streams.

mod watch;

use crate::sync::LockExt;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Value as Json, json};

use super::super::config::EtcdConfig;
use super::gateway::{JAuth, JError, JKeepAlive, JLease, JLock, JRange, JTxn, b64, range_json, txn_json};
use super::proto::{OpResp, Range, RangeResp, Transport, Txn, TxnResp, WatchStream, each_endpoint};
use crate::error::{Error, Result};
use crate::rt::local;

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
