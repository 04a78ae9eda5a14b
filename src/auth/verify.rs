//! Access-token verification: a JWT signed by the configured issuer (RS256 or ES256) for
//! this server's audience, within its validity window.

use super::discovery::Discovery;
use super::jwks::{Jwks, KeyError};
use super::Principal;
use crate::catalog::config::ResourceServerConfig;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// Clock skew allowed on `exp` and `nbf` unless the config says otherwise.
const DEFAULT_LEEWAY_SECS: u64 = 30;

/// Least time between two key fetches for unknown `kid`s unless the config says otherwise.
const DEFAULT_MIN_REFETCH_SECS: u64 = 10;

/// Signature algorithms accepted: the two that MCP authorization servers use in practice.
/// Symmetric (`HS*`) and `none` are never accepted: a public key must not double as a
/// shared secret.
const ALGORITHMS: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No bearer token at all.
    Missing,
    /// A token that is not valid here; the text says why (no secret in it).
    Invalid(String),
    /// A valid token without every required scope; lists the required ones.
    InsufficientScope(Vec<String>),
    /// The issuer's keys cannot be fetched, so no token can be checked.
    Unavailable(String),
}

/// Checks access tokens for one issuer and audience.
pub struct Verifier {
    issuer: String,
    audience: String,
    required_scopes: Vec<String>,
    groups_claim: String,
    leeway: u64,
    discovery: std::sync::Arc<Discovery>,
    jwks: Jwks,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("required_scopes", &self.required_scopes)
            .finish()
    }
}

impl Verifier {
    /// A verifier for the `[auth]` table. The issuer and audience must be absolute URLs,
    /// `https` unless on a loopback host.
    pub fn new(cfg: &ResourceServerConfig) -> anyhow::Result<Verifier> {
        check_url("issuer", &cfg.issuer)?;
        check_url("audience", &cfg.audience)?;
        let min_refetch = cfg
            .jwks_min_refetch_secs
            .unwrap_or(DEFAULT_MIN_REFETCH_SECS);
        let discovery = std::sync::Arc::new(Discovery::new(&cfg.issuer)?);
        Ok(Verifier {
            issuer: cfg.issuer.clone(),
            audience: cfg.audience.clone(),
            required_scopes: cfg.required_scopes.clone(),
            groups_claim: cfg.groups_claim.clone().unwrap_or_else(|| "groups".into()),
            leeway: cfg.leeway_secs.unwrap_or(DEFAULT_LEEWAY_SECS),
            jwks: Jwks::with_discovery(
                std::sync::Arc::clone(&discovery),
                Duration::from_secs(min_refetch),
            )?,
            discovery,
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    pub fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// The key cache (diagnostics and tests: how often keys were fetched).
    pub fn jwks(&self) -> &Jwks {
        &self.jwks
    }

    /// The issuer's metadata (its token and authorization endpoints).
    pub fn discovery(&self) -> &std::sync::Arc<Discovery> {
        &self.discovery
    }

    /// The `sub` of an OpenID Connect ID token the issuer signed for the client
    /// `client_id`, carrying `nonce`: who signed in at the provider, for a consent that
    /// must be completed by the person it was made for.
    pub async fn verify_id_token(
        &self,
        token: &str,
        client_id: &str,
        nonce: &str,
    ) -> Result<String, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::Invalid("the ID token is not a JWT".into()))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(AuthError::Invalid(format!(
                "ID tokens signed with {:?} are not accepted",
                header.alg
            )));
        }
        let key = match self.jwks.key(header.kid.as_deref()).await {
            Ok(k) => k,
            Err(KeyError::Unknown(kid)) => {
                return Err(AuthError::Invalid(format!(
                    "the ID token's signing key '{kid}' is not one of the issuer's keys"
                )))
            }
            Err(KeyError::Unavailable(e)) => return Err(AuthError::Unavailable(e)),
        };
        if key.alg.is_some_and(|a| a != header.alg) {
            return Err(AuthError::Invalid(
                "the ID token's algorithm does not match its key".into(),
            ));
        }
        let mut v = Validation::new(header.alg);
        v.leeway = self.leeway;
        v.set_issuer(&[self.issuer.as_str()]);
        v.set_audience(&[client_id]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Value>(token, &key.decoding, &v)
            .map_err(|e| AuthError::Invalid(reason(&e)))?;
        let c = &data.claims;
        if c.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err(AuthError::Invalid(
                "the ID token is not the answer to this sign-in (nonce)".into(),
            ));
        }
        c.get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| AuthError::Invalid("the ID token has no subject".into()))
    }

    /// The principal a token speaks for, or why it is refused. Scopes are checked too.
    pub async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::Invalid("the token is not a JWT".into()))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(AuthError::Invalid(format!(
                "tokens signed with {:?} are not accepted (RS256 or ES256 only)",
                header.alg
            )));
        }
        let key = match self.jwks.key(header.kid.as_deref()).await {
            Ok(k) => k,
            Err(KeyError::Unknown(kid)) => {
                return Err(AuthError::Invalid(format!(
                    "the token's signing key '{kid}' is not one of the issuer's keys"
                )))
            }
            Err(KeyError::Unavailable(e)) => return Err(AuthError::Unavailable(e)),
        };
        if key.alg.is_some_and(|a| a != header.alg) {
            return Err(AuthError::Invalid(
                "the token's algorithm does not match its key".into(),
            ));
        }
        let mut v = Validation::new(header.alg);
        v.leeway = self.leeway;
        v.validate_exp = true;
        v.validate_nbf = true;
        v.set_issuer(&[self.issuer.as_str()]);
        v.set_audience(&[self.audience.as_str()]);
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Value>(token, &key.decoding, &v)
            .map_err(|e| AuthError::Invalid(reason(&e)))?;
        let principal = self.principal(&data.claims)?;
        self.check_scopes(&principal)?;
        Ok(principal)
    }

    fn principal(&self, c: &Value) -> Result<Principal, AuthError> {
        let sub = c
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| AuthError::Invalid("the token has no subject".into()))?;
        let mut scopes = BTreeSet::new();
        for claim in ["scope", "scp"] {
            scopes.extend(strings(c.get(claim)));
        }
        let client_id = ["client_id", "azp"]
            .iter()
            .find_map(|k| c.get(*k).and_then(Value::as_str))
            .map(str::to_string);
        Ok(Principal {
            sub: sub.to_string(),
            issuer: self.issuer.clone(),
            scopes,
            groups: strings(c.get(&self.groups_claim)).collect(),
            client_id,
            expires_at: c.get("exp").and_then(Value::as_u64).unwrap_or(0),
        })
    }

    /// `InsufficientScope` unless the principal holds every required scope.
    pub fn check_scopes(&self, p: &Principal) -> Result<(), AuthError> {
        if self.required_scopes.iter().all(|s| p.has_scope(s)) {
            Ok(())
        } else {
            Err(AuthError::InsufficientScope(self.required_scopes.clone()))
        }
    }
}

