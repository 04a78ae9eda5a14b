//! The one trait both stores implement, and the rows they hold. Rows carry secrets only
//! sealed ([`super::seal`]); a backend never sees a key.

use super::StoreError;

/// A person's upstream token as stored: the secret part sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedToken {
    pub sub: String,
    pub api: String,
    pub sealed: Vec<u8>,
    pub expires_at: Option<i64>,
    pub scope: String,
    pub updated_at: i64,
}

/// A pending consent as stored: the PKCE verifier sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedConsent {
    pub state: String,
    pub sub: String,
    pub api: String,
    pub sealed: Vec<u8>,
    pub created_at: i64,
    pub expires_at: i64,
}

/// One upstream call. There is deliberately no field for a body, a header or a query:
/// the log cannot hold a secret it never receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// When the call started, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The person (`sub`), or `-` for a server without per-person authentication.
    pub sub: String,
    pub api: String,
    /// The tool name of the endpoint called.
    pub endpoint: String,
    /// The HTTP status, or 0 when no response came (refused, timed out, unreachable).
    pub status: u16,
    pub latency_ms: u32,
}

/// A state store. Every method is one transaction: it happens entirely or not at all.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// What the store is, for logs (`sqlite:/path`, `postgres://user@host/db`): no password.
    fn describe(&self) -> String;
    /// The schema version the store is at.
    async fn schema_version(&self) -> Result<i64, StoreError>;
    async fn put_token(&self, row: SealedToken) -> Result<(), StoreError>;
    async fn token(&self, sub: &str, api: &str) -> Result<Option<SealedToken>, StoreError>;
    async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError>;
    async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError>;
    async fn put_consent(&self, row: SealedConsent) -> Result<(), StoreError>;
    async fn consent(&self, state: &str) -> Result<Option<SealedConsent>, StoreError>;
    /// Deletes the unexpired consent `state` (of `token.sub` for `token.api`) and stores
    /// `token`, in one transaction; `false` (and nothing written) when there is no such
    /// consent.
    async fn complete_consent(
        &self,
        state: &str,
        now: i64,
        token: SealedToken,
    ) -> Result<bool, StoreError>;
    async fn expire_consents(&self, now: i64) -> Result<u64, StoreError>;
    async fn record_call(&self, e: AuditEntry) -> Result<(), StoreError>;
    /// Newest first.
    async fn audit(&self, sub: Option<&str>, limit: u32) -> Result<Vec<AuditEntry>, StoreError>;
}
