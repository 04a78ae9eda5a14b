//! HTTP guards in front of every route: the bearer token (when configured) and, for the
//! routes rmcp does not serve itself (legacy SSE), the DNS-rebinding `Host` check that
//! rmcp applies to `/mcp`.
//!
//! A server on loopback is reachable from any web page the user opens through DNS
//! rebinding, unless it refuses `Host` names it does not serve; a server off loopback is
//! reachable by anyone, hence the token.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// What the guards check.
#[derive(Clone)]
pub struct Guard {
    /// SHA-256 of the expected `Authorization` value (`Bearer <token>`); `None` = no auth.
    token_digest: Option<[u8; 32]>,
    /// The key console session cookies are signed with, derived from the token (so every
    /// replica with the token has it, and a new token ends every session).
    session_key: Option<[u8; 32]>,
    /// Host names (optionally `host:port`) accepted in `Host`; empty accepts any.
    allowed_hosts: Arc<Vec<String>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token, not even its digest.
        f.debug_struct("Guard")
            .field("auth", &self.token_digest.is_some())
            .field("allowed_hosts", &self.allowed_hosts)
            .finish()
    }
}

impl Guard {
    pub fn new(token: Option<&str>, allowed_hosts: Vec<String>) -> Guard {
        Guard {
            token_digest: token.map(|t| Sha256::digest(format!("Bearer {t}")).into()),
            session_key: token
                .map(|t| Sha256::digest(format!("shortlist-console-session\0{t}")).into()),
            allowed_hosts: Arc::new(allowed_hosts),
        }
    }

