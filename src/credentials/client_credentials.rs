//! The OAuth 2.0 client credentials grant (RFC 6749 section 4.4): one token per API and
//! client, fetched on first use, reused until shortly before it expires, fetched again
//! after. Concurrent callers share one fetch.

use std::time::{Duration, Instant};

/// A token is fetched again this long before the expiry its server announced.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// Assumed lifetime when the server does not say (`expires_in` absent).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
const TIMEOUT: Duration = Duration::from_secs(10);

/// Why no token could be had. Never carries the client secret or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("cannot reach the token endpoint {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the token endpoint {url} refused the client credentials of '{client_id}': {reason}")]
    Refused {
        url: String,
        client_id: String,
        reason: String,
    },
}

struct Cached {
    token: String,
    good_until: Instant,
}

/// One client's tokens from one token endpoint.
pub struct ClientCredentials {
    token_url: String,
    client_id: String,
    client_secret: String,
    scope: Option<String>,
    /// RFC 8707 `resource` (the API's identifier at the authorization server), if any.
    resource: Option<String>,
    http: reqwest::Client,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    pub fn new(
        token_url: &str,
        client_id: &str,
        client_secret: &str,
        scope: Option<&str>,
        resource: Option<&str>,
    ) -> Result<ClientCredentials, CredentialError> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| CredentialError::Unreachable {
                url: token_url.into(),
                reason: e.to_string(),
            })?;
        Ok(ClientCredentials {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scope: scope.map(str::to_string),
            resource: resource.map(str::to_string),
            http,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// A valid access token: the cached one, or a fresh one.
    pub async fn token(&self) -> Result<String, CredentialError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| Instant::now() < c.good_until) {
            return Ok(c.token.clone());
        }
        let (token, lifetime) = self.fetch().await?;
        *cached = Some(Cached {
            token: token.clone(),
            good_until: Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN),
        });
        Ok(token)
    }

    /// Forgets the cached token (the API refused it: revoked before its expiry).
    pub async fn invalidate(&self) {
        *self.cached.lock().await = None;
    }

    async fn fetch(&self) -> Result<(String, Duration), CredentialError> {
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(s) = &self.scope {
            form.push(("scope", s));
        }
        if let Some(r) = &self.resource {
            form.push(("resource", r));
        }
        let res = self
            .http
            .post(&self.token_url)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|e| CredentialError::Unreachable {
                url: self.token_url.clone(),
                reason: e.without_url().to_string(),
            })?;
        let status = res.status();
        let body: serde_json::Value = res.json().await.unwrap_or_default();
        let token = body.get("access_token").and_then(|v| v.as_str());
        match token {
            Some(t) if status.is_success() && !t.is_empty() => {
                let lifetime = body
                    .get("expires_in")
                    .and_then(|v| v.as_u64())
                    .map(Duration::from_secs)
                    .unwrap_or(DEFAULT_LIFETIME);
                Ok((t.to_string(), lifetime))
            }
            _ => {
                // The OAuth error fields only: an error body could echo what was sent.
                let field = |k: &str| body.get(k).and_then(|v| v.as_str()).unwrap_or("");
                let mut reason = format!("HTTP {}", status.as_u16());
                for part in [field("error"), field("error_description")] {
                    if !part.is_empty() {
                        reason.push_str(": ");
                        reason.push_str(&part.replace(&self.client_secret, "***"));
                    }
                }
                Err(CredentialError::Refused {
                    url: self.token_url.clone(),
                    client_id: self.client_id.clone(),
                    reason,
                })
            }
        }
    }
}
