//! The loss of a session hold (`for-update`, `advisory`) the moment its connection closes.
//! The hold is the server's session: when the server ends it (`pg_terminate_backend`,
//! `KILL CONNECTION`, a pooler restart) or the connection is reset, the lock is free for
//! the next holder at once, while the idle pinned connection reads nothing until its next
//! renewal. So every pinned connection of a hold is watched: its socket (found among this
//! process's descriptors by the ports the server reports for the session, duplicated) is
//! registered for readiness only — never read, so the driver's stream is untouched — and
//! the peer's close (`EPOLLRDHUP`) or a reset (`EPOLLHUP`/`EPOLLERR`) fires the hold's
//! lost signal at once. A silent partition (no FIN, no RST) is not seen here: it still ends
//! at the next renewal, or at the lease. Linux TCP connections only (a Unix-domain socket
//! reports no ports: such holds are not watched).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio_util::sync::{CancellationToken, DropGuard};

/// The watch of one hold's connection: `lost` fires when the connection closes; dropping
/// the watch (the hold ended) stops it.
#[derive(Debug)]
pub(crate) struct Watch {
    pub(crate) lost: CancellationToken,
    pub(crate) over: CancellationToken,
    _stop: DropGuard,
}

impl Watch {
    /// Starts watching `fd` (a duplicate of the connection's socket).
    pub(crate) fn start(fd: OwnedFd) -> Option<Watch> {
        // SAFETY: `fd` is an `OwnedFd` the `AsyncFd` owns: open, the same descriptor for
        // as long as the `AsyncFd` lives, closed only when it is dropped.
        let afd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.ok()?;
        let (lost, over) = (CancellationToken::new(), CancellationToken::new());
        let (l, o) = (lost.clone(), over.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    () = o.cancelled() => return,
                    r = afd.readable() => match r {
                        Ok(mut g) => {
                            let ready = g.ready();
                            if ready.is_read_closed() || ready.is_error() {
                                l.cancel();
                                return;
                            }
                            // The replies of the hold's own statements: not ours to read.
                            g.clear_ready();
                        }
                        Err(_) => return,
                    },
                }
            }
        });
        Some(Watch { lost, _stop: over.clone().drop_guard(), over })
    }
}

/// The port of a socket address (IPv4 or IPv6) as `get` (`getsockname`/`getpeername`)
/// reports it for `fd`.
fn port_of(fd: RawFd, peer: bool) -> Option<u16> {
    // SAFETY: a zeroed sockaddr_storage is a valid value; the kernel writes at most `len`
    // bytes into it, and the family says which layout it holds.
    unsafe {
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_storage>()).ok()?;
        let p = std::ptr::addr_of_mut!(ss).cast::<libc::sockaddr>();
        let r = if peer { libc::getpeername(fd, p, &mut len) } else { libc::getsockname(fd, p, &mut len) };
        if r != 0 {
            return None;
        }
        match i32::from(ss.ss_family) {
            libc::AF_INET => Some(u16::from_be((*std::ptr::addr_of!(ss).cast::<libc::sockaddr_in>()).sin_port)),
            libc::AF_INET6 => Some(u16::from_be((*std::ptr::addr_of!(ss).cast::<libc::sockaddr_in6>()).sin6_port)),
            _ => None,
        }
    }
}

/// Whether `fd` is a TCP socket from `local` to `peer`.
fn is(fd: RawFd, local: u16, peer: u16) -> bool {
    port_of(fd, false) == Some(local) && port_of(fd, true) == Some(peer)
}

/// A duplicate of this process's socket from local port `local` to the server's port
/// `peer`, if there is one (`cached`: where it was found last time, tried first).
pub(crate) fn find(local: u16, peer: u16, cached: Option<RawFd>) -> Option<(OwnedFd, RawFd)> {
    let dup = |fd: RawFd| -> Option<(OwnedFd, RawFd)> {
        // SAFETY: `fcntl(F_DUPFD_CLOEXEC)` on a descriptor number makes a new descriptor
        // or fails; a new one is owned by nobody else.
        let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if d < 0 {
            return None;
        }
        // SAFETY: `d` was just made and is owned by nobody else.
        let owned = unsafe { OwnedFd::from_raw_fd(d) };
        // The number may have been closed and reused between the check and the dup.
        is(owned.as_raw_fd(), local, peer).then_some((owned, fd))
    };
    if let Some(fd) = cached.filter(|fd| is(*fd, local, peer))
        && let Some(found) = dup(fd)
    {
        return Some(found);
    }
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<RawFd>().ok()) else { continue };
        let is_socket = std::fs::read_link(entry.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:"));
        if is_socket
            && is(fd, local, peer)
            && let Some(found) = dup(fd)
        {
            return Some(found);
        }
    }
    None
}
