//! Opening a link: the connect and the login (`AUTH`, `SELECT`, `CLIENT SETNAME`), blocking
//! the calling thread, then the socket made non-blocking for its driver.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use super::home::{Direct, Kind};
use super::queue::Io;
use super::resp::frame_len;
#[cfg(unix)]
use super::task;
use super::{DrivenLink, Shared};
use crate::error::{Error, Result};

/// The connection name of every link an event loop drives (`CLIENT SETNAME`).
const NAME: &str = "baton-driven";
/// The connection name of every thread's own link (`own`).
const OWN_NAME: &str = "baton-own";
/// The connection name of a store's link its waiting tasks drive (`task`).
const TASK_NAME: &str = "baton-task";

/// What a failed socket call during the login says (a read past its timeout fails as
/// `WouldBlock` on unix).
fn why(e: io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".to_owned(),
        _ => e.to_string(),
    }
}

impl DrivenLink {
    /// Connects and logs in, blocking the calling thread (at most `connect_timeout` for the
    /// connect and again for the login): a thread's own link opens on that thread
    /// (`own`), the event loop's on a blocking-pool thread ([`Home::open`](super::Home::open)).
    pub(super) fn connect(d: &Direct, id: u64, store: &str, kind: Kind) -> Result<DrivenLink> {
        let cannot = |e: String| Error::connection(format!("cannot connect to {store}: {e}"));
        let addrs =
            std::net::ToSocketAddrs::to_socket_addrs(&(d.host.as_str(), d.port)).map_err(|e| cannot(e.to_string()))?;
        let mut last = "no address".to_owned();
        let mut sock = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, d.connect_timeout) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let mut sock = sock.ok_or_else(|| cannot(last))?;
        let setup = |s: &TcpStream| -> io::Result<()> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(d.connect_timeout))?;
            s.set_write_timeout(Some(d.connect_timeout))
        };
        setup(&sock).map_err(|e| cannot(e.to_string()))?;
        let mut hello = Vec::new();
        let mut asked = 0;
        if let Some(password) = &d.password {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = &d.user {
                auth.arg(user);
            }
            auth.arg(password).write_packed_command(&mut hello);
            asked += 1;
        }
        if d.db != 0 {
            redis::cmd("SELECT").arg(d.db).write_packed_command(&mut hello);
            asked += 1;
        }
        // Named, so that `CLIENT LIST` tells it from the multiplexed connection (its
        // answer may be a refusal under a strict ACL: that one is not fatal).
        let name = match kind {
            Kind::Loop => NAME,
            Kind::Own => OWN_NAME,
            Kind::Task => TASK_NAME,
        };
        redis::cmd("CLIENT").arg("SETNAME").arg(name).write_packed_command(&mut hello);
        asked += 1;
        let mut login = || -> std::result::Result<(), String> {
            sock.write_all(&hello).map_err(why)?;
            let mut got = Vec::new();
            let mut buf = [0u8; 512];
            let mut answers = 0;
            while answers < asked {
                let n = sock.read(&mut buf).map_err(why)?;
                if n == 0 {
                    return Err("the server closed the connection".to_owned());
                }
                got.extend_from_slice(&buf[..n]);
                while let Some(len) = frame_len(&got)? {
                    let v = redis::parse_redis_value(&got[..len]).map_err(|e| e.to_string())?;
                    got.drain(..len);
                    answers += 1;
                    // The server's own words (`WRONGPASS …`) hold no password. The name's
                    // refusal is not fatal, unless it says a password is missing (`NOAUTH`):
                    // then no command would be taken either.
                    match v.extract_error() {
                        Err(e) if answers < asked || e.code() == Some("NOAUTH") => return Err(e.to_string()),
                        _ => {}
                    }
                }
            }
            Ok(())
        };
        login().map_err(|said| {
            crate::store::redis::conn::refused_login_said(store, &said, false).unwrap_or_else(|| cannot(said))
        })?;
        let ready = |s: &TcpStream| -> io::Result<()> {
            s.set_read_timeout(None)?;
            s.set_write_timeout(None)?;
            s.set_nonblocking(true)
        };
        ready(&sock).map_err(|e| cannot(e.to_string()))?;
        #[cfg(unix)]
        let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
        #[cfg(not(unix))]
        let fd = -1;
        Ok(DrivenLink(Arc::new(Shared {
            store: id,
            timeout: d.timeout,
            db: d.db,
            fd,
            own: kind == Kind::Own,
            #[cfg(unix)]
            tasks: std::sync::OnceLock::new(),
            #[cfg(unix)]
            spin: task::Spin::default(),
            io: Mutex::new(Io {
                sock,
                alive: true,
                out: Vec::new(),
                inbuf: Vec::new(),
                rbuf: vec![0; 16 * 1024].into_boxed_slice(),
                waiting: VecDeque::new(),
                parked: Vec::new(),
                reader: 0,
                writer: 0,
            }),
        })))
    }
}
