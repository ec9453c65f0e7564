//! Hot calls polled on the JavaScript thread, their Redis round trip on Node's own loop.
//!
//! On a plain `redis://` server a client opens a second command connection that the core
//! hands over as a [`baton::ffi::DrivenLink`]: its socket is watched here with a libuv poll
//! handle, and the link is installed on this thread, so that the core's commands polled
//! here go over it. A hot call (acquire, tryAcquire, release) is then a task polled in
//! place: its request is written from this thread, Redis's answer wakes this thread's
//! loop, the callback reads it and polls the task again, and the promise settles — as
//! ioredis does, with no thread crossing. The same core future runs as on napi's runtime;
//! only where it is polled differs. Anything else the task waits for (a subscription's
//! wake-up, a timer, a background step) wakes it from another thread through the
//! environment's threadsafe function (`settle::Bridge::poke`).
//!
//! Without a live link (other stores, TLS, cluster, sentinels, a link that failed) calls
//! take `settle::promise` as before.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use baton::ffi::DrivenLink;
use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, sys};

use baton::ffi::LockExt;

use super::settle::{self, Bridge, Settle, check};
use super::uv;
use crate::call::Promise;

/// A hot call: polled to its settle step.
type Task = Pin<Box<dyn Future<Output = Settle>>>;

enum Slot {
    Free,
    /// Taken out to be polled.
    Polling,
    Task(Task),
}

/// Ids of woken tasks (from any thread).
struct Woken {
    ids: Mutex<Vec<usize>>,
    bridge: Arc<Bridge>,
}

/// One socket watched on this thread's loop.
struct Watch {
    link: DrivenLink,
    env: sys::napi_env,
    handle: *mut c_void,
    /// Watching for writability too (a request the socket did not take whole).
    writable: bool,
    /// The environment's teardown hook for this watch.
    cleanup: sys::napi_async_cleanup_hook_handle,
}

/// This thread's executor.
struct Exec {
    tasks: Vec<Slot>,
    /// The waker of each slot (it names the slot, not the task: made once per slot, not
    /// once per poll).
    wakers: Vec<Waker>,
    free: Vec<usize>,
    woken: Arc<Woken>,
    /// The async resource the socket callbacks run under (a callback scope runs the
    /// microtasks the settled promises queue, as Node's own callbacks do).
    resource: sys::napi_ref,
    context: sys::napi_async_context,
    watched: Vec<*mut Watch>,
}

thread_local! {
    static EXEC: RefCell<Option<Exec>> = const { RefCell::new(None) };
    /// `drive` is running: it must not start again inside itself.
    static DRIVING: Cell<bool> = const { Cell::new(false) };
    /// A `drive` runs before control goes back to the loop: a wake on this thread needs no
    /// poke (the socket callback reading answers, then driving; or `drive` itself).
    static SOON: Cell<bool> = const { Cell::new(false) };
}

struct TaskWaker {
    id: usize,
    woken: Arc<Woken>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let first = {
            let mut ids = self.woken.ids.locked();
            ids.push(self.id);
            ids.len() == 1
        };
        // `SOON` is false on every other thread; on this one `drive` takes the id.
        if first && !SOON.with(Cell::get) {
            self.woken.bridge.poke();
        }
    }
}

/// At most this many requests in flight on a link before more calls take napi's runtime:
/// one call at a time is fastest here (no thread crossing), many at once go faster with
/// the runtime's worker sharing the work (measured with `bench/bench.mjs` at 1 and 64
/// tasks).
const IN_PLACE_MAX: usize = 4;

/// A client's link, opened again in the background after it failed (a server restart):
/// meanwhile calls take napi's runtime, whose connection reconnects on its own.
pub(crate) struct Link {
    client: baton::Client,
    current: Mutex<Option<DrivenLink>>,
    opening: AtomicBool,
}

impl Link {
    /// The link of `client` (None where its store has none, or when turned off by
    /// `BATON_NODE_DRIVEN_LINK=0`).
    pub(crate) async fn open(client: &baton::Client) -> Option<Arc<Link>> {
        if std::env::var("BATON_NODE_DRIVEN_LINK").is_ok_and(|v| v.trim() == "0") {
            return None;
        }
        let link = baton::ffi::driven_link(client).await.ok().flatten()?;
        Some(Arc::new(Link {
            client: client.clone(),
            current: Mutex::new(Some(link)),
            opening: AtomicBool::new(false),
        }))
    }

