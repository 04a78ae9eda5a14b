//! The HTTP side of per-person upstream tokens:
//!
//! - `GET /oauth/consent` and `GET /oauth/signin` ([`super::signin`]): the link a person
//!   opens to consent, which signs the browser in first and goes on only for the person
//!   the link was made for.
//! - `GET /oauth/callback`: where an authorization server sends the browser back after
//!   the person consents; the code is redeemed, for the browser that signed in for that
//!   consent only, and the token kept sealed in the state store. Pages show fixed text:
//!   nothing the provider says is echoed, and no person is named.
//! - `GET /oauth/connections`: the APIs the caller has given access to (no secret).
//! - `DELETE /oauth/connections/{api}`: the caller withdraws it; the token is revoked at
//!   the authorization server when the config names where, and forgotten here. An API
//!   the caller does not see (and holds no connection to) is not found.
//!
//! The last two sit behind the same access-token check as `/mcp`: a person sees and
//! withdraws only their own connections. The consent pages take no access token (a
//! browser has none) and are rate-limited per client address.

use super::browser;
use super::signin::{self, ConsentSite};
use super::state::ServerState;
use crate::credentials::Incomplete;
use crate::store::{AuditEntry, Event};
use crate::telemetry::metrics;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use std::sync::Arc;

/// The redirect back from the authorization server (RFC 6749 section 4.1.2, RFC 9207).
#[derive(Deserialize)]
pub struct Callback {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

/// The consent pages: `/oauth/consent`, `/oauth/signin`, `/oauth/callback`. No access
/// token needed.
pub fn consent_routes(site: Arc<ConsentSite>) -> Router {
    Router::new()
        .route("/oauth/consent", get(signin::open_link))
        .route("/oauth/signin", get(signin::signed_in_back))
        .route("/oauth/callback", get(callback))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&site),
            signin::limit,
        ))
        .with_state(site)
}

/// `/oauth/connections`: behind the access-token check.
pub fn connection_routes(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/oauth/connections", get(connections))
        .route(
            "/oauth/connections/{api}",
            axum::routing::delete(disconnect),
        )
        .with_state(state)
}

async fn callback(
    State(site): State<Arc<ConsentSite>>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let (Some(store), Some(public)) = (site.state.store(), site.public()) else {
        return signin::unavailable();
    };
    let clear = public.clear_cookie(signin::CONSENT_COOKIE);
    let Some(state) = q.state.as_deref().filter(|s| !s.is_empty()) else {
        metrics::oauth_callback("malformed");
        return browser::page(
            StatusCode::BAD_REQUEST,
            "Not a consent",
            "This address is where an authorization server sends you back after you allow access; the request had no state.",
        );
    };
    // Only the browser that signed in for this consent may complete it.
    let Some(signed_in) = signin::signed_in(store, &public, &headers, state) else {
        // A state that names no pending consent is anyone's guess, not an event about a
        // consent: counted, not audited, or outsiders could fill the audit log.
        let pending = store.consent(state).await;
        if let Ok(None) = pending {
            metrics::oauth_callback("unknown_state");
            return signin::not_this_browser();
        }
        metrics::oauth_callback("not_the_browser");
        tracing::warn!(
            "a consent callback came without the browser that signed in for it; refused"
        );
        let api = pending.ok().flatten().map(|p| p.api).unwrap_or_default();
        site.audit(
            AuditEntry::event(Event::ConsentRefused, "-", None, &api)
                .with_detail(serde_json::json!({"reason": "not_the_browser_that_signed_in"})),
        )
        .await;
        return signin::not_this_browser();
    };
    if let Some(error) = &q.error {
        metrics::oauth_callback("declined");
        tracing::info!(error = %crate::text::clip_chars(error, 60), "consent not given");
        return browser::with_cookies(
            browser::page(
                StatusCode::OK,
                "Access not given",
                "The authorization server did not give access, so nothing was stored. You can close this page.",
            ),
            &[clear],
        );
    }
    let Some(code) = q.code.as_deref() else {
        metrics::oauth_callback("malformed");
        return browser::page(
            StatusCode::BAD_REQUEST,
            "Not a consent",
            "This address is where an authorization server sends you back after you allow access; the request had no code.",
        );
    };
    let served = site.state.served();
    let invoker = site.state.invoker();
    if let Ok(Some(pending)) = store.consent(state).await {
        invoker.discover_auth(&pending.api).await;
    }
    let auth_of =
        |api: &str| invoker.auth_of(api, served.api_config(api).and_then(|c| c.auth.clone()));
    let outcome = site
        .state
        .invoker()
        .broker()
        .complete(auth_of, state, code, q.iss.as_deref(), &signed_in, store)
        .await;
    let res = match outcome {
        Ok(done) => {
            metrics::oauth_callback("given");
            tracing::info!(sub = %done.sub, api = %done.api, "consent completed");
            site.audit(AuditEntry::event(
                Event::ConsentGiven,
                &done.sub,
                done.client_id.as_deref(),
                &done.api,
            ))
            .await;
            browser::page(
                StatusCode::OK,
                "Access allowed",
                &format!(
                    "shortlist can now call the API '{}' for you. You can close this page and go back to your assistant.",
                    done.api
                ),
            )
        }
        Err(Incomplete::Refused(why)) => {
            metrics::oauth_callback("refused");
            tracing::info!(error = %why, "consent could not be completed");
            site.audit(
                AuditEntry::event(Event::ConsentRefused, &signed_in, None, "")
                    .with_detail(serde_json::json!({"reason": crate::text::clip_chars(&why, 300)})),
            )
            .await;
            browser::page(
                StatusCode::BAD_REQUEST,
                "Access not stored",
                "The consent could not be completed, so nothing was stored. Ask your assistant to call the tool again for a new link.",
            )
        }
        Err(Incomplete::NotStored {
            sub,
            api,
            revoked,
            why,
        }) => {
            metrics::oauth_callback("not_stored");
            tracing::error!(api = %api, revoked, error = %why, "a token was issued but could not be stored");
            let event = if revoked {
                Event::ConsentRefused
            } else {
                Event::TokenOrphaned
            };
            site.audit(
                AuditEntry::event(event, &sub, None, &api).with_detail(serde_json::json!({
                    "reason": "not_stored", "revoked": revoked,
                    "cause": crate::text::clip_chars(&why, 300)
                })),
            )
            .await;
            browser::page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Access not stored",
                "Access was given but could not be stored, so it was withdrawn again. Try again in a moment.",
            )
        }
    };
    browser::with_cookies(res, &[clear])
}

