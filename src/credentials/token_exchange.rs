//! OAuth 2.0 token exchange (RFC 8693) on behalf of the caller: the person's MCP access
//! token (the subject token) is traded at the organisation's identity provider for a token
//! for one upstream API, with the same person as subject. Tokens are cached per person and
//! used until shortly before they expire, never beyond the subject token's own expiry.

use super::token_endpoint::{TokenEndpoint, EXPIRY_MARGIN};
use super::CredentialError;
use std::collections::HashMap;
use std::time::{Duration, Instant};

const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// People whose tokens are kept in memory at most; past it the cache starts over.
const MAX_CACHED: usize = 10_000;

struct Cached {
    token: String,
    good_until: Instant,
}

/// Exchanges people's tokens for one API's.
pub struct TokenExchange {
    endpoint: TokenEndpoint,
    /// The API, as the identity provider names it (`audience`).
    audience: String,
    scope: Option<String>,
    cached: tokio::sync::Mutex<HashMap<String, Cached>>,
}

impl std::fmt::Debug for TokenExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenExchange")
            .field("endpoint", &self.endpoint)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl TokenExchange {
    pub fn new(
        token_url: &str,
        client_id: &str,
        client_secret: &str,
        audience: &str,
        scope: Option<&str>,
    ) -> Result<TokenExchange, CredentialError> {
        Ok(TokenExchange {
            endpoint: TokenEndpoint::new(token_url, client_id, client_secret)?,
            audience: audience.into(),
            scope: scope.map(str::to_string),
            cached: tokio::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The API token of person `sub`, whose verified MCP access token is `subject_token`
    /// and expires at `subject_expires_at` (seconds since the Unix epoch).
    pub async fn token_for(
        &self,
        sub: &str,
        subject_token: &str,
        subject_expires_at: u64,
    ) -> Result<String, CredentialError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.get(sub).filter(|c| Instant::now() < c.good_until) {
            return Ok(c.token.clone());
        }
        let mut form = vec![
            ("grant_type", GRANT),
            ("subject_token", subject_token),
            ("subject_token_type", ACCESS_TOKEN_TYPE),
            ("requested_token_type", ACCESS_TOKEN_TYPE),
            ("audience", self.audience.as_str()),
        ];
        if let Some(s) = &self.scope {
            form.push(("scope", s));
        }
        let (token, lifetime) = self.endpoint.request(&form).await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let subject_left = Duration::from_secs(subject_expires_at.saturating_sub(now));
        let good_for = lifetime.min(subject_left).saturating_sub(EXPIRY_MARGIN);
        if cached.len() >= MAX_CACHED {
            cached.clear();
        }
        cached.insert(
            sub.to_string(),
            Cached {
                token: token.clone(),
                good_until: Instant::now() + good_for,
            },
        );
        Ok(token)
    }

    /// Forgets a person's token (the API refused it, or the person signed out).
    pub async fn invalidate(&self, sub: &str) {
        self.cached.lock().await.remove(sub);
    }
}