    /// The live link; None while a new one is opened.
    fn live(self: &Arc<Self>) -> Option<DrivenLink> {
        let current = self.current.locked().clone();
        match current {
            Some(l) if l.is_alive() => Some(l),
            _ => {
                self.reopen();
                None
            }
        }
    }

    fn reopen(self: &Arc<Self>) {
        if self.client.is_closed() || self.opening.swap(true, Ordering::SeqCst) {
            return;
        }
        let me = self.clone();
        napi::bindgen_prelude::spawn(async move {
            // Not at once, nor more often: a restarting server refuses for a while.
            tokio::time::sleep(REOPEN_AFTER).await;
            if let Ok(Some(l)) = baton::ffi::driven_link(&me.client).await {
                if me.client.is_closed() {
                    l.close();
                } else {
                    *me.current.locked() = Some(l);
                }
            }
            me.opening.store(false, Ordering::SeqCst);
        });
    }

    /// The client is closing: the link goes (on the JavaScript thread).
    pub(crate) fn close(&self) {
        if let Some(l) = self.current.locked().take() {
            forget(&l);
        }
    }
}

/// How long after a link failed a new one is tried.
const REOPEN_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// A promise of `fut`'s answer: polled here over `link` when it is live and not busy, else
/// on napi's runtime (`settle::promise`).
pub(crate) fn promise<T, F>(env: &Env, link: Option<&Arc<Link>>, fut: F) -> napi::Result<Promise>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = napi::Result<T>> + Send + 'static,
{
    let raw = env.raw();
    let Some(link) = link.and_then(Link::live) else { return settle::promise(env, fut) };
    if link.pending() >= IN_PLACE_MAX || !watching(raw, &link)? {
        return settle::promise(env, fut);
    }
    let (_, deferred, promise) = settle::pending(env)?;
    let task: Task = Box::pin(async move {
        let out = fut.await;
        Box::new(move |env| settle::settle(env, deferred, out)) as Settle
    });
    EXEC.with(|e| {
        let mut e = e.borrow_mut();
        let Some(x) = e.as_mut() else { return };
        let id = match x.free.pop() {
            Some(id) => {
                x.tasks[id] = Slot::Task(task);
                id
            }
            None => {
                let id = x.tasks.len();
                x.tasks.push(Slot::Task(task));
                x.wakers.push(Waker::from(Arc::new(TaskWaker { id, woken: x.woken.clone() })));
                id
            }
        };
        x.woken.ids.locked().push(id);
    });
    drive(raw);
    Ok(promise)
}

/// On the JavaScript thread: polls every woken task, settles the finished ones, and
/// watches for writability where a request waits for the socket.
pub(crate) fn drive(env: sys::napi_env) {
    if DRIVING.with(|d| d.replace(true)) {
        return;
    }
    SOON.with(|s| s.set(true));
    loop {
        let ids = EXEC.with(|e| e.borrow().as_ref().map(|x| std::mem::take(&mut *x.woken.ids.locked())));
        match ids {
            Some(ids) if !ids.is_empty() => ids.into_iter().for_each(|id| poll_one(env, id)),
            _ => break,
        }
    }
    SOON.with(|s| s.set(false));
    DRIVING.with(|d| d.set(false));
    rearm();
}

fn poll_one(env: sys::napi_env, id: usize) {
    let taken = EXEC.with(|e| {
        let mut e = e.borrow_mut();
        let x = e.as_mut()?;
        match x.tasks.get_mut(id) {
            Some(slot @ Slot::Task(_)) => match std::mem::replace(slot, Slot::Polling) {
                Slot::Task(t) => Some((t, x.wakers[id].clone(), x.woken.clone())),
                _ => None,
            },
            _ => None, // finished already (a late wake)
        }
    });
    let Some((mut task, waker, woken)) = taken else { return };
    let mut cx = Context::from_waker(&waker);
    let polled = napi::bindgen_prelude::within_runtime_if_available(|| task.as_mut().poll(&mut cx));
    let finished = match polled {
        Poll::Ready(settle) => Some(settle),
        Poll::Pending => None,
    };
    EXEC.with(|e| {
        if let Some(x) = e.borrow_mut().as_mut() {
            match finished {
                Some(_) => {
                    x.tasks[id] = Slot::Free;
                    x.free.push(id);
                }
                None => x.tasks[id] = Slot::Task(task),
            }
        }
    });
    if let Some(settle) = finished {
        settle(env);
        woken.bridge.let_go(env, 1);
    }
}

