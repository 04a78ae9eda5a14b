//! OAuth 2.0 Protected Resource Metadata (RFC 9728): the document that tells an MCP client
//! which authorization server issues tokens for this server, and where it lives.

use super::Verifier;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// Where the metadata lives without a path suffix.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata URL for a resource (RFC 9728 section 3.1): the well-known segment inserted
/// between the resource's origin and its path, so `https://h/mcp` has its document at
/// `https://h/.well-known/oauth-protected-resource/mcp`.
pub fn metadata_url(resource: &str) -> String {
    match url::Url::parse(resource) {
        Ok(u) => {
            let path = u.path().trim_end_matches('/');
            format!("{}{WELL_KNOWN}{path}", u.origin().ascii_serialization())
        }
        Err(_) => WELL_KNOWN.to_string(),
    }
}

/// The metadata document.
pub fn document(v: &Verifier) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "resource": v.audience(),
        "authorization_servers": [v.issuer()],
        "bearer_methods_supported": ["header"],
        "resource_name": "shortlist",
    });
    if !v.required_scopes().is_empty() {
        doc["scopes_supported"] = serde_json::json!(v.required_scopes());
    }
    doc
}

/// The metadata routes: the plain well-known path, the `/mcp`-suffixed one, and the path
/// the audience's own URL gives when the server is published under a prefix.
pub fn routes(v: Arc<Verifier>) -> Router {
    let mut paths = vec![WELL_KNOWN.to_string(), format!("{WELL_KNOWN}/mcp")];
    if let Ok(u) = url::Url::parse(&metadata_url(v.audience())) {
        if !paths.iter().any(|p| p == u.path()) {
            paths.push(u.path().to_string());
        }
    }
    let mut router = Router::new();
    for p in paths {
        router = router.route(&p, get(serve));
    }
    router.with_state(v)
}

async fn serve(State(v): State<Arc<Verifier>>) -> impl IntoResponse {
    (
        [(header::CACHE_CONTROL, "public, max-age=3600")],
        axum::Json(document(&v)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_segment() {
        assert_eq!(
            metadata_url("https://mcp.test/mcp"),
            "https://mcp.test/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.test:8443/team/mcp/"),
            "https://mcp.test:8443/.well-known/oauth-protected-resource/team/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.test"),
            "https://mcp.test/.well-known/oauth-protected-resource"
        );
    }
}
