//! `etcd://`: etcd's gRPC API through the `etcd-client` crate's generated clients, over
//! one HTTP/2 connection an endpoint: `h2` on plain HTTP, tonic's channel over TLS;
//! user/password auth.
//!
//! etcd's auth tokens expire (`--auth-token-ttl`, 300 s by default) once unused that long,
//! and lease keep-alives do not use them: a call etcd answers "invalid auth token" is
//! authenticated again and sent once more (etcd-client's `with_auto_token_refresh`, one
//! authentication for the calls that found the token expired together), on both
//! channels; a watch etcd refuses for its token (a cancellation at creation, not a
//! failed call) is opened once more after a new authentication.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use etcd_client::{
    Certificate, Client, Compare as ECompare, CompareOp, ConnectOptions, EventType, GetOptions, LockOptions,
    PutOptions, SortOrder, SortTarget, TlsOptions, Txn as ETxn, TxnOp as ETxnOp, TxnOpResponse, WatchOptions,
};
use tokio::sync::OnceCell;
use tokio::time::Instant;

use super::super::config::EtcdConfig;
use super::proto::{
    Event, Kv, OpResp, Range, RangeResp, Target, Transport, Txn, TxnOp, TxnResp, WatchStream, each_endpoint,
};
use crate::error::{Error, Result};

/// HTTP/2 pings: every 10 s, answered within 5 s, or the connection counts as dead.
const KEEP_ALIVE: (Duration, Duration) = (Duration::from_secs(10), Duration::from_secs(5));

/// The gRPC transport: one client per endpoint, connected on first use; a call that
/// cannot reach one endpoint goes to the next (etcd-client's own balanced channel keeps
/// sending to a dead member).
pub(crate) struct Grpc {
    endpoints: Vec<String>,
    clients: Vec<OnceCell<Client>>,
    /// `http`, or `https` over TLS.
    scheme: &'static str,
    current: AtomicUsize,
    opts: ConnectOptions,
    /// `etcd://…` with the password redacted: the prefix of every message.
    store: String,
    timeout: Duration,
    connect_timeout: Duration,
    /// The URL has a user: etcd's auth is on.
    with_auth: bool,
    /// The authentications refused watches asked for, one at a time (`reauth_turn`):
    /// watches refused together authenticate once.
    reauths: AtomicU64,
    reauth_turn: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Grpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grpc").field("store", &self.store).finish_non_exhaustive()
    }
}

impl Grpc {
    pub(crate) async fn connect(cfg: &EtcdConfig) -> Result<Grpc> {
        let EtcdConfig { endpoints, store, timeout, connect_timeout, tls, .. } = cfg.clone();
        let auth = cfg.auth.clone().map(|c| (c.user, c.password));
        let mut opts = ConnectOptions::new()
            .with_timeout(timeout)
            .with_connect_timeout(connect_timeout)
            .with_keep_alive(KEEP_ALIVE.0, KEEP_ALIVE.1);
        let with_auth = auth.is_some();
        if let Some((user, password)) = auth {
            opts = opts.with_user(user, password).with_auto_token_refresh(true);
        }
        let scheme = tls.url_scheme();
        if tls.on {
            let roots = match tls.ca {
                Some(pem) => TlsOptions::new().ca_certificate(Certificate::from_pem(pem)),
                None => TlsOptions::new().with_native_roots(),
            };
            opts = opts.with_tls(roots);
        }
        let g = Grpc {
            scheme,
            clients: endpoints.iter().map(|_| OnceCell::new()).collect(),
            endpoints,
            current: AtomicUsize::new(0),
            opts,
            store,
            timeout,
            connect_timeout,
            with_auth,
            reauths: AtomicU64::new(0),
            reauth_turn: tokio::sync::Mutex::new(()),
        };
        // One read proves an endpoint (and the credentials) work.
        g.range(Range::key(b"baton/ping")).await?;
        Ok(g)
    }

