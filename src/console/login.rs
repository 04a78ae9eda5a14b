//! Signing a browser in to a console that wants a token.
//!
//! A server started with `--auth-token-env` wants `Authorization: Bearer <token>` on every
//! request, which a browser does not send when a person opens a page. The console's routes
//! also take a session cookie, set by typing the token once into `/console/login`. The
//! cookie is not the token: it is a session that ends ([`SESSION`] after sign-in) and is
//! signed with a key derived from the token (HMAC-SHA-256), so any replica with the same
//! token checks it, a copied cookie stops working when it expires or the token changes,
//! and the token itself never sits in a browser's cookie jar. It is HttpOnly (no script
//! reads it), `SameSite=Strict` (no other site's page sends it) and limited to `/console`
//! (MCP routes still want the header). The same `Host` and `Origin` checks stand in front
//! of the login as of every other route.

use super::html::{esc, frame, Page};
use crate::server::guard::Guard;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// The cookie that carries the console session.
const COOKIE: &str = "shortlist_console";

/// How long a console session lasts.
pub const SESSION: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

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
    (status, Html(frame(Page::Health, "Sign in", &body, false))).into_response()
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
    let expires = crate::store::now() + SESSION.as_secs() as i64;
    let Some(value) = guard.session_value(expires) else {
        return Redirect::to("/console/health").into_response();
    };
    let cookie = format!(
        "{COOKIE}={value}; Path=/console; Max-Age={}; HttpOnly; SameSite=Strict",
        SESSION.as_secs()
    );
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/console/health".to_string()),
        ],
    )
        .into_response()
}

/// The session cookie's value, if the request has one.
fn cookie_value(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// Middleware for the console's routes: the bearer header or the cookie; the login page
/// itself is open. A browser asking for a page without either is sent to the login page,
/// anything else gets 401.
pub async fn require_token(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    let allowed = req.uri().path() == "/console/login"
        || guard.header_authorized(&req)
        || cookie_value(&req).is_some_and(|v| guard.session_valid(&v));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_cookie_is_not_the_token_and_ends() {
        let g = Guard::new(Some("s3cret-token"), vec![]);
        let other = Guard::new(Some("another-token"), vec![]);
        let now = crate::store::now();
        let v = g.session_value(now + 60).unwrap();
        assert!(!v.contains("s3cret"), "{v}");
        assert!(g.session_valid(&v));
        assert!(!other.session_valid(&v), "signed with the token's key");
        assert!(!g.session_valid(&g.session_value(now - 1).unwrap()));
        // A cookie whose expiry was moved does not verify.
        let forged = v.replacen(&format!("{}", now + 60), &format!("{}", now + 9_999_999), 1);
        assert!(!g.session_valid(&forged));
        assert!(
            !g.session_valid("s3cret-token"),
            "the token itself is no cookie"
        );
        assert!(Guard::new(None, vec![]).session_value(now + 60).is_none());
    }
}
