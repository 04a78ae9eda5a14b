//! The token for one upstream call, from the credential kind an API's config names:
//! the client credentials grant (one token for everyone), token exchange (the person's
//! own token, traded for their MCP access token) or the authorization code grant (the
//! person's own token after they consent once; kept sealed in the state store).
//!
//! The broker keeps one client per API and credential config, so cached tokens survive a
//! catalog reload that leaves the API's credentials alone, and a changed config starts
//! afresh. Every failure is a readable sentence naming the API and what to do; none
//! carries a secret.
//!
//! Boundaries it holds:
//! - A person's MCP access token goes only to the `[auth]` issuer's own token endpoint
//!   (from its discovery document), unless an API's entry says `trust_token_url`.
//! - A consent link is a page of this server, not the authorization server's: the page
//!   signs the browser in first, so the link does nothing for anyone but its person.
//! - A rotating refresh token is refreshed once across replicas (a lock in the store);
//!   the others wait for the result instead of spending the old token.
//! - A token issued at a code redemption that cannot be stored is revoked.

use super::authorization_code::{AuthorizationCode, AuthorizationCodeSettings};
use super::renewal::{refresh_once, revoke};
use super::{ClientCredentials, Obtained, TokenExchange};
use crate::auth::discovery::Discovery;
use crate::catalog::AuthConfig;
use crate::store::{Store, StoreError};
use std::collections::{BTreeSet, HashMap};
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
    /// The OAuth client that token was issued to (`client_id` or `azp`), when it says.
    pub client_id: Option<String>,
    /// That token's scopes.
    pub scopes: BTreeSet<String>,
}

impl std::fmt::Debug for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Person")
            .field("sub", &self.sub)
            .field("expires_at", &self.expires_at)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// What a call gets from the broker.
