//! The token for one upstream call, from the credential kind an API's config names:
//! the client credentials grant (one token for everyone), token exchange (the person's
//! own token, traded for their MCP access token) or the authorization code grant (the
//! person's own token after they consent once; kept sealed in the state store).
//!
//! The broker keeps one client per API and credential config, so cached tokens survive a
//! catalog reload that leaves the API's credentials alone, and a changed config starts
//! afresh. Every failure is a readable sentence naming the API and what to do; none
//! carries a secret.

use super::authorization_code::{AuthorizationCode, AuthorizationCodeSettings};
use super::token_endpoint::{Granted, EXPIRY_MARGIN};
use super::{ClientCredentials, TokenExchange};
use crate::catalog::AuthConfig;
use crate::store::{PendingConsent, Store, UpstreamToken};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How long a consent link stays good.
pub const CONSENT_TTL_SECS: i64 = 600;

/// Looks up an environment variable (the client secrets).
pub type SecretLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// The verified person a call is made for.
#[derive(Clone)]
pub struct Person {
    /// The access token's `sub`.
    pub sub: String,
    /// The person's MCP access token: sent only to the identity provider that issued it,
    /// as the subject of a token exchange, never to an upstream API.
    pub subject_token: String,
    /// When that token expires (seconds since the Unix epoch).
    pub expires_at: u64,
}

impl std::fmt::Debug for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Person")
            .field("sub", &self.sub)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// What a call gets from the broker.
pub enum Grant {
    /// A bearer token for the upstream request.
    Token(String),
    /// The person has to consent first, by opening `link`; `state` names the pending
    /// consent.
    Consent { link: String, state: String },
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Grant::Token(_) => f.write_str("Grant::Token(..)"),
            Grant::Consent { link, .. } => write!(f, "Grant::Consent({link})"),
        }
    }
}

enum Client {
    Machine(ClientCredentials),
    Exchange(TokenExchange),
    Consent(AuthorizationCode),
}

/// Upstream tokens obtained at run time; see the module documentation.
pub struct Broker {
    secrets: Arc<SecretLookup>,
    /// The redirect URI of authorization code APIs that name none: `/oauth/callback` next
    /// to the server's `[auth]` audience.
    default_redirect: Option<String>,
    clients: Mutex<HashMap<String, Arc<Client>>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("default_redirect", &self.default_redirect)
            .finish_non_exhaustive()
    }
}

impl Broker {
    /// A broker reading client secrets through `secrets`. `audience` is the `[auth]`
    /// audience (the server's `/mcp` URL), which places the OAuth callback.
    pub fn new(secrets: Arc<SecretLookup>, audience: Option<&str>) -> Broker {
        Broker {
            secrets,
            default_redirect: audience.and_then(callback_url),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The token for a call to `api` by `person` (`None`: no verified person).
    pub async fn grant(
        &self,
        api: &str,
        auth: &AuthConfig,
        person: Option<&Person>,
        store: Option<&Store>,
    ) -> Result<Grant, String> {
        match &*self.client(api, auth)? {
            Client::Machine(cc) => cc
                .token()
                .await
                .map(Grant::Token)
                .map_err(|e| e.to_string()),
            Client::Exchange(tx) => {
                let p = need_person(api, person)?;
                tx.token_for(&p.sub, &p.subject_token, p.expires_at)
                    .await
                    .map(Grant::Token)
                    .map_err(|e| format!("cannot get your token for API '{api}': {e}"))
            }
            Client::Consent(ac) => {
                let p = need_person(api, person)?;
                let store = need_store(api, store)?;
                consented(api, ac, &p.sub, store).await
            }
        }
    }

    /// The API refused the token `grant` gave (revoked before its expiry): forget it, so
    /// the next grant fetches, refreshes or asks anew.
    pub async fn refused(
        &self,
        api: &str,
        auth: &AuthConfig,
        person: Option<&Person>,
        store: Option<&Store>,
    ) {
        let Ok(client) = self.client(api, auth) else {
            return;
        };
        match &*client {
            Client::Machine(cc) => cc.invalidate().await,
            Client::Exchange(tx) => {
                if let Some(p) = person {
                    tx.invalidate(&p.sub).await;
                }
            }
            Client::Consent(ac) => {
                let (Some(p), Some(store)) = (person, store) else {
                    return;
                };
                // Refreshed if it can be, else forgotten (the next call asks for consent).
                if let Ok(Some(t)) = store.token(&p.sub, api).await {
                    let renewed = match &t.refresh_token {
                        Some(rt) => refreshed(ac, rt).await,
                        None => None,
                    };
                    let outcome = match renewed {
                        Some(nt) => store.put_token(&p.sub, api, &nt).await,
                        None => store.delete_token(&p.sub, api).await.map(|_| ()),
                    };
                    if let Err(e) = outcome {
                        tracing::error!(api, error = %e, "a refused token could not be replaced");
                    }
                }
            }
        }
    }

    /// Finishes the consent named `state` with the `code` the authorization server sent
    /// back; the person and API it was for.
    pub async fn complete(
        &self,
        auth_of: impl Fn(&str) -> Option<AuthConfig>,
        state: &str,
        code: &str,
        store: &Store,
    ) -> Result<(String, String), String> {
        let pending = store
            .consent(state)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                "this consent link has expired or was already used; call the tool again for a new one"
                    .to_string()
            })?;
        let api = pending.api.clone();
        let auth =
            auth_of(&api).ok_or_else(|| format!("API '{api}' is no longer in the catalog"))?;
        let Client::Consent(ac) = &*self.client(&api, &auth)? else {
            return Err(format!(
                "API '{api}' no longer asks each person for consent (its config changed)"
            ));
        };
        let granted = ac.redeem(code, &pending.pkce_verifier).await.map_err(|e| {
            format!("the authorization server did not grant access to API '{api}': {e}")
        })?;
        let token = upstream_token(granted, None);
        if !store
            .complete_consent(state, &token)
            .await
            .map_err(|e| e.to_string())?
        {
            return Err(
                "this consent link was used meanwhile; call the tool again if it still asks".into(),
            );
        }
        Ok((pending.sub, api))
    }

