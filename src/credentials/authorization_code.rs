//! The OAuth authorization code grant with PKCE (RFC 6749 section 4.1, RFC 7636), for a
//! third-party API each person consents to once: the consent link, the code redeemed for
//! tokens, the refresh, and the revocation (RFC 7009) when the person disconnects.
//!
//! This type holds no person's state: the pending consent (its `state` and PKCE verifier)
//! and the tokens live in the state store, so any replica can finish what another began.

use super::token_endpoint::{Granted, TokenEndpoint};
use super::CredentialError;
use base64::Engine;
use ring::rand::{SecureRandom, SystemRandom};
use sha2::Digest;

/// One API's authorization server, as the catalog config names it.
pub struct AuthorizationCode {
    endpoint: TokenEndpoint,
    authorize_url: url::Url,
    redirect_uri: String,
    scope: Option<String>,
    resource: Option<String>,
    revocation_url: Option<String>,
}

impl std::fmt::Debug for AuthorizationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationCode")
            .field("endpoint", &self.endpoint)
            .field("authorize_url", &self.authorize_url.as_str())
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// What [`AuthorizationCode::new`] needs.
pub struct AuthorizationCodeSettings<'a> {
    pub authorize_url: &'a str,
    pub token_url: &'a str,
    pub client_id: &'a str,
    /// Empty for a public client.
    pub client_secret: &'a str,
    pub redirect_uri: &'a str,
    pub scope: Option<&'a str>,
    pub resource: Option<&'a str>,
    pub revocation_url: Option<&'a str>,
}

/// A fresh PKCE pair and `state` for one consent.
pub struct Challenge {
    /// The OAuth `state`: 256 random bits, the key the redirect comes back with.
    pub state: String,
    /// The PKCE code verifier (kept sealed until the redirect).
    pub verifier: String,
}

impl AuthorizationCode {
    pub fn new(s: AuthorizationCodeSettings<'_>) -> Result<AuthorizationCode, CredentialError> {
        let authorize_url =
            url::Url::parse(s.authorize_url).map_err(|e| CredentialError::Refused {
                url: s.authorize_url.into(),
                client_id: s.client_id.into(),
                reason: format!("the authorization URL is not a URL: {e}"),
            })?;
        Ok(AuthorizationCode {
            endpoint: TokenEndpoint::new(s.token_url, s.client_id, s.client_secret)?,
            authorize_url,
            redirect_uri: s.redirect_uri.into(),
            scope: s.scope.map(str::to_string),
            resource: s.resource.map(str::to_string),
            revocation_url: s.revocation_url.map(str::to_string),
        })
    }

    /// A new `state` and PKCE verifier.
    pub fn challenge() -> Result<Challenge, CredentialError> {
        Ok(Challenge {
            state: random_text()?,
            verifier: random_text()?,
        })
    }

    /// The link the person opens to consent: the authorization request with the S256
    /// challenge of `verifier`.
    pub fn consent_link(&self, state: &str, verifier: &str) -> String {
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()));
        let mut url = self.authorize_url.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", self.endpoint.client_id())
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("state", state)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256");
            if let Some(s) = &self.scope {
                q.append_pair("scope", s);
            }
            if let Some(r) = &self.resource {
                q.append_pair("resource", r);
            }
        }
        url.into()
    }

    /// Redeems the code the redirect brought, with the verifier of its consent.
    pub async fn redeem(&self, code: &str, verifier: &str) -> Result<Granted, CredentialError> {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("code_verifier", verifier),
        ];
        if let Some(r) = &self.resource {
            form.push(("resource", r));
        }
        self.endpoint.grant(&form).await
    }

    /// A fresh access token for a refresh token.
    pub async fn refresh(&self, refresh_token: &str) -> Result<Granted, CredentialError> {
        let mut form = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        if let Some(r) = &self.resource {
            form.push(("resource", r));
        }
        self.endpoint.grant(&form).await
    }

    /// Tells the authorization server to revoke `token` (RFC 7009), when the config names
    /// a revocation endpoint. Whether it was asked.
    pub async fn revoke(&self, token: &str, hint: &str) -> Result<bool, CredentialError> {
        let Some(url) = &self.revocation_url else {
            return Ok(false);
        };
        let revoker = TokenEndpoint::new(url, self.endpoint.client_id(), self.endpoint.secret())?;
        revoker
            .post_only(&[("token", token), ("token_type_hint", hint)])
            .await?;
        Ok(true)
    }
}

/// 256 random bits, base64url: unguessable, safe in a URL.
fn random_text() -> Result<String, CredentialError> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| CredentialError::Unreachable {
            url: "the system's random source".into(),
            reason: "no randomness available".into(),
        })?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consent_link_carries_the_s256_challenge() {
        let ac = AuthorizationCode::new(AuthorizationCodeSettings {
            authorize_url: "https://as.example/authorize?tenant=1",
            token_url: "https://as.example/token",
            client_id: "app",
            client_secret: "",
            redirect_uri: "https://mcp.example/oauth/callback",
            scope: Some("notes:read notes:write"),
            resource: Some("https://notes.example/"),
            revocation_url: None,
        })
        .unwrap();
        // RFC 7636 appendix B.
        let link = ac.consent_link("st", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk");
        let url = url::Url::parse(&link).unwrap();
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(q["tenant"], "1", "the URL's own query is kept");
        assert_eq!(
            q["code_challenge"],
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["state"], "st");
        assert_eq!(q["redirect_uri"], "https://mcp.example/oauth/callback");
        assert_eq!(q["scope"], "notes:read notes:write");
        assert_eq!(q["resource"], "https://notes.example/");
        assert!(!link.contains("dBjftJeZ"), "the verifier never leaves");
        let (a, b) = (
            AuthorizationCode::challenge().unwrap(),
            AuthorizationCode::challenge().unwrap(),
        );
        assert_ne!(a.state, b.state);
        assert_eq!(a.verifier.len(), 43);
    }
}