async fn connections(
    State(state): State<Arc<ServerState>>,
    parts: axum::http::request::Parts,
) -> Response {
    let (sub, store) = match caller(&parts, &state) {
        Ok(c) => c,
        Err(why) => return refused(why),
    };
    match store.token_apis(&sub).await {
        Ok(apis) => Json(serde_json::json!({
            "sub": sub,
            "connections": apis
                .into_iter()
                .map(|(api, expires_at)| serde_json::json!({"api": api, "expires_at": expires_at}))
                .collect::<Vec<_>>(),
        }))
        .into_response(),
        Err(e) => unavailable(&e.to_string()),
    }
}

async fn disconnect(
    State(state): State<Arc<ServerState>>,
    Path(api): Path<String>,
    parts: axum::http::request::Parts,
) -> Response {
    let (sub, store) = match caller(&parts, &state) {
        Ok(c) => c,
        Err(why) => return refused(why),
    };
    let served = state.served();
    let principal = crate::auth::Principal::from_parts(&parts);
    // Only an API the person sees, or one they hold a connection to (their own row, which
    // they list at `/oauth/connections` even after the API left the catalog or their
    // sight): anything else is absent, and a made-up name is not an event to audit.
    let sees = served.api_config(&api).is_some()
        && super::visibility::Sight::of(&served, principal).sees(&api);
    if !sees {
        match store.token_apis(&sub).await {
            Ok(held) if held.iter().any(|(a, _)| *a == api) => {}
            Ok(_) => return no_such_api(),
            Err(e) => return unavailable(&e.to_string()),
        }
    }
    let auth = served.api_config(&api).and_then(|c| c.auth.as_ref());
    match state
        .invoker()
        .broker()
        .disconnect(&api, auth, &sub, store)
        .await
    {
        Ok(had) => {
            tracing::info!(sub = %sub, api = %api, had, "connection withdrawn");
            let client = principal.and_then(|p| p.client_id.clone());
            super::audit::record(
                Some(store),
                AuditEntry::event(Event::Withdrawn, &sub, client.as_deref(), &api)
                    .with_detail(serde_json::json!({"had_token": had})),
            )
            .await;
            Json(serde_json::json!({"api": api, "disconnected": had})).into_response()
        }
        Err(e) => unavailable(&e),
    }
}

/// The verified person asking and the store their connections live in, or why not.
fn caller<'a>(
    parts: &axum::http::request::Parts,
    state: &'a ServerState,
) -> Result<(String, &'a crate::store::Store), (StatusCode, &'static str)> {
    let p = crate::auth::Principal::from_parts(parts).ok_or((
        StatusCode::UNAUTHORIZED,
        "connections belong to a signed-in person: this server has no [auth] table",
    ))?;
    let store = state.store().ok_or((
        StatusCode::SERVICE_UNAVAILABLE,
        "this server keeps no state store",
    ))?;
    Ok((p.sub.clone(), store))
}

/// The answer for an API the caller does not see: the same as for one that does not exist.
fn no_such_api() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(serde_json::json!({"error": "no such API"})),
    )
        .into_response()
}

fn refused((status, why): (StatusCode, &'static str)) -> Response {
    (status, Json(serde_json::json!({ "error": why }))).into_response()
}

fn unavailable(why: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(axum::http::header::RETRY_AFTER, "5")],
        Json(serde_json::json!({"error": why})),
    )
        .into_response()
}

/// Removes expired pending consents (links people never opened) every ten minutes, so
/// the store does not keep them; a store that is away is tried again at the next turn.
pub fn spawn_consent_sweeper(
    state: Arc<ServerState>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    if state.store().is_none() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(600));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    let Some(store) = state.store() else { break };
                    match store.expire_consents().await {
                        Ok(0) => {}
                        Ok(n) => tracing::debug!(removed = n, "expired consents removed"),
                        Err(e) => tracing::warn!(error = %e, "expired consents not removed"),
                    }
                }
            }
        }
    });
}
