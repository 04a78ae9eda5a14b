//! Signing a browser in to a console that wants a token.
//!
//! A server started with `--auth-token-env` wants `Authorization: Bearer <token>` on every
//! request, which a browser does not send when a person opens a page. The console's routes
//! also take the token from a cookie, set by typing it once into `/console/login`: HttpOnly
//! (no script reads it), `SameSite=Strict` (no other site's page sends it) and limited to
//! `/console` (MCP routes still want the header). The same `Host` and `Origin` checks stand
//! in front of the login as of every other route.

use super::html::{esc, frame, Page};
use crate::server::guard::Guard;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// The cookie that carries the token (percent-encoded).
const COOKIE: &str = "shortlist_console";

/// `/console/login` (GET: the form, POST: the token).
pub fn router(guard: Guard) -> Router {
    Router::new()
        .route("/console/login", get(form).post(login))
        .with_state(guard)
}

fn page(status: StatusCode, note: &str) -> Response {
    let body = format!(
        "<h1>Sign in</h1><p class=\"quiet\">This server wants its token (the value of the \
         variable named by <code>--auth-token-env</code>).</p>{}\
         <form method=\"post\" action=\"/console/login\" class=\"filters\">\
         <label class=\"wide\">Token <input type=\"password\" name=\"token\" autocomplete=\"off\" \
         required autofocus></label><button>Sign in</button></form>",
        if note.is_empty() {
            String::new()
        } else {
            format!("<p class=\"error\" id=\"error\">{}</p>", esc(note))
        }
    );
    (status, Html(frame(Page::Health, "Sign in", &body))).into_response()
}

async fn form(State(guard): State<Guard>) -> Response {
    if !guard.requires_token() {
        return Redirect::to("/console/health").into_response();
    }
    page(StatusCode::OK, "")
}

async fn login(State(guard): State<Guard>, body: axum::body::Bytes) -> Response {
    if !guard.requires_token() {
        return Redirect::to("/console/health").into_response();
    }
    let token = url::form_urlencoded::parse(&body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    if token.is_empty() || !guard.token_matches(&token) {
        tracing::warn!("console: a sign-in with a wrong token");
        return page(StatusCode::UNAUTHORIZED, "That is not the server's token.");
    }
    let value = percent_encoding::utf8_percent_encode(&token, percent_encoding::NON_ALPHANUMERIC);
    let cookie = format!("{COOKIE}={value}; Path=/console; HttpOnly; SameSite=Strict");
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/console/health".to_string()),
        ],
    )
        .into_response()
}

/// The token from the console's cookie, if the request has one.
fn cookie_token(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .and_then(|(_, v)| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8()
                .ok()
                .map(|s| s.into_owned())
        })
}

/// Middleware for the console's routes: the bearer header or the cookie; the login page
/// itself is open. A browser asking for a page without either is sent to the login page,
/// anything else gets 401.
pub async fn require_token(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let allowed = req.uri().path() == "/console/login"
        || guard.header_authorized(&req)
        || cookie_token(&req).is_some_and(|t| guard.token_matches(&t));
    if allowed {
        return next.run(req).await;
    }
    let wants_page = req.method() == Method::GET
        && req
            .headers()
            .get(header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .is_some_and(|a| a.contains("text/html"));
    if wants_page {
        return Redirect::to("/console/login").into_response();
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "Unauthorized: send Authorization: Bearer <token>, or sign in at /console/login",
    )
        .into_response()
}
