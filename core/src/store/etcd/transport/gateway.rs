//! The JSON gateway's wire format: keys and values in base64, int64 as strings, proto3
//! defaults omitted (every field of a reply may be missing).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Deserializer};
use serde_json::{Value as Json, json};

use super::proto::{Kv, Range, RangeResp, Target, Txn, TxnOp};

pub(super) fn b64(v: &[u8]) -> String {
    B64.encode(v)
}

fn de_i64<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<i64, D::Error> {
    match Json::deserialize(d)? {
        Json::Number(n) => n.as_i64().ok_or_else(|| serde::de::Error::custom("not an int64")),
        Json::String(s) => s.parse().map_err(serde::de::Error::custom),
        Json::Null => Ok(0),
        _ => Err(serde::de::Error::custom("not an int64")),
    }
}

fn de_b64<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<u8>, D::Error> {
    let s = Option::<String>::deserialize(d)?.unwrap_or_default();
    B64.decode(s.as_bytes()).map_err(serde::de::Error::custom)
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JHeader {
    #[serde(deserialize_with = "de_i64")]
    pub(super) revision: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JKv {
    #[serde(deserialize_with = "de_b64")]
    pub(super) key: Vec<u8>,
    #[serde(deserialize_with = "de_b64")]
    pub(super) value: Vec<u8>,
    #[serde(deserialize_with = "de_i64")]
    pub(super) create_revision: i64,
    #[serde(deserialize_with = "de_i64")]
    pub(super) mod_revision: i64,
    #[serde(deserialize_with = "de_i64")]
    pub(super) lease: i64,
}

impl From<JKv> for Kv {
    fn from(k: JKv) -> Kv {
        Kv {
            key: k.key,
            value: k.value,
            create_revision: k.create_revision,
            mod_revision: k.mod_revision,
            lease: k.lease,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JRange {
    pub(super) header: JHeader,
    pub(super) kvs: Vec<JKv>,
}

impl JRange {
    pub(super) fn into_resp(self, revision: i64) -> RangeResp {
        let revision = if self.header.revision > 0 { self.header.revision } else { revision };
        RangeResp { revision, kvs: self.kvs.into_iter().map(Kv::from).collect() }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JOpResp {
    pub(super) response_range: Option<JRange>,
    pub(super) response_put: Option<Json>,
    pub(super) response_delete_range: Option<Json>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JTxn {
    pub(super) header: JHeader,
    pub(super) succeeded: bool,
    pub(super) responses: Vec<JOpResp>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JLease {
    #[serde(rename = "ID", deserialize_with = "de_i64")]
    pub(super) id: i64,
    #[serde(rename = "TTL", deserialize_with = "de_i64")]
    pub(super) ttl: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JKeepAlive {
    pub(super) result: Option<JLease>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JAuth {
    pub(super) token: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JEvent {
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) kv: JKv,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JWatchResult {
    pub(super) created: bool,
    pub(super) events: Vec<JEvent>,
    pub(super) canceled: bool,
    pub(super) cancel_reason: String,
    #[serde(deserialize_with = "de_i64")]
    pub(super) compact_revision: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JWatchLine {
    pub(super) result: Option<JWatchResult>,
    pub(super) error: Option<Json>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JLock {
    #[serde(deserialize_with = "de_b64")]
    pub(super) key: Vec<u8>,
}

/// An error the gateway answered with: `{"error": "...", "code": N}`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct JError {
    pub(super) error: String,
    pub(super) message: String,
    pub(super) code: i64,
}

pub(super) fn range_json(r: &Range) -> Json {
    let mut j = json!({ "key": b64(&r.key) });
    if let Some(end) = &r.range_end {
        j["range_end"] = json!(b64(end));
    }
    if r.by_create {
        j["sort_order"] = json!("ASCEND");
        j["sort_target"] = json!("CREATE");
    }
    j
}

pub(super) fn op_json(op: &TxnOp) -> Json {
    match op {
        TxnOp::Put { key, value, lease } => {
            let mut p = json!({ "key": b64(key), "value": b64(value) });
            match lease {
                Some(l) => p["lease"] = json!(l.to_string()),
                None => p["ignore_lease"] = json!(true),
            }
            json!({ "request_put": p })
        }
        TxnOp::Delete { key } => json!({ "request_delete_range": { "key": b64(key) } }),
        TxnOp::Range(r) => json!({ "request_range": range_json(r) }),
    }
}

pub(super) fn txn_json(t: &Txn) -> Json {
    let compare: Vec<Json> = t
        .compare
        .iter()
        .map(|c| {
            let result = if c.less { "LESS" } else { "EQUAL" };
            let mut j = match c.target {
                Target::Create => json!({
                    "key": b64(&c.key), "target": "CREATE", "result": result, "create_revision": c.value.to_string()
                }),
                Target::Mod => json!({
                    "key": b64(&c.key), "target": "MOD", "result": result, "mod_revision": c.value.to_string()
                }),
            };
            if let Some(end) = &c.range_end {
                j["range_end"] = json!(b64(end));
            }
            j
        })
        .collect();
    json!({
        "compare": compare,
        "success": t.success.iter().map(op_json).collect::<Vec<_>>(),
        "failure": t.failure.iter().map(op_json).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_json_with_defaults_left_out() {
        // A failed txn: no `succeeded`, a range with no `kvs`.
        let j: JTxn =
            serde_json::from_str(r#"{"header":{"revision":"7"},"responses":[{"response_range":{"header":{}}}]}"#)
                .unwrap();
        assert!(!j.succeeded);
        assert_eq!(j.header.revision, 7);
        let kv: JKv = serde_json::from_str(r#"{"key":"eHg=","create_revision":3,"lease":"12"}"#).unwrap();
        assert_eq!((kv.key.as_slice(), kv.create_revision, kv.lease, kv.value.len()), (&b"xx"[..], 3, 12, 0));
        let l: JWatchLine = serde_json::from_str(r#"{"result":{"events":[{"kv":{"key":"eA=="}}]}}"#).unwrap();
        assert_eq!(l.result.unwrap().events[0].kind, "", "a PUT has no type");
        assert!(serde_json::from_str::<JKv>(r#"{"key":"!!"}"#).is_err());
    }
}
