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
    /// The OAuth client (of the person's MCP access token) whose call asked for it.
    pub client_id: Option<String>,
}

/// How many pending consents the store keeps: a person asking again and again (or a
/// client looping) replaces their oldest, and the whole table has a ceiling, so nobody
/// can fill the store with links never opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsentLimits {
    /// Unexpired pending consents one person keeps; a new one beyond it replaces the
    /// oldest.
    pub per_person: u32,
    /// Unexpired pending consents in all; a new one beyond it is refused.
    pub total: u32,
}

impl Default for ConsentLimits {
    fn default() -> Self {
        ConsentLimits {
            per_person: 5,
            total: 100_000,
        }
    }
}

/// One record of the audit log: an upstream call, or another event a security review
/// asks about (a consent, a withdrawal, a review of tool text, a refused call, a token
/// that could not be had). There is deliberately no field for a body, a header, a query
/// or a token: the log cannot hold a secret it never receives; `detail` holds what the
/// event is about in words and names (a review's old and new text, a refusal's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// When it happened (a call: when it started), milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// What happened ([`super::audit::Event`], as its name).
    pub event: String,
    /// The person (`sub`), `-` for a server without per-person authentication, or
    /// `operator` for the console's static-token holder.
    pub sub: String,
    /// The OAuth client the person came through (`client_id` or `azp` of the token).
    pub client_id: Option<String>,
    pub api: String,
    /// The tool name of the endpoint (calls, reviews), or empty.
    pub endpoint: String,
    /// The HTTP status, or 0 when no response came (refused, timed out, unreachable, or
    /// not yet: a call recorded before it is made).
    pub status: u16,
    pub latency_ms: u32,
    /// JSON: what the event is about, never a secret.
    pub detail: Option<String>,
}

/// A tool definition as an MCP server listed it: what [`Backend::see_tools`] records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenTool {
    /// The server's id in the catalog config.
    pub server: String,
    /// The tool's name as the server gives it.
    pub tool: String,
    /// The definition's digest (name, title, description, schemas, annotations).
    pub digest: String,
    /// The definition as JSON, bounded, for a reviewer to read.
    pub definition: String,
    /// Approved as it is seen, by this (the first-use policy), or `None`: pending.
    pub approved_by: Option<String>,
}

/// Where a definition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinState {
    /// Served.
    Approved,
    /// Held until a reviewer decides.
    Pending,
    /// Held: a reviewer refused it.
    Rejected,
}

impl PinState {
    pub fn as_str(self) -> &'static str {
        match self {
            PinState::Approved => "approved",
            PinState::Pending => "pending",
            PinState::Rejected => "rejected",
        }
    }

    /// The state stored as `s`; anything unknown holds the tool.
    pub fn parse(s: &str) -> PinState {
        match s {
            "approved" => PinState::Approved,
            "rejected" => PinState::Rejected,
            _ => PinState::Pending,
        }
    }
}

/// One definition of one tool, as pinned: a tool is served only in a definition whose row
/// is approved. A tool has a row per definition it was listed in (replicas whose servers
/// disagree each find theirs), at most one of them pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPin {
    pub server: String,
    pub tool: String,
    pub digest: String,
    /// Empty when read without definitions.
    pub definition: String,
    pub state: PinState,
    /// When this definition was first listed (ms since the epoch).
    pub seen_at: i64,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
}

/// What a reviewer decided of a tool's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinDecision {
    /// Serve the definition.
    Approve,
    /// Keep holding it, marked refused.
    Reject,
    /// Stop serving it: it is pending again.
    Revoke,
}

impl PinDecision {
    /// The state a decision leaves.
    pub fn state(self) -> PinState {
        match self {
            PinDecision::Approve => PinState::Approved,
            PinDecision::Reject => PinState::Rejected,
            PinDecision::Revoke => PinState::Pending,
        }
    }
}

/// A state store. Every method is one transaction: it happens entirely or not at all.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// What the store is, for logs (`sqlite:/path`, `postgres://user@host/db`): no password.
    fn describe(&self) -> String;
    /// The schema version the store is at.
    async fn schema_version(&self) -> Result<i64, StoreError>;
    async fn put_token(&self, row: SealedToken) -> Result<(), StoreError>;
    /// Replaces the token row of `row.sub` and `row.api` with `row` only if its sealed
    /// value is still `was` (the row as read: sealing is randomised, so any write since
    /// changed it); whether it did. Sealing a row again after a key rotation uses it, so
    /// that a token another replica refreshed meanwhile is not overwritten by the one
    /// read before, its refresh token spent.
    async fn reseal_token(&self, was: Vec<u8>, row: SealedToken) -> Result<bool, StoreError>;
    async fn token(&self, sub: &str, api: &str) -> Result<Option<SealedToken>, StoreError>;
    async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError>;
    async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError>;
    /// Stores a pending consent within `limits`: the person's oldest beyond
    /// `per_person - 1` go, and [`StoreError::Full`] when the table is at `total`.
    async fn put_consent(
        &self,
        row: SealedConsent,
        limits: ConsentLimits,
    ) -> Result<(), StoreError>;
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
    /// Appends a record; its id.
    async fn record(&self, e: AuditEntry) -> Result<i64, StoreError>;
    /// Sets the outcome of a record written before what it records was done (a call, a
    /// review): its status and latency, and its detail when `detail` is given.
    async fn finish_call(
        &self,
        id: i64,
        status: u16,
        latency_ms: u32,
        detail: Option<String>,
    ) -> Result<(), StoreError>;
    /// Newest first.
    async fn audit(&self, sub: Option<&str>, limit: u32) -> Result<Vec<AuditEntry>, StoreError>;
    /// Takes the lock `name` for `holder` until `now_ms + ttl_ms` unless someone else
    /// holds it unexpired: whether it was taken. Replicas use it so that one of them does
    /// what must happen once (refreshing a rotating refresh token).
    async fn try_lock(
        &self,
        name: &str,
        holder: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Gives the lock back, if `holder` still holds it.
    async fn unlock(&self, name: &str, holder: &str) -> Result<(), StoreError>;
    /// Records definitions listed now that have no row yet: approved when `approved_by`
    /// says so, else pending. A new pending definition replaces the tool's older pending
    /// one, a new automatic approval its older automatic ones (so a server that changes a
    /// tool in a loop leaves one row of each, not one per change). Other rows of
    /// definitions no longer listed stay: one that comes back is served only if approved.
    async fn see_tools(&self, seen: Vec<SeenTool>, now_ms: i64) -> Result<(), StoreError>;
    /// Every pin of `servers`, by server and tool; without `definitions`, their
    /// definitions are left empty (what a replica reads every few seconds).
    async fn tool_pins(
        &self,
        servers: Vec<String>,
        definitions: bool,
    ) -> Result<Vec<ToolPin>, StoreError>;
    /// Applies `decision` to the tool's definition `digest` (the one the reviewer read):
    /// whether there is such a definition.
    async fn decide_tool(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        decision: PinDecision,
        by: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
}
