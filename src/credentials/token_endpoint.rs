//! One OAuth token endpoint and the client that authenticates to it (HTTP Basic, RFC 6749
//! section 2.3.1): the request both grants here send, and a readable refusal.

use super::CredentialError;
use std::time::Duration;

/// A token is used until this long before the expiry its server announced.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// Assumed lifetime when the server does not say (`expires_in` absent).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
const TIMEOUT: Duration = Duration::from_secs(10);

pub struct TokenEndpoint {
    url: String,
    client_id: String,
    client_secret: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for TokenEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEndpoint")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl TokenEndpoint {
    pub fn new(
        url: &str,
        client_id: &str,
        client_secret: &str,
    ) -> Result<TokenEndpoint, CredentialError> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| CredentialError::Unreachable {
                url: url.into(),
                reason: e.to_string(),
            })?;
        Ok(TokenEndpoint {
            url: url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            http,
        })
    }

    /// Posts `form` with the client's credentials; the access token and its lifetime.
    pub async fn request(
        &self,
        form: &[(&str, &str)],
    ) -> Result<(String, Duration), CredentialError> {
        let res = self
            .http
            .post(&self.url)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form)
            .send()
            .await
            .map_err(|e| CredentialError::Unreachable {
                url: self.url.clone(),
                reason: e.without_url().to_string(),
            })?;
        let status = res.status();
        let body: serde_json::Value = res.json().await.unwrap_or_default();
        match body.get("access_token").and_then(|v| v.as_str()) {
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
                    url: self.url.clone(),
                    client_id: self.client_id.clone(),
                    reason,
                })
            }
        }
    }
}
