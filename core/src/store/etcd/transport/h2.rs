//! `etcd://` over plain HTTP/2: a gRPC channel straight onto one `h2` connection.
//!
//! Through tonic's `Channel` a unary call crossed four tasks (the caller, tonic's buffer
//! worker, hyper's connection task, and a task hyper spawns to pipe the request body,
//! which waits for the connection to grant it flow-control capacity) and left the
//! client as two writes, the HEADERS frame and then the DATA frame (`strace`), which
//! etcd read as two. Here the caller queues both frames itself, so the connection's task
//! writes them in one, as grpc-go does. A request body that is not whole at once (a watch,
//! the lease keep-alive stream) has its rest piped by a task of its own, as hyper did.
//!
//! A connection that closed is replaced on the next call; every failure to reach the
//! server is gRPC's `Unavailable`, which the transport reads as a connection error. HTTP/2
//! pings every 10 s, answered within 5 s, find a dead connection. TLS endpoints keep
//! tonic's channel.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::{RecvStream, SendStream};
use http::uri::{Authority, Scheme};
use http::{Request, Response, Uri};
use http_body::{Body as _, Frame};
use tonic::body::Body;

use crate::sync::LockExt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The windows this client grants the server (h2's default, 64 KiB, asks a window update
/// every few answers): hyper's defaults, which tonic used.
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;

/// One endpoint's channel (cheap to clone: clones share the connection).
#[derive(Clone)]
pub(super) struct Direct(Arc<Inner>);

struct Inner {
    /// `host:port`.
    addr: String,
    /// What every request's URI gets: tonic's generated clients give only the path.
    authority: Authority,
    connect_timeout: Duration,
    /// HTTP/2 pings: how often, and how long an answer may take before the connection
    /// counts as dead.
    keep_alive: (Duration, Duration),
    current: Mutex<Option<Conn>>,
    /// One connect at a time.
    connecting: tokio::sync::Mutex<()>,
}

#[derive(Clone)]
struct Conn {
    send: SendRequest<Bytes>,
    /// Set when the connection's task ended (closed, failed, or no answer to a ping).
    dead: Arc<std::sync::atomic::AtomicBool>,
}

impl Conn {
    fn alive(&self) -> bool {
        !self.dead.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// A failure reaching the server: `Unavailable` (14), a connection error for the caller.
fn unavailable(e: impl std::fmt::Display) -> BoxError {
    Box::new(status(e))
}

fn status(e: impl std::fmt::Display) -> tonic::Status {
    tonic::Status::unavailable(format!("transport error: {e}"))
}

impl Direct {
    pub(super) fn new(addr: &str, connect_timeout: Duration, keep_alive: (Duration, Duration)) -> Option<Direct> {
        let authority = addr.parse().ok()?;
        Some(Direct(Arc::new(Inner {
            addr: addr.to_owned(),
            authority,
            connect_timeout,
            keep_alive,
            current: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
        })))
    }

    fn live(&self) -> Option<Conn> {
        self.0.current.locked().as_ref().filter(|c| c.alive()).cloned()
    }

    /// The open connection, or a new one.
    async fn conn(&self) -> Result<Conn, BoxError> {
        if let Some(c) = self.live() {
            return Ok(c);
        }
        let _one = self.0.connecting.lock().await;
        if let Some(c) = self.live() {
            return Ok(c);
        }
        let connect = tokio::net::TcpStream::connect(self.0.addr.as_str());
        let tcp = tokio::time::timeout(self.0.connect_timeout, connect)
            .await
            .map_err(|_| unavailable(format!("connecting to {} timed out", self.0.addr)))?
            .map_err(unavailable)?;
        tcp.set_nodelay(true).map_err(unavailable)?;
        let handshake = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(tcp);
        let (send, mut connection) = tokio::time::timeout(self.0.connect_timeout, handshake)
            .await
            .map_err(|_| unavailable(format!("no HTTP/2 handshake from {} in time", self.0.addr)))?
            .map_err(unavailable)?;
        let dead = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pings = connection.ping_pong();
        let (interval, patience) = self.0.keep_alive;
        let ended = dead.clone();
        tokio::spawn(async move {
            let serve = async {
                let _ = (&mut connection).await;
            };
            let watch = async {
                let Some(mut pings) = pings else { return std::future::pending().await };
                loop {
                    tokio::time::sleep(interval).await;
                    match tokio::time::timeout(patience, pings.ping(h2::Ping::opaque())).await {
                        Ok(Ok(_)) => {}
                        _ => return,
                    }
                }
            };
            // Either ends it: the connection (and every stream on it) is dropped.
            tokio::select! {
                () = serve => {}
                () = watch => {}
            }
            ended.store(true, std::sync::atomic::Ordering::Release);
        });
        let c = Conn { send, dead };
        *self.0.current.locked() = Some(c.clone());
        Ok(c)
    }

    async fn call(self, req: Request<Body>) -> Result<Response<Body>, BoxError> {
        let (mut parts, mut body) = req.into_parts();
        let mut uri = std::mem::take(&mut parts.uri).into_parts();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(self.0.authority.clone());
        parts.uri = Uri::from_parts(uri)?;
        // What of the body is there now (a unary call's whole message, and its end).
        let mut first = Vec::new();
        let mut ended = body.is_end_stream();
        let mut trailers = None;
        while !ended {
            match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx))).await {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => first.push(data),
                    Err(frame) => {
                        trailers = frame.into_trailers().ok();
                        ended = true;
                    }
                },
                Poll::Ready(Some(Err(e))) => return Err(Box::new(e)),
                Poll::Ready(None) => ended = true,
                Poll::Pending => break,
            }
        }
        let mut send = self.conn().await?.send.ready().await.map_err(unavailable)?;
        let head = Request::from_parts(parts, ());
        let (response, mut stream) =
            send.send_request(head, ended && first.is_empty() && trailers.is_none()).map_err(unavailable)?;
        let last = first.len();
        for (i, data) in first.into_iter().enumerate() {
            stream.send_data(data, ended && trailers.is_none() && i + 1 == last).map_err(unavailable)?;
        }
        if let Some(t) = trailers {
            stream.send_trailers(t).map_err(unavailable)?;
        }
        if !ended {
            tokio::spawn(pipe(body, stream));
        }
        let response = response.await.map_err(unavailable)?;
        Ok(response.map(|recv| Body::new(Answer { recv, data_done: false })))
    }
}