/// The strings of a claim that is a space-separated string or an array of strings.
fn strings(v: Option<&Value>) -> impl Iterator<Item = String> + '_ {
    let (one, many) = match v {
        Some(Value::String(s)) => (Some(s.split_whitespace()), None),
        Some(Value::Array(a)) => (None, Some(a.iter().filter_map(Value::as_str))),
        _ => (None, None),
    };
    one.into_iter()
        .flatten()
        .chain(many.into_iter().flatten())
        .map(str::to_string)
}

fn reason(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        K::InvalidAudience => "the token is not for this server (aud)".into(),
        K::InvalidIssuer => "the token is from another issuer (iss)".into(),
        K::InvalidSignature => "the token's signature does not verify".into(),
        K::MissingRequiredClaim(c) => format!("the token has no '{c}' claim"),
        K::InvalidAlgorithm => "the token's algorithm does not match its key".into(),
        _ => "the token is malformed".into(),
    }
}

fn check_url(what: &str, s: &str) -> anyhow::Result<()> {
    super::discovery::secure_url(s).map_err(|why| anyhow::anyhow!("[auth] {what}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(issuer: &str, audience: &str) -> ResourceServerConfig {
        ResourceServerConfig {
            issuer: issuer.into(),
            audience: audience.into(),
            required_scopes: vec![],
            groups_claim: None,
            leeway_secs: None,
            jwks_min_refetch_secs: None,
            ..Default::default()
        }
    }

    #[test]
    fn urls_must_be_https_off_loopback() {
        assert!(Verifier::new(&cfg("https://idp.test", "https://mcp.test/mcp")).is_ok());
        assert!(Verifier::new(&cfg("http://127.0.0.1:8080", "https://mcp.test/mcp")).is_ok());
        let e = Verifier::new(&cfg("http://idp.test", "https://mcp.test/mcp")).unwrap_err();
        assert!(e.to_string().contains("issuer"), "{e}");
        assert!(Verifier::new(&cfg("https://idp.test", "mcp")).is_err());
    }

    #[tokio::test]
    async fn malformed_and_symmetric_tokens_are_invalid_without_a_fetch() {
        let v = Verifier::new(&cfg("http://127.0.0.1:9", "https://mcp.test/mcp")).unwrap();
        assert_eq!(
            v.verify("not-a-jwt").await,
            Err(AuthError::Invalid("the token is not a JWT".into()))
        );
        // {"alg":"HS256","typ":"JWT"}.{"sub":"x"}.sig
        let hs = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ4In0.c2ln";
        assert!(matches!(v.verify(hs).await, Err(AuthError::Invalid(m)) if m.contains("HS256")));
        assert_eq!(v.jwks().fetch_count().await, 0);
    }

    #[test]
    fn scopes_and_groups_come_from_strings_or_arrays() {
        let v = Verifier::new(&cfg("https://idp.test", "https://mcp.test/mcp")).unwrap();
        let p = v
            .principal(&serde_json::json!({
                "sub": "alice", "scope": "mcp  read", "scp": ["write"], "groups": "eng",
                "azp": "cli", "exp": 5
            }))
            .unwrap();
        assert_eq!(
            p.scopes.iter().map(String::as_str).collect::<Vec<_>>(),
            ["mcp", "read", "write"]
        );
        assert!(p.in_group("eng"));
        assert_eq!((p.client_id.as_deref(), p.expires_at), (Some("cli"), 5));
        assert!(v.principal(&serde_json::json!({"sub": ""})).is_err());
    }
}
