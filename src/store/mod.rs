//! State that outlives a request: per-person upstream tokens (sealed), pending consents and
//! the audit log, behind one [`Backend`] trait with two implementations: an embedded SQLite
//! file (the default, in the catalog's data folder) and PostgreSQL (`--state
//! postgres://...`, shared by replicas).
//!
//! [`Store`] is what the rest of the program uses: it seals secrets before they reach a
//! backend ([`seal`]) and opens them on the way back, so neither database ever holds a token
//! in clear. Schemas are versioned ([`migrations`]): a store written by an older version is
//! upgraded when opened; one written by a newer version is refused, not guessed at.
//!
//! This module knows nothing of MCP or HTTP serving.

pub mod audit;
pub mod backend;
pub mod file_modes;
pub mod migrations;
pub mod pins;
pub mod postgres;
pub mod seal;
pub mod sqlite;

pub use audit::Event;
pub use backend::{
    AuditEntry, Backend, ConsentLimits, PinDecision, PinState, SealedConsent, SealedToken,
    SeenTool, ToolPin,
};
pub use seal::{Sealer, KEY_ENV, PREVIOUS_KEYS_ENV};

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Why a store operation failed. Messages name the store and the cause, never a secret.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// The store cannot be reached or did not answer in time; nothing was written.
    #[error("the state store is unavailable: {0}")]
    Unavailable(String),
    /// The store answered with an error (a constraint, a full disk, a bad schema).
    #[error("the state store failed: {0}")]
    Failed(String),
    /// The store was written by a newer version of shortlist.
    #[error("the state store {0}")]
    Incompatible(String),
    /// Sealing or opening a secret failed, or no key is configured.
    #[error("{0}")]
    Key(String),
    /// A bounded table is at its ceiling (pending consents).
    #[error("{0}")]
    Full(String),
}

/// The refusal of a consent beyond the store's ceiling.
fn consents_full(total: u32) -> StoreError {
    StoreError::Full(format!(
        "too many consent links are waiting to be opened ({total}); try again once some expire"
    ))
}

/// A person's token for one upstream API, in clear (it exists only in memory).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamToken {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), if known.
    #[serde(skip)]
    pub expires_at: Option<i64>,
    /// The scopes granted, space separated (not secret).
    #[serde(skip)]
    pub scope: String,
}

impl std::fmt::Debug for UpstreamToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamToken")
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A consent the person has been asked for and not yet given (OAuth authorization code
/// with PKCE): found again by `state` when the authorization server redirects back.
#[derive(Clone, PartialEq, Eq)]
pub struct PendingConsent {
    /// The OAuth `state` value: random, unguessable, the key of the row.
    pub state: String,
    pub sub: String,
    pub api: String,
    /// The PKCE code verifier (a secret: sealed at rest).
    pub pkce_verifier: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// The OAuth client (of the person's MCP access token) whose call asked for it.
    pub client_id: Option<String>,
}

impl std::fmt::Debug for PendingConsent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingConsent")
            .field("sub", &self.sub)
            .field("api", &self.api)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// Where the state lives, as `--state` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL connection string (`postgres://` or `postgresql://`).
    Postgres(String),
}

impl Location {
    /// `postgres://...`, `sqlite:PATH`, or a plain path (a SQLite file). Without `--state`
    /// the default is `state.sqlite3` in the catalog's data folder.
    pub fn parse(spec: Option<&str>, data_dir: &Path) -> Location {
        match spec.map(str::trim) {
            None | Some("") => Location::Sqlite(data_dir.join("state.sqlite3")),
            Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
                Location::Postgres(s.to_string())
            }
            Some(s) => Location::Sqlite(s.strip_prefix("sqlite:").unwrap_or(s).into()),
        }
    }
}

/// The state store: a backend plus the key that seals secrets.
pub struct Store {
    backend: Arc<dyn Backend>,
    sealer: Option<Sealer>,
}

fn token_context(sub: &str, api: &str) -> String {
    format!("token\0{sub}\0{api}")
}

fn consent_context(state: &str, sub: &str, api: &str) -> String {
    format!("consent\0{state}\0{sub}\0{api}")
}

impl Store {
    /// Opens (creating and migrating as needed) the store at `location`. `sealer` is the
    /// key for secrets; without one the store still records the audit log, and any
    /// operation on a secret says that `SHORTLIST_STATE_KEY` is missing.
    pub async fn open(location: &Location, sealer: Option<Sealer>) -> Result<Store, StoreError> {
        let backend: Arc<dyn Backend> = match location {
            Location::Sqlite(p) => Arc::new(sqlite::SqliteBackend::open(p).await?),
            Location::Postgres(url) => Arc::new(postgres::PostgresBackend::open(url).await?),
        };
        Ok(Store::with_backend(backend, sealer))
    }