    fn err(&self, e: etcd_client::Error) -> Error {
        let msg = format!("{}: {}", self.store, redact(&e));
        match &e {
            etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => Error::connection(msg),
            // gRPC codes 14 Unavailable (no leader, member stopping, refused), 4
            // DeadlineExceeded, 1 Cancelled: the store could not answer, not a refusal.
            etcd_client::Error::GRpcStatus(s) if matches!(i32::from(s.code()), 1 | 4 | 14) => Error::connection(msg),
            // tonic reports a connection reset mid-call (a member killed) as Unknown.
            etcd_client::Error::GRpcStatus(s) if i32::from(s.code()) == 2 && s.message() == "transport error" => {
                Error::connection(msg)
            }
            etcd_client::Error::GRpcStatus(s) if super::auth_refused(i32::from(s.code()), s.message()) => {
                Error::connection(msg)
            }
            _ => Error::backend(msg),
        }
    }

    async fn client(&self, idx: usize) -> Result<Client> {
        let ep = format!("{}://{}", self.scheme, self.endpoints[idx]);
        let connect = || async {
            // Plain HTTP/2 goes over the direct channel (`h2`); TLS over tonic's.
            let direct = (self.scheme == "http")
                .then(|| super::h2::Direct::new(&self.endpoints[idx], self.connect_timeout, KEEP_ALIVE))
                .flatten();
            let connecting = async {
                match direct {
                    Some(d) => {
                        let channel = etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(d));
                        Client::from_channel(channel, Some(self.opts.clone())).await
                    }
                    None => Client::connect([ep.as_str()], Some(self.opts.clone())).await,
                }
            };
            tokio::time::timeout(self.connect_timeout + self.timeout, connecting)
                .await
                .map_err(|_| {
                    Error::connection(format!("{}: connecting to {} timed out", self.store, self.endpoints[idx]))
                })?
                .map_err(|e| self.err(e))
        };
        self.clients[idx].get_or_try_init(connect).await.cloned()
    }

    /// Runs `f` on the current endpoint's client (a cheap clone of its channel), bounded
    /// by the request timeout; on a connection failure, on the next endpoint.
    async fn call<T, F, Fut>(&self, f: F) -> Result<T>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
    {
        each_endpoint(&self.current, self.endpoints.len(), &self.store, |idx| {
            let f = &f;
            async move {
                let c = self.client(idx).await?;
                match tokio::time::timeout(self.timeout, f(c)).await {
                    Ok(r) => r.map_err(|e| self.err(e)),
                    Err(_) => Err(Error::connection(format!(
                        "{}: request to {} timed out after {:?}",
                        self.store, self.endpoints[idx], self.timeout
                    ))),
                }
            }
        })
        .await
    }
}

/// etcd-client's messages carry no URL, so no password; only the message is kept.
fn redact(e: &etcd_client::Error) -> String {
    e.to_string()
}

fn get_options(r: &Range) -> GetOptions {
    let mut o = GetOptions::new();
    if let Some(end) = &r.range_end {
        o = o.with_range(end.clone());
    }
    if r.by_create {
        o = o.with_sort(SortTarget::Create, SortOrder::Ascend);
    }
    o
}

fn kv(k: &etcd_client::KeyValue) -> Kv {
    Kv {
        key: k.key().to_vec(),
        value: k.value().to_vec(),
        create_revision: k.create_revision(),
        mod_revision: k.mod_revision(),
        lease: k.lease(),
    }
}

fn op(o: &TxnOp) -> ETxnOp {
    match o {
        TxnOp::Put { key, value, lease } => {
            let opts = match lease {
                Some(l) => PutOptions::new().with_lease(*l),
                None => PutOptions::new().with_ignore_lease(),
            };
            ETxnOp::put(key.clone(), value.clone(), Some(opts))
        }
        TxnOp::Delete { key } => ETxnOp::delete(key.clone(), None),
        TxnOp::Range(r) => ETxnOp::get(r.key.clone(), Some(get_options(r))),
    }
}

#[async_trait]
impl Transport for Grpc {
    async fn range(&self, r: Range) -> Result<RangeResp> {
        let resp = self
            .call(|mut c| {
                let (key, opts) = (r.key.clone(), get_options(&r));
                async move { c.get(key, Some(opts)).await }
            })
            .await?;
        Ok(RangeResp { revision: resp.header().map_or(0, |h| h.revision()), kvs: resp.kvs().iter().map(kv).collect() })
    }

