//! Client and owner identities, in Redisson's `uuid:threadId` form.

use std::sync::atomic::{AtomicU64, Ordering};

/// A client's identity and the counter its handles draw owner ids from.
#[derive(Debug)]
pub(crate) struct ClientId {
    uuid: String,
    next: AtomicU64,
}

impl ClientId {
    pub(crate) fn random() -> ClientId {
        ClientId { uuid: uuid::Uuid::new_v4().to_string(), next: AtomicU64::new(1) }
    }

    pub(crate) fn uuid(&self) -> &str {
        &self.uuid
    }

    /// A fresh owner id `"{uuid}:{n}"`, unique within this client.
    pub(crate) fn next_owner(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.uuid)
    }
}

/// Checks a caller-given owner id (same limits as names).
pub(crate) fn validate_owner(owner: &str) -> crate::error::Result<()> {
    crate::name::validate(owner)
        .map_err(|e| crate::error::Error::invalid_argument(format!("owner id: {}", e.message())))
}
