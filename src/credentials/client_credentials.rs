//! The OAuth 2.0 client credentials grant (RFC 6749 section 4.4): one token per API and
//! client, fetched on first use, reused until shortly before it expires, fetched again
//! after. Concurrent callers share one fetch.

use std::time::{Duration, Instant};

use super::token_endpoint::{TokenEndpoint, EXPIRY_MARGIN};
use super::{CredentialError, Obtained};

struct Cached {
    token: String,
    good_until: Instant,
}

/// One client's tokens from one token endpoint.
pub struct ClientCredentials {
    endpoint: TokenEndpoint,
    scope: Option<String>,
    /// RFC 8707 `resource` (the API's identifier at the authorization server), if any.
    resource: Option<String>,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("endpoint", &self.endpoint)
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
        Ok(ClientCredentials {
            endpoint: TokenEndpoint::new(token_url, client_id, client_secret)?,
            scope: scope.map(str::to_string),
            resource: resource.map(str::to_string),
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// A valid access token: the cached one, or a fresh one.
    pub async fn token(&self) -> Result<Obtained, CredentialError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| Instant::now() < c.good_until) {
            return Ok(Obtained {
                value: c.token.clone(),
                good_until: c.good_until,
            });
        }
        let (token, lifetime) = self.fetch().await?;
        let good_until = Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN);
        *cached = Some(Cached {
            token: token.clone(),
            good_until,
        });
        Ok(Obtained {
            value: token,
            good_until,
        })
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
        self.endpoint.request(&form).await
    }
}