    /// Forgets `sub`'s token for `api`, revoking it at the authorization server when the
    /// config names a revocation endpoint. Whether there was one.
    pub async fn disconnect(
        &self,
        api: &str,
        auth: Option<&AuthConfig>,
        sub: &str,
        store: &Store,
    ) -> Result<bool, String> {
        let token = store.token(sub, api).await.map_err(|e| e.to_string())?;
        if let (Some(t), Some(auth)) = (&token, auth) {
            if let Ok(client) = self.client(api, auth) {
                if let Client::Consent(ac) = &*client {
                    let (value, hint) = match &t.refresh_token {
                        Some(rt) => (rt.as_str(), "refresh_token"),
                        None => (t.access_token.as_str(), "access_token"),
                    };
                    if let Err(e) = ac.revoke(value, hint).await {
                        // Forgotten here whatever the server says: the person asked.
                        tracing::warn!(api, error = %e, "the authorization server did not confirm the revocation");
                    }
                }
            }
        }
        store
            .delete_token(sub, api)
            .await
            .map_err(|e| e.to_string())
    }

    /// The client of `api` for this credential config, made on first use.
    fn client(&self, api: &str, auth: &AuthConfig) -> Result<Arc<Client>, String> {
        let key = format!("{api}\0{auth:?}");
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = clients.get(&key) {
            return Ok(Arc::clone(c));
        }
        let client = Arc::new(self.make(api, auth)?);
        clients.insert(key, Arc::clone(&client));
        Ok(client)
    }

    fn make(&self, api: &str, auth: &AuthConfig) -> Result<Client, String> {
        let secret = |var: &str| -> Result<String, String> {
            match (self.secrets)(var) {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(format!(
                    "environment variable {var} is not set; it should hold the OAuth client secret for API '{api}' (see `auth` in the catalog config)"
                )),
            }
        };
        let made = match auth {
            AuthConfig::ClientCredentials {
                token_url,
                client_id,
                client_secret_env,
                scope,
                resource,
            } => ClientCredentials::new(
                token_url,
                client_id,
                &secret(client_secret_env)?,
                scope.as_deref(),
                resource.as_deref(),
            )
            .map(Client::Machine),
            AuthConfig::TokenExchange {
                token_url,
                client_id,
                client_secret_env,
                audience,
                scope,
            } => TokenExchange::new(
                token_url,
                client_id,
                &secret(client_secret_env)?,
                audience,
                scope.as_deref(),
            )
            .map(Client::Exchange),
            AuthConfig::AuthorizationCode {
                authorize_url,
                token_url,
                client_id,
                client_secret_env,
                scope,
                resource,
                revocation_url,
                redirect_uri,
            } => {
                let client_secret = match client_secret_env {
                    Some(var) => secret(var)?,
                    None => String::new(),
                };
                let redirect_uri = redirect_uri
                    .clone()
                    .or_else(|| self.default_redirect.clone())
                    .ok_or_else(|| {
                        format!(
                            "API '{api}' asks each person for consent, which needs the server's address for the redirect: add an [auth] table (its audience places /oauth/callback) or `redirect_uri` to the API's auth"
                        )
                    })?;
                AuthorizationCode::new(AuthorizationCodeSettings {
                    authorize_url,
                    token_url,
                    client_id,
                    client_secret: &client_secret,
                    redirect_uri: &redirect_uri,
                    scope: scope.as_deref(),
                    resource: resource.as_deref(),
                    revocation_url: revocation_url.as_deref(),
                })
                .map(Client::Consent)
            }
            _ => {
                return Err(format!(
                    "API '{api}': its credentials are read from the environment, not obtained"
                ))
            }
        };
        made.map_err(|e| e.to_string())
    }
}

