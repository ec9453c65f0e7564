//! Promises settled through one threadsafe function per JavaScript environment.
//!
//! napi's `async fn` makes a threadsafe function (a libuv handle, opened and closed again)
//! and two tasks for every call. The hot calls (acquire, release) go through here instead:
//! the promise is a plain deferred, the future one task on napi's runtime, and its answer
//! is queued for the environment's one threadsafe function, which settles every queued
//! answer when the JavaScript thread runs it. The function keeps the event loop alive only
//! while calls are pending, as napi's per-call functions do.

use std::cell::RefCell;
use std::ffi::c_void;
use std::future::Future;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use baton::ffi::LockExt;
use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, JsError, Status, sys};

use crate::call::Promise;

/// Settles one promise on the JavaScript thread.
pub(crate) type Settle = Box<dyn FnOnce(sys::napi_env) + Send>;

/// The JavaScript thread's end of the bridge.
pub(crate) struct Bridge {
    /// `None` once Node finalized the function (the environment is going away).
    tsfn: Mutex<Option<Raw<sys::napi_threadsafe_function>>>,
    queue: Mutex<Vec<Settle>>,
    /// Calls not yet settled; read and written on the JavaScript thread only.
    pending: AtomicUsize,
    /// A task polled on the JavaScript thread was woken from another thread: the next run
    /// calls the [`on_poke`] handler.
    poked: AtomicBool,
}

/// A raw napi pointer that may cross threads: napi's threadsafe functions are meant to be
/// called from any thread, and a deferred is only used back on the JavaScript thread.
#[derive(Clone, Copy)]
pub(crate) struct Raw<T>(T);
// SAFETY: see the type's comment.
unsafe impl<T> Send for Raw<T> {}

impl<T: Copy> Raw<T> {
    /// The pointer (a method, so that closures capture the `Send` wrapper, not its field).
    pub(crate) fn get(self) -> T {
        self.0
    }
}

/// What a poke runs on the JavaScript thread (`here::drive`), registered by the executor
/// that pokes (this module does not know it).
static ON_POKE: OnceLock<fn(sys::napi_env)> = OnceLock::new();

/// Sets what [`Bridge::poke`] runs on the JavaScript thread (the first setting stays).
pub(crate) fn on_poke(handler: fn(sys::napi_env)) {
    let _ = ON_POKE.set(handler);
}

thread_local! {
    /// The bridge of the environment running on this thread (one per Node thread).
    static BRIDGE: RefCell<Option<(Raw<sys::napi_env>, Arc<Bridge>)>> = const { RefCell::new(None) };
}

pub(crate) fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(Status::GenericFailure, format!("internal error: {what} failed ({status})")))
    }
}

/// This environment's bridge, made on first use.
pub(crate) fn bridge(env: sys::napi_env) -> napi::Result<Arc<Bridge>> {
    BRIDGE.with(|slot| {
        let mut slot = slot.borrow_mut();
        if let Some((e, b)) = slot.as_ref()
            && e.0 == env
            && b.tsfn.locked().is_some()
        {
            return Ok(b.clone());
        }
        let b = Arc::new(Bridge {
            tsfn: Mutex::new(None),
            queue: Mutex::default(),
            pending: AtomicUsize::new(0),
            poked: AtomicBool::new(false),
        });
        let mut name = ptr::null_mut();
        // SAFETY: `env` is the live environment of this call; the strings are valid.
        check(
            unsafe { sys::napi_create_string_utf8(env, c"baton".as_ptr(), 5, &mut name) },
            "napi_create_string_utf8",
        )?;
        let context = Arc::into_raw(b.clone()) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        // SAFETY: `context` is one strong count of the bridge, given back in `finalize`.
        let made = unsafe {
            sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                context,
                Some(finalize),
                context,
                Some(call_js),
                &mut tsfn,
            )
        };
        if let Err(e) = check(made, "napi_create_threadsafe_function") {
            // SAFETY: not handed to Node: the count is ours to drop.
            drop(unsafe { Arc::from_raw(context as *const Bridge) });
            return Err(e);
        }
        // Idle until a call is pending.
        // SAFETY: on the JavaScript thread, with the function just made.
        check(unsafe { sys::napi_unref_threadsafe_function(env, tsfn) }, "napi_unref_threadsafe_function")?;
        *b.tsfn.locked() = Some(Raw(tsfn));
        *slot = Some((Raw(env), b.clone()));
        Ok(b)
    })
}

/// Node is done with the function (environment teardown): no call may reach it any more.
unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the strong count `bridge` gave Node.
    let b = unsafe { Arc::from_raw(data as *const Bridge) };
    b.tsfn.locked().take();
    b.queue.locked().clear();
}

