//! `Inspection` and `Holder` as plain JavaScript objects (the Node addon's shape).

use js_sys::{Array, BigInt, Object, Reflect};
use wasm_bindgen::JsValue;

pub(crate) fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in fields {
        // Setting a property on a fresh plain object cannot fail.
        let _ = Reflect::set(&o, &(*k).into(), v);
    }
    o.into()
}

/// `null` for none, else the value.
pub(crate) fn opt<T: Into<JsValue>>(v: Option<T>) -> JsValue {
    v.map_or(JsValue::NULL, Into::into)
}

pub(crate) fn inspection(i: baton::Inspection) -> JsValue {
    let holders: Array = i.holders.into_iter().map(holder).collect();
    let waiters: Array = i.waiters.into_iter().map(JsValue::from).collect();
    object(&[
        ("name", i.name.into()),
        ("kind", i.kind.into()),
        ("holders", holders.into()),
        ("waiters", waiters.into()),
        ("lastToken", opt(i.last_token.map(|t| BigInt::from(t.get())))),
        ("count", (i.count as f64).into()),
        ("permits", opt(i.permits)),
    ])
}

fn holder(h: baton::Holder) -> JsValue {
    object(&[
        ("owner", h.owner.into()),
        ("mode", h.mode.into()),
        ("count", h.count.into()),
        ("token", BigInt::from(h.token.get()).into()),
        ("leaseLeftMs", opt(h.lease_left.map(|d| d.as_secs_f64() * 1000.0))),
    ])
}