/// The OAuth callback next to `audience` (the server's `/mcp` URL).
pub fn callback_url(audience: &str) -> Option<String> {
    let url = url::Url::parse(audience).ok()?;
    url.join("/oauth/callback").ok().map(String::from)
}

fn need_person<'a>(api: &str, person: Option<&'a Person>) -> Result<&'a Person, String> {
    person.ok_or_else(|| {
        format!(
            "API '{api}' is called with each person's own token, so it needs a signed-in person: it is served by `serve --http` with an [auth] table"
        )
    })
}

fn need_store<'a>(api: &str, store: Option<&'a Store>) -> Result<&'a Store, String> {
    store.ok_or_else(|| {
        format!(
            "API '{api}' keeps each person's token in the state store, and this server has none (`serve --http` opens one; `--state` names it)"
        )
    })
}

/// The person's stored token (refreshed when it is about to expire), or a consent link.
async fn consented(
    api: &str,
    ac: &AuthorizationCode,
    sub: &str,
    store: &Store,
) -> Result<Grant, String> {
    let now = crate::store::now();
    if let Some(t) = store.token(sub, api).await.map_err(|e| e.to_string())? {
        let fresh = t
            .expires_at
            .is_none_or(|at| at - now > EXPIRY_MARGIN.as_secs() as i64);
        if fresh {
            return Ok(Grant::Token(t.access_token));
        }
        if let Some(nt) = match &t.refresh_token {
            Some(rt) => refreshed(ac, rt).await,
            None => None,
        } {
            store
                .put_token(sub, api, &nt)
                .await
                .map_err(|e| e.to_string())?;
            return Ok(Grant::Token(nt.access_token));
        }
        // Expired and not renewable: the person consents again.
        store
            .delete_token(sub, api)
            .await
            .map_err(|e| e.to_string())?;
    }
    let challenge = AuthorizationCode::challenge().map_err(|e| e.to_string())?;
    store
        .put_consent(&PendingConsent {
            state: challenge.state.clone(),
            sub: sub.into(),
            api: api.into(),
            pkce_verifier: challenge.verifier.clone(),
            created_at: now,
            expires_at: now + CONSENT_TTL_SECS,
        })
        .await
        .map_err(|e| e.to_string())?;
    Ok(Grant::Consent {
        link: ac.consent_link(&challenge.state, &challenge.verifier),
        state: challenge.state,
    })
}

/// A refreshed token, keeping the old refresh token when the server sends no new one;
/// `None` when the server refuses (the person consents again).
async fn refreshed(ac: &AuthorizationCode, refresh_token: &str) -> Option<UpstreamToken> {
    match ac.refresh(refresh_token).await {
        Ok(g) => Some(upstream_token(g, Some(refresh_token))),
        Err(e) => {
            tracing::info!(error = %e, "a refresh token was refused; the person will be asked to consent again");
            None
        }
    }
}

fn upstream_token(g: Granted, old_refresh: Option<&str>) -> UpstreamToken {
    UpstreamToken {
        access_token: g.access_token,
        refresh_token: g.refresh_token.or_else(|| old_refresh.map(str::to_string)),
        expires_at: g
            .lifetime_announced
            .then(|| crate::store::now() + g.lifetime.as_secs() as i64),
        scope: g.scope.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_sits_beside_the_audience() {
        assert_eq!(
            callback_url("https://mcp.example.com/mcp").as_deref(),
            Some("https://mcp.example.com/oauth/callback")
        );
        assert_eq!(
            callback_url("http://127.0.0.1:8080/team/mcp").as_deref(),
            Some("http://127.0.0.1:8080/oauth/callback")
        );
    }

    #[tokio::test]
    async fn per_person_kinds_need_a_person_and_secrets_are_named() {
        let broker = Broker::new(Arc::new(|_: &str| None), None);
        let tx = AuthConfig::TokenExchange {
            token_url: "http://127.0.0.1:9/token".into(),
            client_id: "shortlist".into(),
            client_secret_env: "IDP_SECRET".into(),
            audience: "hr".into(),
            scope: None,
        };
        let err = broker.grant("hr", &tx, None, None).await.unwrap_err();
        assert!(err.contains("IDP_SECRET is not set"), "{err}");
        let broker = Broker::new(Arc::new(|_: &str| Some("s3cret".into())), None);
        let err = broker.grant("hr", &tx, None, None).await.unwrap_err();
        assert!(err.contains("needs a signed-in person"), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        let ac = AuthConfig::AuthorizationCode {
            authorize_url: "http://127.0.0.1:9/authorize".into(),
            token_url: "http://127.0.0.1:9/token".into(),
            client_id: "app".into(),
            client_secret_env: None,
            scope: None,
            resource: None,
            revocation_url: None,
            redirect_uri: None,
        };
        let err = broker.grant("notes", &ac, None, None).await.unwrap_err();
        assert!(err.contains("/oauth/callback"), "{err}");
    }
}