    async fn txn(&self, t: Txn) -> Result<TxnResp> {
        let compare: Vec<ECompare> = t
            .compare
            .iter()
            .map(|c| {
                let op = if c.less { CompareOp::Less } else { CompareOp::Equal };
                let cmp = match c.target {
                    Target::Create => ECompare::create_revision(c.key.clone(), op, c.value),
                    Target::Mod => ECompare::mod_revision(c.key.clone(), op, c.value),
                };
                match &c.range_end {
                    Some(end) => cmp.with_range(end.clone()),
                    None => cmp,
                }
            })
            .collect();
        let txn = ETxn::new()
            .when(compare)
            .and_then(t.success.iter().map(op).collect::<Vec<_>>())
            .or_else(t.failure.iter().map(op).collect::<Vec<_>>());
        let resp = self
            .call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
            .await?;
        let revision = resp.header().map_or(0, |h| h.revision());
        let responses = resp
            .op_responses()
            .into_iter()
            .map(|r| match r {
                TxnOpResponse::Get(g) => OpResp::Range(RangeResp {
                    revision: g.header().map_or(revision, |h| h.revision()),
                    kvs: g.kvs().iter().map(kv).collect(),
                }),
                TxnOpResponse::Delete(_) => OpResp::Delete,
                TxnOpResponse::Put(_) | TxnOpResponse::Txn(_) => OpResp::Put,
            })
            .collect();
        Ok(TxnResp { succeeded: resp.succeeded(), revision, responses })
    }

    async fn lease_grant(&self, ttl_s: i64) -> Result<i64> {
        let r = self.call(|mut c| async move { c.lease_grant(ttl_s, None).await }).await?;
        Ok(r.id())
    }

    async fn lease_keepalive(&self, id: i64) -> Result<i64> {
        // etcd-client sends one keep-alive and reads its answer before it returns the
        // keeper; a lease that is gone is its "lease not found" error.
        match self.call(|mut c| async move { c.lease_keep_alive(id).await }).await {
            Ok(_) => Ok(1),
            Err(e) if e.message().contains("lease not found") => Ok(0),
            Err(e) => Err(e),
        }
    }

    async fn lease_ttl(&self, id: i64) -> Result<i64> {
        match self.call(|mut c| async move { c.lease_time_to_live(id, None).await }).await {
            Ok(r) => Ok(r.ttl()),
            Err(e) if e.message().contains("lease not found") => Ok(-1),
            Err(e) => Err(e),
        }
    }

    async fn lease_revoke(&self, id: i64) -> Result<()> {
        match self.call(|mut c| async move { c.lease_revoke(id).await }).await {
            Err(e) if e.message().contains("lease not found") => Ok(()),
            r => r.map(drop),
        }
    }

    async fn lock(&self, name: &[u8], lease: i64, wait: Duration) -> Result<Option<Vec<u8>>> {
        let call = self.call(|mut c| {
            let name = name.to_vec();
            async move { c.lock(name, Some(LockOptions::new().with_lease(lease))).await }
        });
        match tokio::time::timeout(wait, call).await {
            Err(_) => Ok(None),
            Ok(r) => Ok(Some(r?.key().to_vec())),
        }
    }

    async fn unlock(&self, key: &[u8]) -> Result<()> {
        self.call(|mut c| {
            let key = key.to_vec();
            async move { c.unlock(key).await }
        })
        .await
        .map(drop)
    }

    async fn watch(&self, r: Range, after: Option<i64>) -> Result<Box<dyn WatchStream>> {
        let mut o = WatchOptions::new();
        if let Some(after) = after {
            o = o.with_start_revision(after + 1);
        }
        if let Some(end) = &r.range_end {
            o = o.with_range(end.clone());
        }
        let asked = self.reauths.load(Ordering::Acquire);
        match self.open_watch(&r, &o).await? {
            Opened::Watch(w) => Ok(w),
            // etcd checks a watch's token when it creates the watch and cancels a watch
            // created with an expired one (a created and cancelled answer, not a failed
            // call; etcd 3.4.23 gives "invalid auth token" as the reason, older releases
            // "permission denied"): authenticated again, it is opened once more.
            Opened::Refused(why) if self.with_auth && super::token_refused(&why) => {
                self.authenticate_again(asked).await?;
                match self.open_watch(&r, &o).await? {
                    Opened::Watch(w) => Ok(w),
                    Opened::Refused(why) => Err(self.watch_refused(&why)),
                }
            }
            Opened::Refused(why) => Err(self.watch_refused(&why)),
        }
    }
}