    pub fn with_backend(backend: Arc<dyn Backend>, sealer: Option<Sealer>) -> Store {
        Store { backend, sealer }
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    fn sealer(&self) -> Result<&Sealer, StoreError> {
        self.sealer.as_ref().ok_or_else(|| {
            StoreError::Key(format!(
                "per-person tokens are sealed with a key: set {KEY_ENV} (32 bytes, base64)"
            ))
        })
    }

    fn seal_token(
        &self,
        sub: &str,
        api: &str,
        t: &UpstreamToken,
        now: i64,
    ) -> Result<SealedToken, StoreError> {
        let plain = serde_json::to_vec(t).map_err(|e| StoreError::Failed(e.to_string()))?;
        Ok(SealedToken {
            sub: sub.into(),
            api: api.into(),
            sealed: self.sealer()?.seal(&token_context(sub, api), &plain)?,
            expires_at: t.expires_at,
            scope: t.scope.clone(),
            updated_at: now,
        })
    }

    fn open_token(&self, row: &SealedToken) -> Result<UpstreamToken, StoreError> {
        let plain = self
            .sealer()?
            .open(&token_context(&row.sub, &row.api), &row.sealed)?;
        let mut t: UpstreamToken = serde_json::from_slice(&plain)
            .map_err(|_| StoreError::Key("a stored token does not parse".into()))?;
        t.expires_at = row.expires_at;
        t.scope = row.scope.clone();
        Ok(t)
    }

    /// Stores (or replaces) `sub`'s token for `api`.
    pub async fn put_token(
        &self,
        sub: &str,
        api: &str,
        t: &UpstreamToken,
    ) -> Result<(), StoreError> {
        let row = self.seal_token(sub, api, t, now())?;
        self.backend.put_token(row).await
    }

    /// `sub`'s token for `api`, if one is stored that opens.
    ///
    /// A row that does not open (sealed under a key no longer configured, or damaged)
    /// counts as absent, so the person is asked to consent again and the new token
    /// replaces it: a lost key must not lock people out. A row sealed under a key that a
    /// rotation replaced is sealed again under the current one, only if it is still the
    /// row that was read: another replica may have refreshed the token meanwhile, and its
    /// new refresh token must not give way to the spent one read here. Without any key at
    /// all the error stands: that is the deployment's to fix, not the person's.
    pub async fn token(&self, sub: &str, api: &str) -> Result<Option<UpstreamToken>, StoreError> {
        let Some(row) = self.backend.token(sub, api).await? else {
            return Ok(None);
        };
        let sealer = self.sealer()?;
        let t = match self.open_token(&row) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(sub, api, error = %e, "a stored token does not open; it counts as absent and the person will be asked to consent again");
                return Ok(None);
            }
        };
        if sealer.is_stale(&row.sealed) {
            // Best effort: a row that stays under the previous key still opens, and a row
            // written since the read (a refresh) is left as it is.
            match self.seal_token(sub, api, &t, row.updated_at) {
                Ok(fresh) => {
                    if let Err(e) = self.backend.reseal_token(row.sealed.clone(), fresh).await {
                        tracing::warn!(sub, api, error = %e, "a token sealed under a previous key could not be sealed again");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "sealing a token again failed"),
            }
        }
        Ok(Some(t))
    }

    /// When `sub`'s token for `api` was last written (seconds), if one is stored:
    /// read without opening it (a replica that waited on another's refresh asks this).
    pub async fn token_updated_at(&self, sub: &str, api: &str) -> Result<Option<i64>, StoreError> {
        Ok(self.backend.token(sub, api).await?.map(|r| r.updated_at))
    }

    /// Forgets `sub`'s token for `api` (the person revokes it); whether there was one.
    /// The row is deleted without being opened, so a row that no longer opens goes too.
    pub async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError> {
        self.backend.delete_token(sub, api).await
    }

    /// The APIs `sub` holds tokens for, with their expiry (no secret).
    pub async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError> {
        self.backend.token_apis(sub).await
    }

