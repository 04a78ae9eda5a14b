//! The axum middleware in front of `/mcp`: a bearer access token or an answer that tells
//! the client how to get one (MCP authorization; RFC 6750 section 3; RFC 9728 section 5.1).

use super::metadata::metadata_url;
use super::{AuthError, Verifier};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Middleware: verifies the `Authorization: Bearer` token and puts the
/// [`super::Principal`] into the request's extensions. The header stays (the handler tells
/// stateless clients apart by it); upstream requests are built from the catalog's own
/// credentials only, never from the incoming request's headers. Refusals:
/// `401` (missing or invalid token), `403` (`insufficient_scope`), `503` (the issuer's
/// keys cannot be fetched).
pub async fn require_access_token(
    State(v): State<Arc<Verifier>>,
    mut req: Request,
    next: Next,
) -> Response {
    let token = bearer(req.headers().get(header::AUTHORIZATION)).map(str::to_string);
    let result = match &token {
        Some(t) => v.verify(t).await,
        None => Err(AuthError::Missing),
    };
    match result {
        Ok(principal) => {
            tracing::debug!(sub = %principal.sub, "access token verified");
            let subject = super::SubjectToken(token.unwrap_or_default());
            req.extensions_mut().insert(principal);
            req.extensions_mut().insert(subject);
            next.run(req).await
        }
        Err(e) => refusal(&v, &e),
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
fn bearer(h: Option<&HeaderValue>) -> Option<&str> {
    let s = h?.to_str().ok()?;
    let (scheme, token) = s.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The refusal for `e`, with the `WWW-Authenticate` challenge that names the metadata.
pub fn refusal(v: &Verifier, e: &AuthError) -> Response {
    let meta = metadata_url(v.audience());
    let scope = v.required_scopes().join(" ");
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", quoted(&meta));
    if !scope.is_empty() {
        challenge.push_str(&format!(", scope=\"{}\"", quoted(&scope)));
    }
    let (status, error, description) = match e {
        AuthError::Missing => (
            StatusCode::UNAUTHORIZED,
            None,
            "an access token is required".to_string(),
        ),
        AuthError::Invalid(why) => (StatusCode::UNAUTHORIZED, Some("invalid_token"), why.clone()),
        AuthError::InsufficientScope(_) => (
            StatusCode::FORBIDDEN,
            Some("insufficient_scope"),
            format!("the token lacks a required scope ({scope})"),
        ),
        AuthError::Unavailable(why) => {
            tracing::error!(error = %why, "cannot check access tokens");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "10")],
                axum::Json(serde_json::json!({
                    "error": "temporarily_unavailable",
                    "error_description": "the identity provider's keys cannot be fetched; try again shortly"
                })),
            )
                .into_response();
        }
    };
    if let Some(code) = error {
        challenge.push_str(&format!(
            ", error=\"{code}\", error_description=\"{}\"",
            quoted(&description)
        ));
    }
    tracing::info!(status = status.as_u16(), reason = %description, "request refused");
    let mut body = serde_json::json!({"error_description": description});
    if let Some(code) = error {
        body["error"] = code.into();
    }
    let mut res = (status, axum::Json(body)).into_response();
    if let Ok(h) = HeaderValue::from_str(&challenge) {
        res.headers_mut().insert(header::WWW_AUTHENTICATE, h);
    }
    res
}

/// Text safe inside a quoted-string of a challenge: no quotes, backslashes or controls.
fn quoted(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '"' && *c != '\\' && !c.is_control())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_only() {
        let h = |s: &str| HeaderValue::from_str(s).unwrap();
        assert_eq!(bearer(Some(&h("Bearer abc"))), Some("abc"));
        assert_eq!(bearer(Some(&h("bearer  abc "))), Some("abc"));
        assert_eq!(bearer(Some(&h("Basic abc"))), None);
        assert_eq!(bearer(Some(&h("Bearer "))), None);
        assert_eq!(bearer(None), None);
    }
}
