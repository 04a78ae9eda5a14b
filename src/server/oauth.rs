//! The HTTP side of per-person upstream tokens:
//!
//! - `GET /oauth/callback`: where an authorization server sends the person's browser back
//!   after they consent to an API; the code is redeemed and the token kept sealed in the
//!   state store. It takes no access token (a browser has none): the unguessable `state`
//!   names the pending consent, and with it the person who asked.
//! - `GET /oauth/connections`: the APIs the caller has given access to (no secret).
//! - `DELETE /oauth/connections/{api}`: the caller withdraws it; the token is revoked at
//!   the authorization server when the config names where, and forgotten here.
//!
//! The last two sit behind the same access-token check as `/mcp`: a person sees and
//! withdraws only their own connections.

use super::state::ServerState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use std::sync::Arc;

/// The redirect back from the authorization server (RFC 6749 section 4.1.2).
#[derive(Deserialize)]
pub struct Callback {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `/oauth/callback`: no access token needed.
pub fn callback_routes(state: Arc<ServerState>) -> Router {
    Router::new()
        .route("/oauth/callback", get(callback))
        .with_state(state)
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

async fn callback(State(state): State<Arc<ServerState>>, Query(q): Query<Callback>) -> Response {
    if let Some(error) = &q.error {
        let why = q.error_description.as_deref().unwrap_or(error);
        tracing::info!(error = %error, "consent not given");
        return page(
            StatusCode::OK,
            "Access not given",
            &format!("The authorization server says: {why}. Nothing was stored."),
        );
    }
    let (Some(consent), Some(code)) = (q.state.as_deref(), q.code.as_deref()) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Not a consent",
            "This address is where an authorization server sends you back after you allow access; the request had no code or state.",
        );
    };
    let Some(store) = state.store() else {
        return page(
            StatusCode::SERVICE_UNAVAILABLE,
            "No state store",
            "This server keeps no state store, so it cannot keep your token.",
        );
    };
    let served = state.served();
    let auth_of = |api: &str| served.api_config(api).and_then(|c| c.auth.clone());
    match state
        .invoker()
        .broker()
        .complete(auth_of, consent, code, store)
        .await
    {
        Ok((sub, api)) => {
            tracing::info!(sub = %sub, api = %api, "consent completed");
            page(
                StatusCode::OK,
                "Access allowed",
                &format!(
                    "shortlist can now call the API '{api}' as you ({sub}). You can close this page and go back to your assistant."
                ),
            )
        }
        Err(why) => {
            tracing::info!(error = %why, "consent could not be completed");
            page(StatusCode::BAD_REQUEST, "Access not stored", &why)
        }
    }
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
    let auth = served.api_config(&api).and_then(|c| c.auth.as_ref());
    match state
        .invoker()
        .broker()
        .disconnect(&api, auth, &sub, store)
        .await
    {
        Ok(had) => {
            tracing::info!(sub = %sub, api = %api, had, "connection withdrawn");
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

/// A small page for the person's browser.
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body style=\"font-family: sans-serif; max-width: 40em; margin: 4em auto\">\
         <h1>{t}</h1><p>{x}</p></body></html>",
        t = esc(title),
        x = esc(text)
    );
    (status, Html(html)).into_response()
}