pub enum Grant {
    /// A bearer token for the upstream request.
    Token(Obtained),
    /// The person has to consent first, by opening `link` (a page of this server);
    /// `state` names the pending consent.
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

/// The client of one API's credentials.
pub(super) enum Client {
    Machine(ClientCredentials),
    Exchange(TokenExchange),
    Consent(AuthorizationCode),
}

/// Where the server is and what it offers browsers, for the credential kinds that need
/// it.
#[derive(Debug, Clone, Default)]
pub struct ServerSide {
    /// The server's public origin (`https://shortlist.example.com`): consent pages and
    /// the OAuth callback live under it.
    pub public_url: Option<String>,
    /// Whether the server signs browsers in at the issuer before a consent goes on
    /// (`[auth] signin`): without it, no consent link is handed out.
    pub signin: bool,
    /// The `[auth]` issuer's metadata: its token endpoint is where people's MCP tokens
    /// may go.
    pub issuer: Option<Arc<Discovery>>,
}

/// Upstream tokens obtained at run time; see the module documentation.
pub struct Broker {
    secrets: Arc<SecretLookup>,
    pub(super) server: ServerSide,
    clients: Mutex<HashMap<String, Arc<Client>>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Broker {
    /// A broker reading client secrets through `secrets`, for a server placed as `server`
    /// says.
    pub fn new(secrets: Arc<SecretLookup>, server: ServerSide) -> Broker {
        Broker {
            secrets,
            server,
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The token for a call to `api` by `person` (`None`: no verified person), asked
    /// through the OAuth client `client_id`.
    pub async fn grant(
        &self,
        api: &str,
        auth: &AuthConfig,
        person: Option<&Person>,
        client_id: Option<&str>,
        store: Option<&Store>,
    ) -> Result<Grant, String> {
        match &*self.client(api, auth).await? {
            Client::Machine(cc) => cc
                .token()
                .await
                .map(Grant::Token)
                .map_err(|e| e.to_string()),
            Client::Exchange(tx) => {
                let p = need_person(api, person)?;
                tx.token_for(p)
                    .await
                    .map(Grant::Token)
                    .map_err(|e| format!("cannot get your token for API '{api}': {e}"))
            }
            Client::Consent(ac) => {
                let p = need_person(api, person)?;
                let store = need_store(api, store)?;
                self.consented(api, ac, &p.sub, client_id, store).await
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
        let Ok(client) = self.client(api, auth).await else {
            return;
        };
        match &*client {
            Client::Machine(cc) => cc.invalidate().await,
            Client::Exchange(tx) => {
                if let Some(p) = person {
                    tx.invalidate(p).await;
                }
            }
            Client::Consent(ac) => {
                let (Some(p), Some(store)) = (person, store) else {
                    return;
                };
                // Refreshed if it can be, else forgotten (the next call asks for consent).
                if let Ok(Some(t)) = store.token(&p.sub, api).await {
                    if refresh_once(ac, &p.sub, api, &t, store).await.is_none() {
                        if let Err(e) = store.delete_token(&p.sub, api).await {
                            tracing::error!(api, error = %e, "a refused token could not be forgotten");
                        }
                    }
                }
            }
        }
    }

    /// Forgets `sub`'s token for `api`, revoking it at the authorization server when the
    /// config names a revocation endpoint. Whether there was one. A stored token that no
    /// longer opens is deleted all the same (there is nothing to revoke with it).
    pub async fn disconnect(
        &self,
        api: &str,
        auth: Option<&AuthConfig>,
        sub: &str,
        store: &Store,
    ) -> Result<bool, String> {
        let token = match store.token(sub, api).await {
            Ok(t) => t,
            Err(StoreError::Key(e)) => {
                tracing::warn!(api, error = %e, "a stored token cannot be opened to revoke it; it is deleted");
                None
            }
            Err(e) => return Err(e.to_string()),
        };
        if let (Some(t), Some(auth)) = (&token, auth) {
            if let Ok(client) = self.client(api, auth).await {
                if let Client::Consent(ac) = &*client {
                    // Forgotten here whatever the server says: the person asked.
                    revoke(ac, t, api).await;
                }
            }
        }
        store
            .delete_token(sub, api)
            .await
            .map_err(|e| e.to_string())
    }

    /// The client of `api` for this credential config, made on first use.
    pub(super) async fn client(&self, api: &str, auth: &AuthConfig) -> Result<Arc<Client>, String> {
        let key = format!("{api}\0{auth:?}");
        if let Some(c) = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(Arc::clone(c));
        }
        let exchange_url = match auth {
            AuthConfig::TokenExchange {
                token_url,
                trust_token_url,
                ..
            } => Some(
                self.exchange_url(api, token_url.as_deref(), *trust_token_url)
                    .await?,
            ),
            _ => None,
        };
        let client = Arc::new(self.make(api, auth, exchange_url.as_deref())?);
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(clients.entry(key).or_insert(client)))
    }

    /// Where a token exchange for `api` is posted: the `[auth]` issuer's token endpoint,
    /// and `token_url` only when it is that endpoint or the entry trusts it.
    async fn exchange_url(
        &self,
        api: &str,
        token_url: Option<&str>,
        trusted: bool,
    ) -> Result<String, String> {
        if let (Some(u), true) = (token_url, trusted) {
            return Ok(u.to_string());
        }
        let Some(issuer) = &self.server.issuer else {
            return Err(format!(
                "API '{api}' exchanges each person's access token, which needs the [auth] table (its issuer's token endpoint is where that token may go)"
            ));
        };
        let meta = issuer.metadata().await.map_err(|e| {
            format!("cannot get your token for API '{api}': the issuer's discovery document: {e}")
        })?;
        let Some(endpoint) = meta.token_endpoint else {
            return Err(format!(
                "API '{api}': the issuer's discovery document names no token_endpoint; set token_url and trust_token_url = true"
            ));
        };
        match token_url {
            None => Ok(endpoint),
            Some(u) if same_url(u, &endpoint) => Ok(endpoint),
            Some(u) => Err(format!(
                "API '{api}': token_url {u} is not the [auth] issuer's token endpoint ({endpoint}); a person's access token is sent only there (set trust_token_url = true in the API's auth to send it to {u})"
            )),
        }
    }

    fn make(
        &self,
        api: &str,
        auth: &AuthConfig,
        exchange_url: Option<&str>,
    ) -> Result<Client, String> {
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
                client_id,
                client_secret_env,
                audience,
                scope,
                ..
            } => TokenExchange::new(
                exchange_url.unwrap_or_default(),
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
                ..
            } => {
                let client_secret = match client_secret_env {
                    Some(var) => secret(var)?,
                    None => String::new(),
                };
                let redirect_uri = redirect_uri
                    .clone()
                    .or_else(|| self.server.public_url.as_deref().and_then(callback_url))
                    .ok_or_else(|| {
                        format!(
                            "API '{api}' asks each person for consent, which needs the server's address for the redirect: add an [auth] table (its audience or public_url places /oauth/callback) or `redirect_uri` to the API's auth"
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

/// The OAuth callback of the server at `base` (its public URL or `/mcp` URL).
pub fn callback_url(base: &str) -> Option<String> {
    let url = url::Url::parse(base).ok()?;
    url.join("/oauth/callback").ok().map(String::from)
}

/// Whether two URLs name the same endpoint (a trailing slash aside).
fn same_url(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host_str() == b.host_str()
                && a.port_or_known_default() == b.port_or_known_default()
                && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
                && a.query() == b.query()
        }
        _ => false,
    }
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
        let broker = Broker::new(Arc::new(|_: &str| None), ServerSide::default());
        let tx = AuthConfig::TokenExchange {
            token_url: Some("http://127.0.0.1:9/token".into()),
            client_id: "shortlist".into(),
            client_secret_env: "IDP_SECRET".into(),
            audience: "hr".into(),
            scope: None,
            trust_token_url: true,
        };
        let err = broker.grant("hr", &tx, None, None, None).await.unwrap_err();
        assert!(err.contains("IDP_SECRET is not set"), "{err}");
        let broker = Broker::new(
            Arc::new(|_: &str| Some("s3cret".into())),
            ServerSide::default(),
        );
        let err = broker.grant("hr", &tx, None, None, None).await.unwrap_err();
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
            issuer: None,
        };
        let err = broker
            .grant("notes", &ac, None, None, None)
            .await
            .unwrap_err();
        assert!(err.contains("/oauth/callback"), "{err}");
        // An exchange whose token_url is not trusted needs the issuer's own endpoint.
        let untrusted = AuthConfig::TokenExchange {
            token_url: Some("https://elsewhere.example/token".into()),
            client_id: "shortlist".into(),
            client_secret_env: "IDP_SECRET".into(),
            audience: "hr".into(),
            scope: None,
            trust_token_url: false,
        };
        let alice = Person {
            sub: "alice".into(),
            subject_token: "mcp-token".into(),
            expires_at: u64::MAX,
            client_id: None,
            scopes: Default::default(),
        };
        let err = broker
            .grant("hr", &untrusted, Some(&alice), None, None)
            .await
            .unwrap_err();
        assert!(err.contains("[auth]"), "{err}");
    }

    #[test]
    fn only_the_same_endpoint_is_the_same_url() {
        assert!(same_url(
            "https://idp.example/token",
            "https://idp.example/token/"
        ));
        assert!(same_url(
            "https://idp.example:443/token",
            "https://idp.example/token"
        ));
        assert!(!same_url(
            "https://idp.example/token",
            "https://idp.example.evil/token"
        ));
        assert!(!same_url(
            "https://idp.example/token",
            "http://idp.example/token"
        ));
        assert!(!same_url(
            "https://idp.example/token",
            "https://idp.example/token?x=1"
        ));
    }
}
