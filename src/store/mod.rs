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

pub mod backend;
pub mod migrations;
pub mod postgres;
pub mod seal;
pub mod sqlite;

pub use backend::{AuditEntry, Backend, SealedConsent, SealedToken};
pub use seal::{Sealer, KEY_ENV};

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

    fn open_token(&self, row: SealedToken) -> Result<UpstreamToken, StoreError> {
        let plain = self
            .sealer()?
            .open(&token_context(&row.sub, &row.api), &row.sealed)?;
        let mut t: UpstreamToken = serde_json::from_slice(&plain)
            .map_err(|_| StoreError::Key("a stored token does not parse".into()))?;
        t.expires_at = row.expires_at;
        t.scope = row.scope;
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

    /// `sub`'s token for `api`, if one is stored.
    pub async fn token(&self, sub: &str, api: &str) -> Result<Option<UpstreamToken>, StoreError> {
        match self.backend.token(sub, api).await? {
            Some(row) => self.open_token(row).map(Some),
            None => Ok(None),
        }
    }

    /// Forgets `sub`'s token for `api` (the person revokes it); whether there was one.
    pub async fn delete_token(&self, sub: &str, api: &str) -> Result<bool, StoreError> {
        self.backend.delete_token(sub, api).await
    }

    /// The APIs `sub` holds tokens for, with their expiry (no secret).
    pub async fn token_apis(&self, sub: &str) -> Result<Vec<(String, Option<i64>)>, StoreError> {
        self.backend.token_apis(sub).await
    }

    /// Records a consent the person is about to be asked for.
    pub async fn put_consent(&self, c: &PendingConsent) -> Result<(), StoreError> {
        let sealed = self.sealer()?.seal(
            &consent_context(&c.state, &c.sub, &c.api),
            c.pkce_verifier.as_bytes(),
        )?;
        self.backend
            .put_consent(SealedConsent {
                state: c.state.clone(),
                sub: c.sub.clone(),
                api: c.api.clone(),
                sealed,
                created_at: c.created_at,
                expires_at: c.expires_at,
            })
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
        let verifier = self.sealer()?.open(
            &consent_context(&row.state, &row.sub, &row.api),
            &row.sealed,
        )?;
        Ok(Some(PendingConsent {
            state: row.state,
            sub: row.sub,
            api: row.api,
            pkce_verifier: String::from_utf8(verifier)
                .map_err(|_| StoreError::Key("a stored PKCE verifier is damaged".into()))?,
            created_at: row.created_at,
            expires_at: row.expires_at,
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

    /// Appends one upstream call to the audit log.
    pub async fn record_call(&self, e: &AuditEntry) -> Result<(), StoreError> {
        self.backend.record_call(e.clone()).await
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
        };
        let s = format!("{t:?} {c:?}");
        assert!(!s.contains("secret"), "{s}");
    }
}