/// On the JavaScript thread: settles every answer queued so far.
unsafe extern "C" fn call_js(env: sys::napi_env, _f: sys::napi_value, context: *mut c_void, _data: *mut c_void) {
    // SAFETY: `context` stays valid until `finalize`, which runs after the last call.
    let b = unsafe { &*(context as *const Bridge) };
    let batch = std::mem::take(&mut *b.queue.locked());
    if env.is_null() {
        return; // the environment is going away: nobody is left to settle for
    }
    if b.poked.swap(false, Ordering::SeqCst)
        && let Some(handler) = ON_POKE.get()
    {
        handler(env);
    }
    let n = batch.len();
    for settle in batch {
        settle(env);
    }
    b.let_go(env, n);
}

impl Bridge {
    /// On the JavaScript thread: one more call pending (the loop stays alive meanwhile).
    pub(crate) fn hold(&self, env: sys::napi_env) {
        if self.pending.fetch_add(1, Ordering::Relaxed) == 0
            && let Some(t) = *self.tsfn.locked()
        {
            // SAFETY: on the JavaScript thread, with a live function.
            unsafe { sys::napi_ref_threadsafe_function(env, t.0) };
        }
    }

    /// On the JavaScript thread: `n` pending calls settled.
    pub(crate) fn let_go(&self, env: sys::napi_env, n: usize) {
        if n > 0
            && self.pending.fetch_sub(n, Ordering::Relaxed) == n
            && let Some(t) = *self.tsfn.locked()
        {
            // SAFETY: on the JavaScript thread, with a live function.
            unsafe { sys::napi_unref_threadsafe_function(env, t.0) };
        }
    }

    /// From any thread: asks for a run of the [`on_poke`] handler on the JavaScript thread.
    pub(crate) fn poke(&self) {
        if !self.poked.swap(true, Ordering::SeqCst) {
            self.call();
        }
    }

    fn call(&self) {
        let tsfn = self.tsfn.locked();
        if let Some(t) = *tsfn {
            // SAFETY: the lock keeps `finalize` from invalidating `t` meanwhile.
            unsafe {
                sys::napi_call_threadsafe_function(t.0, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking)
            };
        }
    }

    /// From any thread: queues `settle` and, when the queue was empty, asks for a run of
    /// `call_js` (a run already asked for takes the later answers along).
    fn send(&self, settle: Settle) {
        let first = {
            let mut q = self.queue.locked();
            q.push(settle);
            q.len() == 1
        };
        if first {
            self.call();
        }
    }
}

/// Settles the promise when dropped: with the answer, or, if the task was dropped before
/// it had one (the runtime shutting down), with an error.
struct Settler<T: ToNapiValue + Send + 'static> {
    bridge: Arc<Bridge>,
    deferred: Raw<sys::napi_deferred>,
    out: Option<napi::Result<T>>,
}

impl<T: ToNapiValue + Send + 'static> Settler<T> {
    /// Settles with `out` (on drop).
    fn finish(mut self, out: napi::Result<T>) {
        self.out = Some(out);
    }
}

impl<T: ToNapiValue + Send + 'static> Drop for Settler<T> {
    fn drop(&mut self) {
        let out = self.out.take().unwrap_or_else(|| {
            Err(napi::Error::new(Status::Cancelled, "internal error: the call was dropped unfinished"))
        });
        let deferred = self.deferred;
        self.bridge.send(Box::new(move |env| settle(env, deferred, out)));
    }
}

/// On the JavaScript thread of the environment that made `deferred`, once: settles it.
pub(crate) fn settle<T: ToNapiValue>(env: sys::napi_env, deferred: Raw<sys::napi_deferred>, out: napi::Result<T>) {
    let d = deferred.get();
    // SAFETY: see the function's comment.
    unsafe {
        match out.and_then(|v| T::to_napi_value(env, v)) {
            Ok(v) => sys::napi_resolve_deferred(env, d, v),
            Err(e) => sys::napi_reject_deferred(env, d, JsError::from(e).into_value(env)),
        };
    }
}

/// A pending promise and its deferred, counted pending on this environment's bridge.
pub(crate) fn pending(env: &Env) -> napi::Result<(Arc<Bridge>, Raw<sys::napi_deferred>, Promise)> {
    let raw = env.raw();
    let bridge = bridge(raw)?;
    let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: `raw` is the live environment of this call.
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "napi_create_promise")?;
    bridge.hold(raw);
    Ok((bridge, Raw(deferred), Promise(promise)))
}

/// A promise of `fut`'s answer, `fut` running on napi's runtime.
pub(crate) fn promise<T, F>(env: &Env, fut: F) -> napi::Result<Promise>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = napi::Result<T>> + Send + 'static,
{
    let (bridge, deferred, promise) = pending(env)?;
    let settler = Settler { bridge, deferred, out: None };
    let in_flight = super::busy::started();
    napi::bindgen_prelude::spawn(async move {
        let out = fut.await;
        drop(in_flight);
        settler.finish(out)
    });
    Ok(promise)
}