    /// `plain` sealed under the store's key for `context`, as base64url text: for values
    /// a browser carries (a consent's cookie), which any replica with the same key opens.
    pub fn seal_value(&self, context: &str, plain: &[u8]) -> Result<String, StoreError> {
        use base64::Engine;
        let sealed = self.sealer()?.seal(context, plain)?;
        Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed))
    }

    /// What [`Store::seal_value`] sealed for `context`, or an error for anything else.
    pub fn open_value(&self, context: &str, text: &str) -> Result<Vec<u8>, StoreError> {
        use base64::Engine;
        let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|_| StoreError::Key("a sealed value is not base64url".into()))?;
        self.sealer()?.open(context, &sealed)
    }

    /// Records a consent the person is about to be asked for, within `limits` (the
    /// person's oldest pending ones make room; [`StoreError::Full`] at the ceiling).
    pub async fn put_consent(
        &self,
        c: &PendingConsent,
        limits: ConsentLimits,
    ) -> Result<(), StoreError> {
        let sealed = self.sealer()?.seal(
            &consent_context(&c.state, &c.sub, &c.api),
            c.pkce_verifier.as_bytes(),
        )?;
        self.backend
            .put_consent(
                SealedConsent {
                    state: c.state.clone(),
                    sub: c.sub.clone(),
                    api: c.api.clone(),
                    sealed,
                    created_at: c.created_at,
                    expires_at: c.expires_at,
                    client_id: c.client_id.clone(),
                },
                limits,
            )
            .await
    }

    /// The pending consent of `state`, unless it expired.
    pub async fn consent(&self, state: &str) -> Result<Option<PendingConsent>, StoreError> {
        let Some(row) = self.backend.consent(state).await? else {
            return Ok(None);
        };
        if row.expires_at <= now() {
            return Ok(None);
        }
        let sealer = self.sealer()?;
        let verifier = match sealer.open(
            &consent_context(&row.state, &row.sub, &row.api),
            &row.sealed,
        ) {
            Ok(v) => v,
            Err(e) => {
                // As for tokens: a link that cannot be finished is as good as expired.
                tracing::warn!(error = %e, "a pending consent does not open; it counts as expired");
                return Ok(None);
            }
        };
        Ok(Some(PendingConsent {
            state: row.state,
            sub: row.sub,
            api: row.api,
            pkce_verifier: String::from_utf8(verifier)
                .map_err(|_| StoreError::Key("a stored PKCE verifier is damaged".into()))?,
            created_at: row.created_at,
            expires_at: row.expires_at,
            client_id: row.client_id,
        }))
    }

    /// Completes the consent of `state` with the token it yielded, in one transaction: the
    /// pending consent goes and the token is stored, or neither happens. `false` when the
    /// consent is gone (used, expired, or never there).
    pub async fn complete_consent(
        &self,
        state: &str,
        t: &UpstreamToken,
    ) -> Result<bool, StoreError> {
        let Some(c) = self.backend.consent(state).await? else {
            return Ok(false);
        };
        let row = self.seal_token(&c.sub, &c.api, t, now())?;
        self.backend.complete_consent(state, now(), row).await
    }

    /// Removes consents that expired; how many.
    pub async fn expire_consents(&self) -> Result<u64, StoreError> {
        self.backend.expire_consents(now()).await
    }

    /// Appends one record to the audit log; its id.
    pub async fn record(&self, e: &AuditEntry) -> Result<i64, StoreError> {
        self.backend.record(e.clone()).await
    }

    /// Sets the outcome of a record written before what it records was done; `detail`
    /// (JSON) replaces the record's when given.
    pub async fn finish_call(
        &self,
        id: i64,
        status: u16,
        latency_ms: u32,
        detail: Option<serde_json::Value>,
    ) -> Result<(), StoreError> {
        let detail = detail.map(|mut d| {
            audit::clip(&mut d);
            d.to_string()
        });
        self.backend
            .finish_call(id, status, latency_ms, detail)
            .await
    }

    /// Takes the lock `name` for `holder` for `ttl` unless another holder has it.
    pub async fn try_lock(
        &self,
        name: &str,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2);
        self.backend.try_lock(name, holder, now_ms(), ttl_ms).await
    }

    /// Gives a lock back.
    /// Records the tool definitions listed now ([`Backend::see_tools`]).
    pub async fn see_tools(&self, seen: Vec<SeenTool>) -> Result<(), StoreError> {
        if seen.is_empty() {
            return Ok(());
        }
        self.backend.see_tools(seen, now_ms()).await
    }

    /// Every pin of `servers`, their definitions included.
    pub async fn tool_pins(&self, servers: Vec<String>) -> Result<Vec<ToolPin>, StoreError> {
        self.backend.tool_pins(servers, true).await
    }

    /// A reviewer's decision on a tool's definition ([`Backend::decide_tool`]).
    pub async fn decide_tool(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        decision: PinDecision,
        by: &str,
    ) -> Result<bool, StoreError> {
        self.backend
            .decide_tool(server, tool, digest, decision, by, now_ms())
            .await
    }

    pub async fn unlock(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        self.backend.unlock(name, holder).await
    }

    /// The latest audit entries, newest first, of one person or of everyone.
    pub async fn audit(
        &self,
        sub: Option<&str>,
        limit: u32,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        self.backend.audit(sub, limit).await
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let d = Path::new("/data");
        assert_eq!(
            Location::parse(None, d),
            Location::Sqlite("/data/state.sqlite3".into())
        );
        assert_eq!(
            Location::parse(Some("sqlite:/x.db"), d),
            Location::Sqlite("/x.db".into())
        );
        assert_eq!(
            Location::parse(Some("postgresql://u@h/db"), d),
            Location::Postgres("postgresql://u@h/db".into())
        );
    }

    #[test]
    fn debug_output_hides_secrets() {
        let t = UpstreamToken {
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(1),
            scope: "repo".into(),
        };
        let c = PendingConsent {
            state: "state-secret".into(),
            sub: "alice".into(),
            api: "gh".into(),
            pkce_verifier: "verifier-secret".into(),
            created_at: 0,
            expires_at: 1,
            client_id: None,
        };
        let s = format!("{t:?} {c:?}");
        assert!(!s.contains("secret"), "{s}");
    }
}
