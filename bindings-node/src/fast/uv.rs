//! The few libuv calls `here` needs to watch a socket on Node's event loop. Node exports
//! libuv's symbols to addons (`node-gyp` addons call them the same way); napi gives the
//! loop (`napi_get_uv_event_loop`). A `uv_poll_t` is allocated with the size libuv reports,
//! and only its first field (`void* data`, common to every handle) is touched here.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ffi::{c_int, c_void};

/// `uv_handle_type`'s `UV_POLL`.
const UV_POLL: c_int = 8;
/// `uv_poll_event`s.
pub(crate) const READABLE: c_int = 1;
pub(crate) const WRITABLE: c_int = 2;

pub(crate) type PollCb = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
pub(crate) type CloseCb = unsafe extern "C" fn(handle: *mut c_void);

unsafe extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_poll_init_socket(event_loop: *mut c_void, handle: *mut c_void, socket: c_int) -> c_int;
    fn uv_poll_start(handle: *mut c_void, events: c_int, cb: PollCb) -> c_int;
    fn uv_poll_stop(handle: *mut c_void) -> c_int;
    fn uv_close(handle: *mut c_void, cb: CloseCb);
    fn uv_unref(handle: *mut c_void);
}

/// The handle's layout; `None` only for a size no allocation could hold (then no handle is
/// made, and none is freed).
fn layout() -> Option<Layout> {
    // SAFETY: a pure query.
    let size = unsafe { uv_handle_size(UV_POLL) };
    Layout::from_size_align(size.max(1), 16).ok()
}

/// A new poll handle on `event_loop` watching `fd`, unreferenced (it does not keep the loop
/// alive), with `data` in its `data` field; null if libuv refused.
///
/// # Safety
/// On the loop's thread; `event_loop` is live.
pub(crate) unsafe fn poll_new(event_loop: *mut c_void, fd: c_int, data: *mut c_void) -> *mut c_void {
    let Some(layout) = layout() else {
        return std::ptr::null_mut();
    };
    // SAFETY: a non-zero size.
    let h = unsafe { alloc_zeroed(layout) } as *mut c_void;
    if h.is_null() {
        return h;
    }
    // SAFETY: `h` is a zeroed block of the handle's size; `data` is its first field.
    unsafe {
        if uv_poll_init_socket(event_loop, h, fd) != 0 {
            dealloc(h as *mut u8, layout);
            return std::ptr::null_mut();
        }
        *(h as *mut *mut c_void) = data;
        uv_unref(h);
    }
    h
}

/// The `data` field of a handle.
///
/// # Safety
/// `h` is a handle made by [`poll_new`], not yet freed.
pub(crate) unsafe fn data(h: *mut c_void) -> *mut c_void {
    // SAFETY: see the function's comment.
    unsafe { *(h as *mut *mut c_void) }
}

/// Watches for `events`, calling `cb` (replaces the previous set).
///
/// # Safety
/// As [`data`], on the loop's thread.
pub(crate) unsafe fn poll_start(h: *mut c_void, events: c_int, cb: PollCb) -> bool {
    // SAFETY: see the function's comment.
    unsafe { uv_poll_start(h, events, cb) == 0 }
}

/// Stops watching and closes the handle; `cb` runs once libuv is done with it, and must
/// call [`free`].
///
/// # Safety
/// As [`poll_start`], and at most once per handle.
pub(crate) unsafe fn poll_close(h: *mut c_void, cb: CloseCb) {
    // SAFETY: see the function's comment.
    unsafe {
        uv_poll_stop(h);
        uv_close(h, cb);
    }
}

/// Frees a closed handle.
///
/// # Safety
/// From the handle's close callback, once.
pub(crate) unsafe fn free(h: *mut c_void) {
    if let Some(layout) = layout() {
        // SAFETY: `h` came from `alloc_zeroed` with this layout (`poll_new` made none without one).
        unsafe { dealloc(h as *mut u8, layout) }
    }
}
