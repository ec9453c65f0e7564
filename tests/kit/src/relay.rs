//! A TCP relay between a client and a server that a test can black-hole: `cut` stops
//! forwarding in both directions without closing anything (as a lost route does: the
//! client's requests go unanswered, no error, no reset), and connections made while cut
//! are accepted and left hanging. Deterministic and unprivileged, unlike a firewall rule,
//! and it cuts exactly the connections made through it (one client), not the server's.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A relay on a free loopback port to `target`; stops (and drops its connections) when dropped.
pub struct Relay {
    /// The port clients connect to instead of the server's.
    pub port: u16,
    cut: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Starts relaying `127.0.0.1:port` (a free port) to `target`.
    pub async fn start(target: SocketAddr) -> Relay {
        let port = crate::free_port();
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("relay: bind");
        let (cut, rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                conns.spawn(relay(client, target, rx.clone()));
            }
        });
        Relay { port, cut, task }
    }

    /// `url` with its first host (after any `user:password@`) replaced by the relay's.
    pub fn via(&self, url: &str) -> String {
        url.replacen(&target_of(url).to_string(), &format!("127.0.0.1:{}", self.port), 1)
    }

    /// Stops forwarding: nothing more passes either way until `heal`.
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    /// Forwards again (what was held while cut is delivered).
    pub fn heal(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits while the relay is cut.
async fn open(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|cut| !*cut).await;
}

async fn relay(client: TcpStream, target: SocketAddr, mut rx: watch::Receiver<bool>) {
    open(&mut rx).await;
    let Ok(server) = TcpStream::connect(target).await else { return };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::select! {
        _ = pump(cr, sw, rx.clone()) => {}
        _ = pump(sr, cw, rx) => {}
    }
}

/// Copies `from` to `to`, holding what it read while the relay is cut.
async fn pump(mut from: impl AsyncReadExt + Unpin, mut to: impl AsyncWriteExt + Unpin, mut rx: watch::Receiver<bool>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        open(&mut rx).await;
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        open(&mut rx).await;
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// `host:port` of a store URL's first host.
///
/// # Panics
/// When the URL has no `host:port` of numbers (a test's own URL).
pub fn target_of(url: &str) -> std::net::SocketAddr {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let host = rest.split(['/', '?', ',']).next().unwrap_or_default();
    host.parse().unwrap_or_else(|e| panic!("relay: `{host}` of {url} is not an address: {e}"))
}