/// Watches for writability exactly where bytes wait, and lets go of dead links.
fn rearm() {
    let watched = EXEC.with(|e| e.borrow().as_ref().map(|x| x.watched.clone()).unwrap_or_default());
    for w in watched {
        // SAFETY: a watched pointer stays valid until `unwatch` removes it.
        let watch = unsafe { &mut *w };
        if !watch.link.is_alive() {
            unwatch(w);
            continue;
        }
        let want = watch.link.wants_write();
        if want != watch.writable {
            watch.writable = want;
            let events = if want { uv::READABLE | uv::WRITABLE } else { uv::READABLE };
            // SAFETY: a live handle, on its loop's thread.
            unsafe { uv::poll_start(watch.handle, events, on_poll) };
        }
    }
}

/// Whether `link` is watched on this thread's loop (watching it now if not).
fn watching(env: sys::napi_env, link: &DrivenLink) -> napi::Result<bool> {
    let known = EXEC.with(|e| {
        e.borrow().as_ref().map(|x| {
            // SAFETY: watched pointers are valid (see `rearm`).
            x.watched.iter().any(|&w| unsafe { (*w).link.same(link) })
        })
    });
    match known {
        Some(true) => return Ok(true),
        Some(false) => {}
        None => {
            let exec = new_exec(env)?;
            EXEC.with(|e| *e.borrow_mut() = Some(exec));
        }
    }
    let mut event_loop = ptr::null_mut();
    // SAFETY: `env` is the live environment of this call.
    check(unsafe { sys::napi_get_uv_event_loop(env, &mut event_loop) }, "napi_get_uv_event_loop")?;
    let w = Box::into_raw(Box::new(Watch {
        link: link.clone(),
        env,
        handle: ptr::null_mut(),
        writable: false,
        cleanup: ptr::null_mut(),
    }));
    // SAFETY: on the loop's thread; `w` lives until the handle's close callback.
    let handle = unsafe { uv::poll_new(event_loop as *mut c_void, link.fd(), w as *mut c_void) };
    // SAFETY: `w` is ours until handed to libuv below.
    let watch = unsafe { &mut *w };
    watch.handle = handle;
    // SAFETY: a handle just made, on its loop's thread.
    if handle.is_null() || !unsafe { uv::poll_start(handle, uv::READABLE, on_poll) } {
        if !handle.is_null() {
            // SAFETY: as above; the close callback frees `w` and the handle.
            unsafe { uv::poll_close(handle, closed) };
        } else {
            // SAFETY: never handed out.
            drop(unsafe { Box::from_raw(w) });
        }
        return Ok(false);
    }
    // SAFETY: `w` outlives the hook: `unwatch` removes it before freeing.
    let hooked = unsafe { sys::napi_add_async_cleanup_hook(env, Some(teardown), w as *mut c_void, &mut watch.cleanup) };
    if hooked != sys::Status::napi_ok {
        // SAFETY: a started handle on this thread's loop; the close callback frees `w`.
        unsafe { uv::poll_close(handle, closed) };
        return Ok(false);
    }
    link.install();
    EXEC.with(|e| {
        if let Some(x) = e.borrow_mut().as_mut() {
            x.watched.push(w);
        }
    });
    Ok(true)
}

