//! OAuth 2.0 token exchange (RFC 8693) on behalf of the caller: the person's MCP access
//! token (the subject token) is traded at the organisation's identity provider for a token
//! for one upstream API, with the same person as subject. Tokens are cached per person and
//! used until shortly before they expire, never beyond the subject token's own expiry.
//!
//! Each person has a lock of their own: one person's exchange in flight (or a slow
//! provider) holds up nobody else, while two calls of one person share one exchange.

use super::token_endpoint::{TokenEndpoint, EXPIRY_MARGIN};
use super::{CredentialError, Obtained};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
const GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// People whose tokens are kept in memory at most; past it, expired ones are forgotten
/// first, then everyone not in the middle of an exchange.
const MAX_CACHED: usize = 10_000;

#[derive(Clone)]
struct Cached {
    token: String,
    good_until: Instant,
}

type Slot = Arc<tokio::sync::Mutex<Option<Cached>>>;

/// Exchanges people's tokens for one API's.
pub struct TokenExchange {
    endpoint: TokenEndpoint,
    /// The API, as the identity provider names it (`audience`).
    audience: String,
    scope: Option<String>,
    people: Mutex<HashMap<String, Slot>>,
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
            people: Mutex::new(HashMap::new()),
        })
    }

    /// Where exchanges are posted.
    pub fn token_url(&self) -> &str {
        self.endpoint.url()
    }

    /// The lock and cache of one person, made on first use.
    fn slot(&self, sub: &str) -> Slot {
        let mut people = self.people.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = people.get(sub) {
            return Arc::clone(s);
        }
        if people.len() >= MAX_CACHED {
            let now = Instant::now();
            // Keep only people in the middle of an exchange or with a token still good.
            people.retain(|_, s| match s.try_lock() {
                Ok(c) => c.as_ref().is_some_and(|c| now < c.good_until),
                Err(_) => true,
            });
            if people.len() >= MAX_CACHED {
                people.retain(|_, s| s.try_lock().is_err());
            }
        }
        Arc::clone(people.entry(sub.to_string()).or_default())
    }

    /// How many people's tokens are kept (tests: memory stays bounded).
    pub fn cached(&self) -> usize {
        self.people
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The API token of person `sub`, whose verified MCP access token is `subject_token`
    /// and expires at `subject_expires_at` (seconds since the Unix epoch).
    pub async fn token_for(
        &self,
        sub: &str,
        subject_token: &str,
        subject_expires_at: u64,
    ) -> Result<Obtained, CredentialError> {
        let slot = self.slot(sub);
        let mut cached = slot.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| Instant::now() < c.good_until) {
            return Ok(Obtained {
                value: c.token.clone(),
                good_until: c.good_until,
            });
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
        let good_until = Instant::now() + good_for;
        *cached = Some(Cached {
            token: token.clone(),
            good_until,
        });
        Ok(Obtained {
            value: token,
            good_until,
        })
    }

    /// Forgets a person's token (the API refused it, or the person signed out).
    pub async fn invalidate(&self, sub: &str) {
        let slot = self
            .people
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sub)
            .cloned();
        if let Some(s) = slot {
            *s.lock().await = None;
        }
    }
}
