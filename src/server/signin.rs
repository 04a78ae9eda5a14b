//! A consent link goes on only for the person it was made for.
//!
//! The link an agent hands its person is a page of this server, `/oauth/consent?state=..`.
//! It signs the browser in at the organisation's identity provider, the server acting as
//! an OpenID client (authorization code with PKCE and a nonce, `[auth] signin`), and
//! compares the signed-in `sub` with the pending consent's: only when they are the same
//! does the browser go on to the API's authorization server, carrying a cookie that ties
//! it to that consent; `/oauth/callback` redeems a code only for the browser holding it.
//! A link opened by anyone else (a colleague it was forwarded to, whoever found it in a
//! log) is refused, and nothing is stored.

use super::browser::{self, PublicUrl};
use super::client_addr::ClientAddr;
use super::rate_limit::RateLimits;
use super::state::ServerState;
use crate::auth::Verifier;
use crate::store::{AuditEntry, Event, Store};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::sync::Arc;
use std::time::Duration;

/// How long a browser has from opening the link to coming back from the provider.
const SIGNIN_TTL: Duration = Duration::from_secs(600);
/// Cookie of a sign-in in progress.
pub const SIGNIN_COOKIE: &str = "shortlist-signin";
/// Cookie of a consent whose person has signed in.
pub const CONSENT_COOKIE: &str = "shortlist-consent";
const SIGNIN_CONTEXT: &str = "browser\0signin";
const CONSENT_CONTEXT: &str = "browser\0consent";

/// What the consent pages share.
pub struct ConsentSite {
    pub state: Arc<ServerState>,
    /// The `[auth]` verifier: the issuer's metadata and keys (ID tokens).
    pub verifier: Option<Arc<Verifier>>,
    /// How fast each client may ask for the pages.
    pub limits: RateLimits,
    /// Who a request's client is (the peer, or what a trusted balancer forwards).
    pub clients: ClientAddr,
    http: reqwest::Client,
}

impl ConsentSite {
    pub fn new(
        state: Arc<ServerState>,
        verifier: Option<Arc<Verifier>>,
        clients: ClientAddr,
    ) -> Arc<ConsentSite> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Arc::new(ConsentSite {
            state,
            verifier,
            limits: RateLimits::consent_pages(),
            clients,
            http,
        })
    }

    /// The public URL of the server, from the `[auth]` table now served.
    pub fn public(&self) -> Option<PublicUrl> {
        self.state
            .served()
            .catalog()
            .config
            .auth
            .as_ref()
            .and_then(PublicUrl::of)
    }

    /// Records an event about a consent, best effort.
    pub async fn audit(&self, entry: AuditEntry) {
        super::audit::record(self.state.store(), entry).await;
    }
}

/// A sign-in in progress, as its cookie carries it (sealed).
#[derive(Serialize, Deserialize)]
struct SigningIn {
    /// The pending consent.
    c: String,
    /// The OAuth `state` of the sign-in.
    s: String,
    /// The OpenID `nonce`.
    n: String,
    /// The PKCE verifier.
    v: String,
    /// Expiry, seconds since the Unix epoch.
    e: i64,
}

/// A consent whose person signed in, as its cookie carries it (sealed).
#[derive(Serialize, Deserialize)]
pub struct SignedIn {
    /// The pending consent.
    pub c: String,
    /// Who signed in.
    pub u: String,
    /// Expiry, seconds since the Unix epoch.
    pub e: i64,
}

/// The `sub` who signed in for the consent `state` in the browser that sent `headers`,
/// when its cookie says so and is good.
pub fn signed_in(
    store: &Store,
    public: &PublicUrl,
    headers: &HeaderMap,
    state: &str,
) -> Option<String> {
    let raw = browser::cookie(headers, &public.cookie_name(CONSENT_COOKIE))?;
    let plain = store.open_value(CONSENT_CONTEXT, &raw).ok()?;
    let s: SignedIn = serde_json::from_slice(&plain).ok()?;
    (s.c == state && s.e > crate::store::now()).then_some(s.u)
}

#[derive(Deserialize)]
pub struct LinkQuery {
    state: Option<String>,
}

