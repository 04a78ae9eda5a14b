//! The issuer's metadata: its OpenID discovery document (or OAuth authorization server
//! metadata, RFC 8414), fetched once and kept. It names the issuer's signing keys
//! (`jwks_uri`), where tokens are issued (`token_endpoint`, where a person's token may be
//! sent for an exchange) and where browsers sign in (`authorization_endpoint`).
//!
//! Every URL in it must be `https` (plain `http` only on a loopback host), and the
//! document must name the configured issuer itself: a document that does not (mix-up), or
//! that points keys or tokens at a plain-text URL, is refused.

use std::time::{Duration, Instant};

/// How long a fetched document is kept.
const MAX_AGE: Duration = Duration::from_secs(3600);

/// The longest a fetch may take: requests that wait on one wait no longer than this.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(3);

/// What the issuer's document says, as far as this server uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerMetadata {
    pub issuer: String,
    pub jwks_uri: String,
    pub token_endpoint: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
}

/// One issuer's metadata, fetched on first use and kept for an hour.
pub struct Discovery {
    issuer: String,
    http: reqwest::Client,
    cached: tokio::sync::Mutex<Option<(IssuerMetadata, Instant)>>,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl Discovery {
    pub fn new(issuer: &str) -> anyhow::Result<Discovery> {
        Ok(Discovery {
            issuer: issuer.trim_end_matches('/').to_string(),
            http: client()?,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The metadata, fetched when not kept or older than an hour. A waiter holds no
    /// longer than [`FETCH_TIMEOUT`] (twice, at most, behind another's fetch).
    pub async fn metadata(&self) -> Result<IssuerMetadata, String> {
        let mut slot = tokio::time::timeout(FETCH_TIMEOUT, self.cached.lock())
            .await
            .map_err(|_| {
                format!(
                    "the issuer {} is slow to answer; try again shortly",
                    self.issuer
                )
            })?;
        if let Some((m, at)) = slot.as_ref() {
            if at.elapsed() < MAX_AGE {
                return Ok(m.clone());
            }
        }
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch())
            .await
            .map_err(|_| {
                format!(
                    "the issuer {} did not answer within {} s",
                    self.issuer,
                    FETCH_TIMEOUT.as_secs()
                )
            });
        match fetched.and_then(|r| r) {
            Ok(m) => {
                *slot = Some((m.clone(), Instant::now()));
                Ok(m)
            }
            // A document fetched earlier still says where things are.
            Err(e) => match slot.as_ref() {
                Some((m, _)) => {
                    tracing::warn!(issuer = %self.issuer, error = %e, "cannot refresh the issuer's discovery document; using the one fetched earlier");
                    Ok(m.clone())
                }
                None => Err(e),
            },
        }
    }

    async fn fetch(&self) -> Result<IssuerMetadata, String> {
        let openid = format!("{}/.well-known/openid-configuration", self.issuer);
        let doc = match get_json(&self.http, &openid).await {
            Ok(d) => d,
            Err(first) => {
                let url = url::Url::parse(&self.issuer).map_err(|e| e.to_string())?;
                let rfc8414 = format!(
                    "{}/.well-known/oauth-authorization-server{}",
                    url.origin().ascii_serialization(),
                    url.path().trim_end_matches('/')
                );
                get_json(&self.http, &rfc8414)
                    .await
                    .map_err(|second| format!("{first}; {second}"))?
            }
        };
        parse(&self.issuer, &doc)
    }
}

/// The metadata of `issuer` from its document `doc`.
fn parse(issuer: &str, doc: &serde_json::Value) -> Result<IssuerMetadata, String> {
    let named = doc.get("issuer").and_then(|v| v.as_str()).unwrap_or("");
    if named.trim_end_matches('/') != issuer {
        // Mix-up protection: the document must be the configured issuer's own.
        return Err(format!(
            "the discovery document names issuer '{named}', not '{issuer}'"
        ));
    }
    let url = |k: &str| -> Result<Option<String>, String> {
        match doc.get(k).and_then(|v| v.as_str()) {
            None => Ok(None),
            Some(u) => {
                secure_url(u).map_err(|why| format!("the discovery document's {k}: {why}"))?;
                Ok(Some(u.to_string()))
            }
        }
    };
    Ok(IssuerMetadata {
        issuer: issuer.to_string(),
        jwks_uri: url("jwks_uri")?.ok_or("the discovery document has no jwks_uri")?,
        token_endpoint: url("token_endpoint")?,
        authorization_endpoint: url("authorization_endpoint")?,
        revocation_endpoint: url("revocation_endpoint")?,
    })
}

/// `Ok` for an absolute `https` URL, or `http` on a loopback host: keys and tokens are
/// never fetched or sent in plain text across a network.
pub fn secure_url(s: &str) -> Result<(), String> {
    let url = url::Url::parse(s).map_err(|e| format!("'{s}' is not an absolute URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "'{s}' must be an https URL (http only on loopback)"
        )),
    }
}

/// The HTTP client for an issuer: short timeouts, no redirects (a document or key set
/// that moved is the issuer's to say in its metadata).
pub fn client() -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| anyhow::anyhow!("cannot build the HTTP client for the issuer: {e}"))
}

/// GETs `url` as JSON; errors name the URL, never a query.
pub async fn get_json(http: &reqwest::Client, url: &str) -> Result<serde_json::Value, String> {
    let res = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("{url}: {}", without_url(&e)))?;
    if !res.status().is_success() {
        return Err(format!("{url}: HTTP {}", res.status().as_u16()));
    }
    res.json()
        .await
        .map_err(|e| format!("{url}: not JSON: {}", without_url(&e)))
}

fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(&format!(" for url ({u})"), "");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_http_is_refused_off_loopback() {
        assert!(secure_url("https://idp.example/keys").is_ok());
        assert!(secure_url("http://127.0.0.1:9/keys").is_ok());
        assert!(secure_url("http://localhost/keys").is_ok());
        assert!(secure_url("http://idp.example/keys").is_err());
        assert!(secure_url("ftp://idp.example/keys").is_err());
        let doc = json!({"issuer": "https://idp.example", "jwks_uri": "http://idp.example/keys"});
        let e = parse("https://idp.example", &doc).unwrap_err();
        assert!(e.contains("jwks_uri") && e.contains("https"), "{e}");
        let doc = json!({"issuer": "https://idp.example", "jwks_uri": "https://idp.example/keys",
                         "token_endpoint": "http://idp.example/token"});
        assert!(parse("https://idp.example", &doc)
            .unwrap_err()
            .contains("token_endpoint"));
    }

    #[test]
    fn the_document_must_be_the_issuers_own() {
        let doc = json!({"issuer": "https://evil.example", "jwks_uri": "https://evil.example/k"});
        assert!(parse("https://idp.example", &doc)
            .unwrap_err()
            .contains("evil"));
        let doc = json!({"issuer": "https://idp.example/", "jwks_uri": "https://idp.example/k",
                         "token_endpoint": "https://idp.example/token"});
        let m = parse("https://idp.example", &doc).unwrap();
        assert_eq!(
            m.token_endpoint.as_deref(),
            Some("https://idp.example/token")
        );
    }
}
