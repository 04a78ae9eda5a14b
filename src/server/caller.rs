//! Who a request comes from, and what that lets it see: read once per request by the
//! handler, then the one thing the server's verbs (list, find, call) ask about the caller.

use super::clients::ClientKey;
use super::exposure::Exposure;
use super::visibility::Sight;

/// Who a request comes from and what that lets it see, read once per request by the
/// handler: the client (whose shortlist a session has), the exposure its era and client
/// get, the APIs its authorization shows, and the person (`sub`) for the audit log.
pub struct Caller {
    pub key: ClientKey,
    pub exposure: Exposure,
    pub sight: Sight,
    /// The verified person (`None`: stdio, a server without `[auth]`), for the audit log
    /// and for APIs called with each person's own token.
    pub person: Option<crate::credentials::Person>,
    /// The OAuth client the person's access token was issued to, for the audit log.
    pub client_id: Option<String>,
    /// Where a call's progress and an upstream's questions go, when the client can take
    /// them.
    pub hooks: crate::upstream::CallHooks,
}

impl Caller {
    /// The person's `sub`, or `-` without a verified person (as the audit log writes it).
    pub fn sub(&self) -> &str {
        self.person.as_ref().map_or("-", |p| p.sub.as_str())
    }

    /// An audit record of `event` by this caller about `api`.
    pub fn audit(&self, event: crate::store::Event, api: &str) -> crate::store::AuditEntry {
        crate::store::AuditEntry::event(event, self.sub(), self.client_id.as_deref(), api)
    }
}