/// `GET /oauth/consent?state=..`: the link a person opens; signs the browser in first.
pub async fn open_link(
    State(site): State<Arc<ConsentSite>>,
    Query(q): Query<LinkQuery>,
) -> Response {
    let (Some(store), Some(public)) = (site.state.store(), site.public()) else {
        return unavailable();
    };
    let Some(consent) = q.state.filter(|s| !s.is_empty()) else {
        return expired();
    };
    match store.consent(&consent).await {
        Ok(Some(_)) => {}
        Ok(None) => return expired(),
        Err(e) => {
            tracing::error!(error = %e, "consent page: the store failed");
            return unavailable();
        }
    }
    let Some(signin) = signin_config(&site) else {
        return unavailable();
    };
    let Some(verifier) = &site.verifier else {
        return unavailable();
    };
    let authorize = match verifier.discovery().metadata().await {
        Ok(m) => m.authorization_endpoint,
        Err(e) => {
            tracing::error!(error = %e, "consent page: the issuer's metadata cannot be read");
            None
        }
    };
    let Some(authorize) = authorize.and_then(|a| url::Url::parse(&a).ok()) else {
        return unavailable();
    };
    let (Some(s), Some(n), Some(v)) = (random(), random(), random()) else {
        return unavailable();
    };
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(v.as_bytes()));
    let cookie = SigningIn {
        c: consent,
        s: s.clone(),
        n: n.clone(),
        v,
        e: crate::store::now() + SIGNIN_TTL.as_secs() as i64,
    };
    let sealed = match serde_json::to_vec(&cookie)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            store
                .seal_value(SIGNIN_CONTEXT, &b)
                .map_err(|e| e.to_string())
        }) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "consent page: the sign-in cannot be sealed");
            return unavailable();
        }
    };
    let mut url = authorize;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &signin.client_id)
        .append_pair("redirect_uri", &public.at("/oauth/signin"))
        .append_pair("scope", "openid")
        .append_pair("state", &s)
        .append_pair("nonce", &n)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    browser::redirect(
        url.as_str(),
        &[public.set_cookie(SIGNIN_COOKIE, &sealed, SIGNIN_TTL)],
    )
}

#[derive(Deserialize)]
pub struct SigninQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

/// `GET /oauth/signin`: the provider sends the browser back; the person who signed in
/// goes on to the API's authorization server only when the consent is theirs.
pub async fn signed_in_back(
    State(site): State<Arc<ConsentSite>>,
    headers: HeaderMap,
    Query(q): Query<SigninQuery>,
) -> Response {
    let (Some(store), Some(public)) = (site.state.store(), site.public()) else {
        return unavailable();
    };
    let clear = public.clear_cookie(SIGNIN_COOKIE);
    let cookie = browser::cookie(&headers, &public.cookie_name(SIGNIN_COOKIE))
        .and_then(|raw| store.open_value(SIGNIN_CONTEXT, &raw).ok())
        .and_then(|b| serde_json::from_slice::<SigningIn>(&b).ok())
        .filter(|c| c.e > crate::store::now());
    let Some(cookie) = cookie.filter(|c| q.state.as_deref() == Some(c.s.as_str())) else {
        return browser::with_cookies(not_this_browser(), &[clear]);
    };
    if q.error.is_some() {
        return browser::with_cookies(
            browser::page(
                StatusCode::OK,
                "Not signed in",
                "The sign-in did not complete, so nothing was done. Open the link again to retry.",
            ),
            &[clear],
        );
    }
    let Some(code) = q.code.as_deref() else {
        return browser::with_cookies(not_this_browser(), &[clear]);
    };
    let sub = match who_signed_in(&site, &public, code, &cookie).await {
        Ok(sub) => sub,
        Err(e) => {
            tracing::warn!(error = %e, "consent page: the sign-in could not be checked");
            return browser::with_cookies(
                browser::page(
                    StatusCode::BAD_GATEWAY,
                    "Sign-in not checked",
                    "The identity provider's answer could not be checked, so nothing was done. Open the link again to retry.",
                ),
                &[clear],
            );
        }
    };
    let pending = match store.consent(&cookie.c).await {
        Ok(Some(p)) => p,
        Ok(None) => return browser::with_cookies(expired(), &[clear]),
        Err(e) => {
            tracing::error!(error = %e, "consent page: the store failed");
            return browser::with_cookies(unavailable(), &[clear]);
        }
    };
    if pending.sub != sub {
        tracing::warn!(signed_in = %sub, api = %pending.api, "a consent link was opened by another person than the one it was made for; refused");
        site.audit(
            AuditEntry::event(Event::ConsentRefused, &sub, None, &pending.api).with_detail(
                serde_json::json!({"reason": "another_person", "made_for": pending.sub}),
            ),
        )
        .await;
        return browser::with_cookies(
            browser::page(
                StatusCode::FORBIDDEN,
                "This link is not yours",
                "This consent link was made for another person, so nothing was done and nothing was stored. If your assistant gave it to you, sign in as yourself; otherwise ask your assistant for a link of your own.",
            ),
            &[clear],
        );
    }
    let served = site.state.served();
    let invoker = site.state.invoker();
    invoker.discover_auth(&pending.api).await;
    let auth_of =
        |api: &str| invoker.auth_of(api, served.api_config(api).and_then(|c| c.auth.clone()));
    let target = match site
        .state
        .invoker()
        .broker()
        .authorization_url(auth_of, &pending)
        .await
    {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(error = %e, "consent page: no authorization URL");
            return browser::with_cookies(expired(), &[clear]);
        }
    };
    let bound = SignedIn {
        c: pending.state.clone(),
        u: sub,
        e: crate::store::now() + SIGNIN_TTL.as_secs() as i64,
    };
    let sealed = match serde_json::to_vec(&bound)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            store
                .seal_value(CONSENT_CONTEXT, &b)
                .map_err(|e| e.to_string())
        }) {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "consent page: the consent cannot be sealed");
            return browser::with_cookies(unavailable(), &[clear]);
        }
    };
    browser::redirect(
        &target,
        &[
            clear,
            public.set_cookie(CONSENT_COOKIE, &sealed, SIGNIN_TTL),
        ],
    )
}