/// Sends the rest of a request body as it comes (a stream of requests).
async fn pipe(mut body: Body, mut stream: SendStream<Bytes>) {
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        let sent = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => stream.send_data(data, body.is_end_stream()),
                Err(frame) => match frame.into_trailers() {
                    Ok(t) => stream.send_trailers(t),
                    Err(_) => Ok(()),
                },
            },
            Some(Err(_)) => {
                stream.send_reset(h2::Reason::CANCEL);
                return;
            }
            None => {
                // The body ended without saying so first: end the stream, once.
                let _ = stream.send_data(Bytes::new(), true);
                return;
            }
        };
        if sent.is_err() || body.is_end_stream() {
            return;
        }
    }
}

/// An answer's body: its DATA frames (their flow-control capacity given back as they are
/// read), then its trailers (gRPC's status).
struct Answer {
    recv: RecvStream,
    data_done: bool,
}

impl http_body::Body for Answer {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        if !self.data_done {
            match ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(status(e)))),
                None => self.data_done = true,
            }
        }
        match ready!(self.recv.poll_trailers(cx)) {
            Ok(Some(t)) => Poll::Ready(Some(Ok(Frame::trailers(t)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(status(e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}

impl tower_service::Service<Request<Body>> for Direct {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        Box::pin(self.clone().call(req))
    }
}
