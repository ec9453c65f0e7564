//! The async bridge: every call returns a JavaScript `Promise` settled from a task on the
//! event loop; a failure rejects with an `Error` whose `code` is the core's kind name
//! (`baton_bind::kind`), which the facade's `BatonError.from` reads.
//!
//! Panics: wasm32 has no unwinding, so a panic traps the instance. The panic hook runs
//! first: it rejects every pending call with a `Backend` error ("internal error: …") and
//! marks the module broken, so later calls reject the same way instead of hanging on an
//! executor the trap left half-way (the page must load the module again).

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;

use baton::ErrorKind;
use js_sys::{Function, Promise, Reflect};
use tokio_util::sync::CancellationToken;
use wasm_bindgen::prelude::*;

thread_local! {
    /// The reject function of every unsettled call, by call number.
    static PENDING: RefCell<(u64, HashMap<u64, Function>)> = RefCell::new((0, HashMap::new()));
    /// The message of the panic that broke this instance, if one did.
    static BROKEN: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The JavaScript error of `e`: `message` the core's (passwords redacted), `code` the kind.
pub(crate) fn js_error(e: &baton::Error) -> JsValue {
    coded(e.kind().as_str(), e.message())
}

fn coded(code: &str, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    // Setting a property on a fresh Error cannot fail.
    let _ = Reflect::set(&err, &"code".into(), &code.into());
    err.into()
}

fn broken_error(why: &str) -> JsValue {
    coded(ErrorKind::Backend.as_str(), &format!("internal error: {why}"))
}

/// A promise of `fut`'s answer.
pub(crate) fn promise<T, F>(fut: F) -> Promise
where
    T: Into<JsValue>,
    F: Future<Output = baton::Result<T>> + 'static,
{
    if let Some(why) = BROKEN.with(|b| b.borrow().clone()) {
        return Promise::reject(&broken_error(&format!("{why} (an earlier panic; load the module again)")));
    }
    let mut settle = None;
    let p = Promise::new(&mut |resolve, reject| settle = Some((resolve, reject)));
    let Some((resolve, reject)) = settle else { return p };
    let id = PENDING.with(|p| {
        let (next, map) = &mut *p.borrow_mut();
        *next += 1;
        map.insert(*next, reject.clone());
        *next
    });
    wasm_bindgen_futures::spawn_local(async move {
        let r = fut.await;
        PENDING.with(|p| p.borrow_mut().1.remove(&id));
        // Calling resolve/reject cannot fail (they are the promise's own functions).
        let _ = match r {
            Ok(v) => resolve.call1(&JsValue::UNDEFINED, &v.into()),
            Err(e) => reject.call1(&JsValue::UNDEFINED, &js_error(&e)),
        };
    });
    p
}

/// As [`promise`], but a tripped `cancel` drops `fut` at once (the core's acquire futures
/// are cancel-safe: nothing stays held or queued) and rejects (the facade rethrows
/// `signal.reason`).
pub(crate) fn cancellable<T, F>(cancel: &JsValue, fut: F) -> Promise
where
    T: Into<JsValue>,
    F: Future<Output = baton::Result<T>> + 'static,
{
    if cancel.is_undefined() || cancel.is_null() {
        return promise(fut);
    }
    let Some(cancel) = token(cancel) else {
        return promise::<T, _>(async { Err(baton_bind::kind::invalid("cancel must be a CancelToken")) });
    };
    promise(async move {
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(baton::Error::new(ErrorKind::Closed, "the operation was aborted")),
            r = fut => r,
        }
    })
}

/// Installs the panic hook (once): log, reject every pending call, mark the module broken.
pub(crate) fn catch_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_owned());
            web_log(&format!("baton: panic: {info}"));
            BROKEN.with(|b| {
                if let Ok(mut b) = b.try_borrow_mut() {
                    b.get_or_insert(msg.clone());
                }
            });
            let pending =
                PENDING.with(|p| p.try_borrow_mut().map(|mut p| std::mem::take(&mut p.1)).unwrap_or_default());
            for reject in pending.into_values() {
                let _ = reject.call1(&JsValue::UNDEFINED, &broken_error(&msg));
            }
        }));
    });
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn web_log(s: &str);
}

/// A one-shot cancel switch for a pending call (the facade trips it on `signal.abort`).
///
/// Calls take it as a plain JavaScript value (`cancel: JsValue`), not as `&CancelToken`:
/// wasm-bindgen passes an optional class argument by value, which would free the object
/// the facade still has to call `cancel()` on. The call finds its token by `key`.
#[wasm_bindgen]
pub struct CancelToken {
    key: u32,
}

thread_local! {
    /// The live cancel tokens by key (an entry leaves when its JavaScript object is freed).
    static TOKENS: RefCell<(u32, HashMap<u32, CancellationToken>)> = RefCell::new((0, HashMap::new()));
}

#[wasm_bindgen]
impl CancelToken {
    #[wasm_bindgen(constructor)]
    pub fn new() -> CancelToken {
        let key = TOKENS.with(|t| {
            let (next, map) = &mut *t.borrow_mut();
            *next = next.wrapping_add(1);
            map.insert(*next, CancellationToken::new());
            *next
        });
        CancelToken { key }
    }

    /// Which token this is (how a call finds it).
    #[wasm_bindgen(getter)]
    pub fn key(&self) -> u32 {
        self.key
    }

    /// Cancels every call this token was passed to.
    pub fn cancel(&self) {
        if let Some(t) = TOKENS.with(|t| t.borrow().1.get(&self.key).cloned()) {
            t.cancel();
        }
    }
}

impl Drop for CancelToken {
    fn drop(&mut self) {
        TOKENS.with(|t| t.borrow_mut().1.remove(&self.key));
    }
}

/// The core token behind a call's `cancel` argument (a `CancelToken`, or undefined).
fn token(cancel: &JsValue) -> Option<CancellationToken> {
    let key = Reflect::get(cancel, &"key".into()).ok()?.as_f64()? as u32;
    TOKENS.with(|t| t.borrow().1.get(&key).cloned())
}