    /// Whether the request's `Authorization` header carries the token. Digests of equal
    /// length are compared in constant time, so timing reveals nothing about the token.
    fn authorized(&self, req: &Request) -> bool {
        let Some(expected) = &self.token_digest else {
            return true;
        };
        let Some(given) = req.headers().get(header::AUTHORIZATION) else {
            return false;
        };
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        given
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// Whether a token is required at all.
    pub fn requires_token(&self) -> bool {
        self.token_digest.is_some()
    }

    /// Whether `token` is the server's token (constant time, as for the header). A server
    /// without a token accepts none: there is nothing to log in to.
    pub fn token_matches(&self, token: &str) -> bool {
        let Some(expected) = &self.token_digest else {
            return false;
        };
        let given: [u8; 32] = Sha256::digest(format!("Bearer {token}")).into();
        given
            .iter()
            .zip(expected.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// Whether `value` is a console session cookie signed with this server's token and not
    /// ended. A server without a token has no sessions.
    pub fn session_valid(&self, value: &str) -> bool {
        match &self.session_key {
            Some(k) => session_valid(k, value),
            None => false,
        }
    }

    /// A console session cookie value ending at `expires`, or `None` without a token.
    pub fn session_value(&self, expires: i64) -> Option<String> {
        self.session_key.as_ref().map(|k| session_value(k, expires))
    }

    /// Whether the request's `Authorization` header carries the token (always true
    /// without one).
    pub fn header_authorized(&self, req: &Request) -> bool {
        self.authorized(req)
    }

    /// Whether the `Host` header names this server.
    pub fn host_allowed(&self, req: &Request) -> bool {
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string)
            .or_else(|| req.uri().authority().map(|a| a.to_string()));
        host.is_some_and(|h| self.authority_allowed(&h))
    }

    /// Whether the `Origin` header, when there is one, is a page served from a host this
    /// server answers to. Browsers send `Origin` on every cross-origin request, so a page
    /// elsewhere (or a sandboxed one: `Origin: null`) cannot drive the server through the
    /// user's browser; clients that are not browsers send none.
    pub fn origin_allowed(&self, req: &Request) -> bool {
        let Some(origin) = req.headers().get(header::ORIGIN) else {
            return true;
        };
        if self.allowed_hosts.is_empty() {
            return true;
        }
        let Some(url) = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()) else {
            return false;
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        matches!(url.scheme(), "http" | "https")
            && self.authority_allowed(&format!("{host}:{port}"))
    }

    /// Whether `host[:port]` is one of the allowed names (an allowed entry with a port
    /// matches that port only).
    fn authority_allowed(&self, host: &str) -> bool {
        let Ok(authority) = host.parse::<axum::http::uri::Authority>() else {
            return false;
        };
        let name = normalize(authority.host());
        let port = authority.port_u16();
        self.allowed_hosts.iter().any(|allowed| {
            match allowed.parse::<axum::http::uri::Authority>() {
                Ok(a) => {
                    normalize(a.host()) == name && a.port_u16().is_none_or(|p| Some(p) == port)
                }
                Err(_) => normalize(allowed) == name,
            }
        })
    }
}

fn normalize(host: &str) -> String {
    host.trim_matches(['[', ']']).to_ascii_lowercase()
}

/// The console session cookie's value for a session ending at `expires` (seconds since
/// the Unix epoch): `v1.<expires>.<signature>`, signed with `key` (derived from the
/// server's token).
fn session_value(key: &[u8; 32], expires: i64) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let sig = ring::hmac::sign(&key, format!("console\0{expires}").as_bytes());
    format!("v1.{expires}.{}", hex::encode(sig.as_ref()))
}

/// Whether `value` is a session cookie signed with `key` that has not ended (the
/// signature compared in constant time).
fn session_valid(key: &[u8; 32], value: &str) -> bool {
    let mut parts = value.splitn(3, '.');
    let (Some("v1"), Some(exp), Some(sig)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(exp), Ok(sig)) = (exp.parse::<i64>(), hex::decode(sig)) else {
        return false;
    };
    if exp <= crate::store::now() {
        return false;
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    ring::hmac::verify(&key, format!("console\0{exp}").as_bytes(), &sig).is_ok()
}

/// Middleware: 401 without the token.
pub async fn require_token(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    if guard.authorized(&req) {
        next.run(req).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: send Authorization: Bearer <token>",
        )
            .into_response()
    }
}

/// Middleware for the legacy SSE routes: 403 for a `Host` this server does not serve or a
/// foreign `Origin`.
pub async fn require_host(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    if !guard.host_allowed(&req) {
        tracing::warn!("rejected a legacy SSE request with a disallowed Host header");
        return forbidden("Forbidden: Host header is not allowed");
    }
    require_origin(State(guard), req, next).await
}

/// Middleware: 403 for a foreign `Origin`. rmcp checks `Host` on `/mcp` but leaves `Origin`
/// unchecked unless given a list of origins, and the origins of a loopback server are its
/// host names on any port, which its list syntax cannot say for every allowed name.
pub async fn require_origin(State(guard): State<Guard>, req: Request, next: Next) -> Response {
    if guard.origin_allowed(&req) {
        next.run(req).await
    } else {
        tracing::warn!("rejected a request with a disallowed Origin header");
        forbidden("Forbidden: Origin header is not allowed")
    }
}

fn forbidden(msg: &'static str) -> Response {
    (StatusCode::FORBIDDEN, msg).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn req(host: &str, auth: Option<&str>) -> Request {
        let mut b = axum::http::Request::builder()
            .uri("/sse")
            .header("host", host);
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        b.body(Body::empty()).unwrap()
    }

    #[test]
    fn host_check_accepts_loopback_names_only() {
        let g = Guard::new(
            None,
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
        );
        assert!(g.host_allowed(&req("127.0.0.1:8080", None)));
        assert!(g.host_allowed(&req("LOCALHOST", None)));
        assert!(g.host_allowed(&req("[::1]:9", None)));
        assert!(!g.host_allowed(&req("evil.example", None)));
        assert!(!g.host_allowed(&req("evil.example:8080", None)));
    }

    #[test]
    fn origin_check_accepts_absent_or_served_origins_only() {
        let g = Guard::new(None, vec!["localhost".into(), "127.0.0.1".into()]);
        let with_origin = |o: &str| {
            let mut r = req("127.0.0.1:8080", None);
            r.headers_mut().insert(header::ORIGIN, o.parse().unwrap());
            r
        };
        assert!(g.origin_allowed(&req("127.0.0.1:8080", None)));
        assert!(g.origin_allowed(&with_origin("http://localhost:3000")));
        assert!(g.origin_allowed(&with_origin("https://127.0.0.1")));
        for bad in [
            "http://evil.example",
            "http://127.0.0.1.evil.example:8080",
            "null",
            "file://",
            "chrome-extension://abc",
        ] {
            assert!(!g.origin_allowed(&with_origin(bad)), "{bad}");
        }
    }

    #[test]
    fn token_must_match_exactly() {
        let g = Guard::new(Some("s3cret"), vec![]);
        assert!(g.authorized(&req("x", Some("Bearer s3cret"))));
        assert!(!g.authorized(&req("x", Some("Bearer s3cre"))));
        assert!(!g.authorized(&req("x", None)));
        assert!(!format!("{g:?}").contains("s3cret"));
        assert!(Guard::new(None, vec![]).authorized(&req("x", None)));
    }
}