/// A watch opened, or the reason etcd gave for cancelling it at creation.
enum Opened {
    Watch(Box<dyn WatchStream>),
    Refused(String),
}

impl Grpc {
    /// Opens a watch and waits until etcd confirms it (bounded by the request timeout);
    /// events that come with or before the confirmation are kept for the first `next`.
    async fn open_watch(&self, r: &Range, o: &WatchOptions) -> Result<Opened> {
        let stream = self
            .call(|mut c| {
                let (key, o) = (r.key.clone(), o.clone());
                async move { c.watch(key, Some(o)).await }
            })
            .await?;
        let mut w = GrpcWatch { stream, store: self.store.clone(), pending: None };
        let until = Instant::now() + self.timeout;
        loop {
            let msg = match tokio::time::timeout_at(until, w.stream.message()).await {
                Err(_) => return Err(Error::connection(format!("{}: watch not confirmed in time", self.store))),
                Ok(Ok(Some(m))) => m,
                Ok(Ok(None)) => return Err(Error::connection(format!("{}: the watch stream ended", self.store))),
                Ok(Err(e)) => return Err(self.err(e)),
            };
            // A refusal comes as a created and cancelled watch: never a confirmation.
            if msg.canceled() {
                return Ok(Opened::Refused(msg.cancel_reason().to_owned()));
            }
            if !msg.events().is_empty() {
                w.pending = Some(events(&msg));
            }
            if msg.created() || w.pending.is_some() {
                return Ok(Opened::Watch(Box::new(w)));
            }
        }
    }

    /// A new token for the current endpoint's client, unless another refused watch got
    /// one since this one asked (`asked`: the count then).
    async fn authenticate_again(&self, asked: u64) -> Result<()> {
        let _turn = self.reauth_turn.lock().await;
        if self.reauths.load(Ordering::Acquire) != asked {
            return Ok(());
        }
        self.call(|c| async move { c.refresh_token().await }).await?;
        self.reauths.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    fn watch_refused(&self, why: &str) -> Error {
        let msg = format!("{}: watch refused: {why}", self.store);
        if super::auth_refused(0, why) { Error::connection(msg) } else { Error::backend(msg) }
    }
}

struct GrpcWatch {
    stream: etcd_client::WatchStream,
    store: String,
    /// Events that came before the first `next`.
    pending: Option<Vec<Event>>,
}

fn events(msg: &etcd_client::WatchResponse) -> Vec<Event> {
    msg.events().iter().map(|e| Event { delete: e.event_type() == EventType::Delete }).collect()
}

#[async_trait]
impl WatchStream for GrpcWatch {
    async fn next(&mut self, until: Instant) -> Result<Option<Vec<Event>>> {
        if let Some(evs) = self.pending.take() {
            return Ok(Some(evs));
        }
        // Bounded by `until`: each turn takes one message off the stream.
        loop {
            let msg = match tokio::time::timeout_at(until, self.stream.message()).await {
                Err(_) => return Ok(None),
                Ok(Ok(Some(m))) => m,
                Ok(Ok(None)) => return Err(Error::connection(format!("{}: the watch stream ended", self.store))),
                Ok(Err(e)) => return Err(Error::connection(format!("{}: watch stream: {}", self.store, redact(&e)))),
            };
            if msg.canceled() {
                return Err(Error::backend(format!(
                    "{}: watch canceled: {} (compacted at {})",
                    self.store,
                    msg.cancel_reason(),
                    msg.compact_revision()
                )));
            }
            if !msg.events().is_empty() {
                return Ok(Some(events(&msg)));
            }
        }
    }
}
