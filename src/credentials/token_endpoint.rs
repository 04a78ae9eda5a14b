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
    /// Empty for a public client, which names itself in the form instead (PKCE alone
    /// proves it is the one that started the flow).
    client_secret: String,
    http: reqwest::Client,
}

/// What a token endpoint granted.
pub struct Granted {
    pub access_token: String,
    pub lifetime: Duration,
    /// Whether the server said how long the token lives (`expires_in`).
    pub lifetime_announced: bool,
    pub refresh_token: Option<String>,
    /// The scopes granted, when the server says.
    pub scope: Option<String>,
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
        self.grant(form).await.map(|g| (g.access_token, g.lifetime))
    }

    /// The client id this endpoint authenticates as.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The client secret (empty for a public client), for a sibling endpoint of the
    /// same authorization server.
    pub(super) fn secret(&self) -> &str {
        &self.client_secret
    }

    /// Posts `form`, the client authenticated by HTTP Basic or, for a public client, by its
    /// id in the form.
    async fn post(&self, form: &[(&str, &str)]) -> Result<reqwest::Response, CredentialError> {
        let mut req = self
            .http
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "application/json");
        let mut fields: Vec<(&str, &str)> = form.to_vec();
        if self.client_secret.is_empty() {
            fields.push(("client_id", &self.client_id));
        } else {
            req = req.basic_auth(&self.client_id, Some(&self.client_secret));
        }
        req.form(&fields)
            .send()
            .await
            .map_err(|e| CredentialError::Unreachable {
                url: self.url.clone(),
                reason: e.without_url().to_string(),
            })
    }

    /// Posts `form` where only success matters (token revocation, RFC 7009).
    pub async fn post_only(&self, form: &[(&str, &str)]) -> Result<(), CredentialError> {
        let res = self.post(form).await?;
        if res.status().is_success() {
            return Ok(());
        }
        Err(CredentialError::Refused {
            url: self.url.clone(),
            client_id: self.client_id.clone(),
            reason: format!("HTTP {}", res.status().as_u16()),
        })
    }

    /// The token endpoint's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts `form` with the client's credentials (or, for a public client, its id);
    /// everything the server granted. Counted by grant type and result (metrics).
    pub async fn grant(&self, form: &[(&str, &str)]) -> Result<Granted, CredentialError> {
        let granted = self.grant_uncounted(form).await;
        let kind = form.iter().find(|(k, _)| *k == "grant_type");
        crate::telemetry::metrics::token_request(kind.map_or("", |(_, v)| v), granted.is_ok());
        granted
    }

    async fn grant_uncounted(&self, form: &[(&str, &str)]) -> Result<Granted, CredentialError> {
        let res = self.post(form).await?;
        let status = res.status();
        let body: serde_json::Value = res.json().await.unwrap_or_default();
        match body.get("access_token").and_then(|v| v.as_str()) {
            Some(t) if status.is_success() && !t.is_empty() => {
                let announced = body
                    .get("expires_in")
                    .and_then(|v| v.as_u64())
                    .map(Duration::from_secs);
                let text = |k: &str| {
                    body.get(k)
                        .and_then(|v| v.as_str())
                        .filter(|v| !v.is_empty())
                        .map(str::to_string)
                };
                Ok(Granted {
                    access_token: t.to_string(),
                    lifetime: announced.unwrap_or(DEFAULT_LIFETIME),
                    lifetime_announced: announced.is_some(),
                    refresh_token: text("refresh_token"),
                    scope: text("scope"),
                })
            }
            _ => {
                // The OAuth error fields only: an error body could echo what was sent.
                let field = |k: &str| body.get(k).and_then(|v| v.as_str()).unwrap_or("");
                let mut reason = format!("HTTP {}", status.as_u16());
                for part in [field("error"), field("error_description")] {
                    if !part.is_empty() {
                        reason.push_str(": ");
                        let part = if self.client_secret.is_empty() {
                            part.to_string()
                        } else {
                            part.replace(&self.client_secret, "***")
                        };
                        reason.push_str(&part);
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
