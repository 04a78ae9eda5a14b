//! Who a verified access token speaks for.

use std::collections::BTreeSet;

/// The person (or machine client) behind a verified access token. The token itself is not
/// kept: nothing downstream can forward it to an upstream API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's `sub`: stable per person at one issuer.
    pub sub: String,
    /// The token's `iss` (always the configured issuer).
    pub issuer: String,
    /// The token's scopes (`scope`, space separated, or `scp`).
    pub scopes: BTreeSet<String>,
    /// The person's groups (the configured groups claim, `groups` by default).
    pub groups: BTreeSet<String>,
    /// The OAuth client the token was issued to (`client_id` or `azp`), when the token says.
    pub client_id: Option<String>,
    /// When the token expires (`exp`, seconds since the Unix epoch).
    pub expires_at: u64,
}

impl Principal {
    /// The principal the resource-server layer put into an HTTP request's extensions. rmcp
    /// hands the request's `Parts` to the handler in `RequestContext::extensions`, so the
    /// MCP handler reads it with
    /// `ctx.extensions.get::<axum::http::request::Parts>().and_then(Principal::from_parts)`.
    pub fn from_parts(parts: &axum::http::request::Parts) -> Option<&Principal> {
        parts.extensions.get::<Principal>()
    }

    /// Whether the token carries `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// Whether the person is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.contains(group)
    }
}

/// The verified access token itself, kept apart from [`Principal`] so only code that asks
/// for it by this type sees it: the token exchange (RFC 8693) sends it to the identity
/// provider that issued it, as the subject token. It never goes to an upstream API.
#[derive(Clone)]
pub struct SubjectToken(pub String);

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(..)")
    }
}