fn new_exec(env: sys::napi_env) -> napi::Result<Exec> {
    let bridge = settle::bridge(env)?;
    settle::on_poke(drive);
    let (mut resource, mut name, mut reference, mut context) =
        (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: `env` is the live environment of this call; the strings are valid.
    unsafe {
        check(sys::napi_create_object(env, &mut resource), "napi_create_object")?;
        check(sys::napi_create_string_utf8(env, c"baton".as_ptr(), 5, &mut name), "napi_create_string_utf8")?;
        check(sys::napi_create_reference(env, resource, 1, &mut reference), "napi_create_reference")?;
        check(sys::napi_async_init(env, resource, name, &mut context), "napi_async_init")?;
    }
    Ok(Exec {
        tasks: Vec::new(),
        wakers: Vec::new(),
        free: Vec::new(),
        woken: Arc::new(Woken { ids: Mutex::default(), bridge }),
        resource: reference,
        context,
        watched: Vec::new(),
    })
}

/// Runs `f` as a Node callback: in a handle scope and a callback scope, so that the
/// promises it settles run their reactions when it returns.
fn as_callback(env: sys::napi_env, f: impl FnOnce()) {
    let Some((reference, context)) = EXEC.with(|e| e.borrow().as_ref().map(|x| (x.resource, x.context))) else {
        return f();
    };
    let (mut handles, mut resource, mut scope) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    // SAFETY: on the JavaScript thread of `env`, outside any other napi call (a libuv
    // callback); each scope opened is closed in reverse order.
    unsafe {
        sys::napi_open_handle_scope(env, &mut handles);
        sys::napi_get_reference_value(env, reference, &mut resource);
        let opened = sys::napi_open_callback_scope(env, resource, context, &mut scope) == sys::Status::napi_ok;
        f();
        if opened {
            sys::napi_close_callback_scope(env, scope);
        }
        sys::napi_close_handle_scope(env, handles);
    }
}

/// libuv: the socket is readable or writable (or failed).
unsafe extern "C" fn on_poll(handle: *mut c_void, status: c_int, events: c_int) {
    // SAFETY: the handle's data is its `Watch`, valid until the close callback.
    let w = unsafe { uv::data(handle) } as *mut Watch;
    let (link, env) = {
        // SAFETY: as above.
        let watch = unsafe { &*w };
        (watch.link.clone(), watch.env)
    };
    // A panic must not unwind into libuv.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        as_callback(env, || {
            SOON.with(|s| s.set(true)); // `drive` below polls whoever the answers wake
            let mut alive = true;
            if status < 0 {
                link.close();
                alive = false;
            }
            if alive && events & uv::READABLE != 0 {
                alive = link.on_readable();
            }
            if alive && events & uv::WRITABLE != 0 {
                alive = link.flush();
            }
            drive(env);
            if !alive {
                unwatch(w);
            }
        });
    }));
}

/// Stops watching `w` (its link failed or its client closed): the link is no longer used
/// on this thread.
fn unwatch(w: *mut Watch) {
    let was = EXEC.with(|e| {
        let mut e = e.borrow_mut();
        let Some(x) = e.as_mut() else { return false };
        let before = x.watched.len();
        x.watched.retain(|&o| o != w);
        x.watched.len() != before
    });
    if !was {
        return;
    }
    // SAFETY: still valid: only the close callback below frees it.
    let watch = unsafe { &*w };
    watch.link.uninstall();
    // SAFETY: the hook is registered and has not run (it removes the watch first).
    unsafe { sys::napi_remove_async_cleanup_hook(watch.cleanup) };
    // SAFETY: a live handle on this thread's loop, closed once (it left `watched`).
    unsafe { uv::poll_close(watch.handle, closed) };
}

/// Stops using `link` on this thread (its client is closing).
fn forget(link: &DrivenLink) {
    let found = EXEC.with(|e| {
        e.borrow().as_ref().and_then(|x| {
            // SAFETY: watched pointers are valid.
            x.watched.iter().copied().find(|&w| unsafe { (*w).link.same(link) })
        })
    });
    if let Some(w) = found {
        unwatch(w);
    }
    link.close();
}

/// libuv is done with a handle `unwatch` closed: frees it and its watch.
unsafe extern "C" fn closed(handle: *mut c_void) {
    // SAFETY: the data is the boxed watch; nothing else refers to it any more.
    unsafe {
        drop(Box::from_raw(uv::data(handle) as *mut Watch));
        uv::free(handle);
    }
}

/// The environment is going away: closes the watch, drops this thread's pending tasks.
unsafe extern "C" fn teardown(hook: sys::napi_async_cleanup_hook_handle, data: *mut c_void) {
    let w = data as *mut Watch;
    let _ = catch_unwind(AssertUnwindSafe(|| {
        EXEC.with(|e| {
            let mut e = e.borrow_mut();
            if let Some(x) = e.as_mut() {
                x.watched.retain(|&o| o != w);
            }
            // Pending calls have nobody left to answer; their futures are dropped.
            let tasks = e.as_mut().map(|x| std::mem::take(&mut x.tasks));
            drop(e);
            napi::bindgen_prelude::within_runtime_if_available(|| drop(tasks));
        });
    }));
    // SAFETY: valid until the close callback below.
    let watch = unsafe { &mut *w };
    watch.link.uninstall();
    watch.link.close();
    watch.cleanup = hook;
    // SAFETY: a live handle on this thread's loop, closed once (it left `watched`).
    unsafe { uv::poll_close(watch.handle, closed_at_teardown) };
}

/// As [`closed`], then tells Node this watch's teardown is done.
unsafe extern "C" fn closed_at_teardown(handle: *mut c_void) {
    // SAFETY: as in `closed`.
    unsafe {
        let w = Box::from_raw(uv::data(handle) as *mut Watch);
        sys::napi_remove_async_cleanup_hook(w.cleanup);
        drop(w);
        uv::free(handle);
    }
}