/// The `sub` of the ID token the provider gives for `code`.
async fn who_signed_in(
    site: &ConsentSite,
    public: &PublicUrl,
    code: &str,
    cookie: &SigningIn,
) -> Result<String, String> {
    let signin = signin_config(site).ok_or("no [auth] signin")?;
    let verifier = site.verifier.as_ref().ok_or("no [auth] table")?;
    let meta = verifier.discovery().metadata().await?;
    let token_url = meta
        .token_endpoint
        .ok_or("the issuer's discovery document names no token_endpoint")?;
    let redirect = public.at("/oauth/signin");
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect.as_str()),
        ("code_verifier", cookie.v.as_str()),
    ];
    let mut req = site.http.post(&token_url);
    let secret = signin
        .client_secret_env
        .as_deref()
        .and_then(|v| std::env::var(v).ok())
        .filter(|s| !s.is_empty());
    match &secret {
        Some(s) => req = req.basic_auth(&signin.client_id, Some(s)),
        None => form.push(("client_id", signin.client_id.as_str())),
    }
    let res = req
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form)
        .send()
        .await
        .map_err(|e| format!("the token endpoint: {}", e.without_url()))?;
    let status = res.status();
    let body: serde_json::Value = res.json().await.unwrap_or_default();
    let Some(id_token) = body.get("id_token").and_then(|v| v.as_str()) else {
        let error = body
            .get("error")
            .and_then(|v| v.as_str())
            .unwrap_or("no id_token");
        return Err(format!(
            "the token endpoint answered HTTP {}: {error}",
            status.as_u16()
        ));
    };
    verifier
        .verify_id_token(id_token, &signin.client_id, &cookie.n)
        .await
        .map_err(|e| format!("{e:?}"))
}

fn signin_config(site: &ConsentSite) -> Option<crate::catalog::config::SignIn> {
    site.state
        .served()
        .catalog()
        .config
        .auth
        .as_ref()
        .and_then(|a| a.signin.clone())
}

/// 256 random bits, base64url.
fn random() -> Option<String> {
    let mut b = [0u8; 32];
    SystemRandom::new().fill(&mut b).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
}

pub fn expired() -> Response {
    browser::page(
        StatusCode::GONE,
        "Link expired",
        "This consent link has expired or was already used, so nothing was done. Ask your assistant to call the tool again for a new link.",
    )
}

pub fn not_this_browser() -> Response {
    browser::page(
        StatusCode::FORBIDDEN,
        "Not this browser",
        "Access is stored only for the browser that opened the consent link and signed in, so nothing was stored. Open the link your assistant gave you again.",
    )
}

pub fn unavailable() -> Response {
    browser::page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Consent unavailable",
        "This server cannot take consents now (it needs its state store and the [auth] signin settings). Try again later, or tell the people who run it.",
    )
}

/// Refuses a consent page to a client asking too fast ([`super::rate_limit`]); the client
/// is the socket's peer or, from a trusted balancer, the address it forwards
/// ([`super::client_addr`]). Without the peer (a router served without connection info)
/// every request counts as one client's.
pub async fn limit(
    axum::extract::State(site): axum::extract::State<std::sync::Arc<ConsentSite>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
    let client = site.clients.of(peer, req.headers());
    if let Err(why) = site.limits.check(client) {
        crate::telemetry::metrics::consent_page_limited(why.label());
        tracing::debug!(client = %client, scope = why.label(), "consent page refused: too many requests");
        return browser::too_many();
    }
    next.run(req).await
}
