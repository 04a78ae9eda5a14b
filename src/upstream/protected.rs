//! An MCP server as an OAuth resource server: what its protected-resource metadata
//! (RFC 9728) says, and the credential settings an entry left out, filled in from it.
//!
//! An entry whose calls carry each person's own token may leave out what the server
//! publishes: a token exchange's `audience` (the server's `resource`), an authorization
//! code grant's endpoints (from the metadata of the authorization server the server names,
//! RFC 8414 or OpenID discovery). The server is an upstream, and an upstream may lie, so
//! what it says is checked before anything is sent on its word:
//!
//! - the metadata is read from the server's own origin only (the well-known paths, not a
//!   URL a `WWW-Authenticate` header points elsewhere), and its `resource` must be the
//!   server's URL (RFC 9728 §3.3): metadata copied from another server is refused;
//! - a person's access token is exchanged only where the `[auth]` issuer is among the
//!   authorization servers the server accepts, and still only at that issuer's own token
//!   endpoint (the broker's rule): a server cannot send anyone's token elsewhere;
//! - a client secret goes only to the authorization server the entry names (`issuer`);
//!   a public client (PKCE alone) may follow the server's first authorization server;
//! - the authorization server's metadata must name itself as its `issuer`.

use crate::catalog::AuthConfig;
use serde_json::Value;

/// The most bytes of a metadata document read.
const MAX_METADATA_BYTES: usize = 64 * 1024;

/// What an MCP server says of itself as a resource server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The server's resource identifier: its URL.
    pub resource: String,
    /// The authorization servers whose tokens it accepts (issuer identifiers).
    pub authorization_servers: Vec<String>,
}

/// An authorization server's endpoints, from its own metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    /// Whether its redirects carry `iss` (RFC 9207).
    pub iss_in_redirects: bool,
}

/// Whether two URLs name the same thing (a trailing slash aside).
fn same(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The well-known URLs of `base` for `suffix`: the path-inserted form first (RFC 9728
/// §3.1, RFC 8414 §3.1), then the origin's own.
fn well_known(base: &str, suffix: &str) -> Result<Vec<String>, String> {
    let url = url::Url::parse(base).map_err(|e| format!("{base} is not a URL: {e}"))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!("{origin}/.well-known/{suffix}{path}"));
    }
    out.push(format!("{origin}/.well-known/{suffix}"));
    Ok(out)
}

/// The first of `urls` that answers a JSON object, bounded in size.
async fn first_json(client: &reqwest_mcp::Client, urls: &[String]) -> Result<Value, String> {
    let mut why = Vec::new();
    for u in urls {
        let answered = async {
            let mut resp = client
                .get(u)
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| format!("{u}: {e}"))?;
            if !resp.status().is_success() {
                return Err(format!("{u}: HTTP {}", resp.status().as_u16()));
            }
            let mut body = Vec::new();
            while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{u}: {e}"))? {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_METADATA_BYTES {
                    return Err(format!("{u}: larger than {MAX_METADATA_BYTES} bytes"));
                }
            }
            match serde_json::from_slice::<Value>(&body) {
                Ok(v) if v.is_object() => Ok(v),
                _ => Err(format!("{u}: not a JSON object")),
            }
        }
        .await;
        match answered {
            Ok(v) => return Ok(v),
            Err(e) => why.push(e),
        }
    }
    Err(why.join("; "))
}

/// The protected-resource metadata of the MCP server at `url`, read from its own origin.
pub async fn resource_metadata(
    client: &reqwest_mcp::Client,
    url: &str,
) -> Result<ResourceMetadata, String> {
    let doc = first_json(client, &well_known(url, "oauth-protected-resource")?)
        .await
        .map_err(|e| format!("no protected-resource metadata ({e})"))?;
    let resource = doc
        .get("resource")
        .and_then(Value::as_str)
        .ok_or("its protected-resource metadata names no `resource`")?;
    if !same(resource, url) {
        return Err(format!(
            "its protected-resource metadata describes {resource}, not {url}: refused"
        ));
    }
    let authorization_servers: Vec<String> = doc
        .get("authorization_servers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if authorization_servers.is_empty() {
        return Err("its protected-resource metadata names no authorization server".into());
    }
    Ok(ResourceMetadata {
        resource: resource.to_string(),
        authorization_servers,
    })
}

/// The metadata of the authorization server `issuer` (RFC 8414, else OpenID discovery).
pub async fn server_metadata(
    client: &reqwest_mcp::Client,
    issuer: &str,
) -> Result<ServerMetadata, String> {
    let mut urls = well_known(issuer, "oauth-authorization-server")?;
    urls.push(format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    ));
    let doc = first_json(client, &urls)
        .await
        .map_err(|e| format!("authorization server {issuer}: no metadata ({e})"))?;
    let named = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
    if !same(named, issuer) {
        return Err(format!(
            "authorization server {issuer}: its metadata names another issuer ({named})"
        ));
    }
    let field = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(ServerMetadata {
        issuer: issuer.to_string(),
        authorization_endpoint: field("authorization_endpoint"),
        token_endpoint: field("token_endpoint"),
        revocation_endpoint: field("revocation_endpoint"),
        iss_in_redirects: doc
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// Whether `auth` leaves out something only the server's metadata can give.
pub fn needs_discovery(auth: &AuthConfig) -> bool {
    match auth {
        AuthConfig::TokenExchange { audience, .. } => audience.is_empty(),
        AuthConfig::AuthorizationCode {
            authorize_url,
            token_url,
            ..
        } => authorize_url.is_empty() || token_url.is_empty(),
        _ => false,
    }
}

/// Which authorization server's metadata `auth` needs, among those `meta` names, if any;
/// `issuer` is the `[auth]` table's.
pub fn chosen_server(
    auth: &AuthConfig,
    meta: &ResourceMetadata,
    issuer: Option<&str>,
) -> Result<Option<String>, String> {
    let accepted = |want: &str| {
        meta.authorization_servers
            .iter()
            .find(|s| same(s, want))
            .cloned()
    };
    match auth {
        AuthConfig::TokenExchange { .. } => {
            let ours = issuer.ok_or("exchanging each person's token needs the [auth] table")?;
            accepted(ours).map(|_| None).ok_or_else(|| {
                format!(
                    "it accepts tokens of {} only, not of this server's identity provider ({ours}), so nobody's token is exchanged for it",
                    meta.authorization_servers.join(", ")
                )
            })
        }
        AuthConfig::AuthorizationCode {
            issuer: named,
            client_secret_env,
            ..
        } => match (named, client_secret_env) {
            (Some(n), _) => accepted(n).map(Some).ok_or_else(|| {
                format!(
                    "it accepts tokens of {}, not of the `issuer` its entry names ({n})",
                    meta.authorization_servers.join(", ")
                )
            }),
            (None, Some(_)) => Err(
                "name its authorization server as `issuer` in the entry's auth: a client secret goes only to one the config names".into(),
            ),
            (None, None) => Ok(meta.authorization_servers.first().cloned()),
        },
        _ => Ok(None),
    }
}

/// `auth` with what it left out filled in from the server's metadata (and its chosen
/// authorization server's, where one was needed).
pub fn filled(
    auth: &AuthConfig,
    meta: &ResourceMetadata,
    server: Option<&ServerMetadata>,
) -> Result<AuthConfig, String> {
    let mut out = auth.clone();
    match &mut out {
        AuthConfig::TokenExchange { audience, .. } if audience.is_empty() => {
            *audience = meta.resource.clone();
        }
        AuthConfig::AuthorizationCode {
            authorize_url,
            token_url,
            resource,
            revocation_url,
            issuer,
            ..
        } => {
            let s = server.ok_or("no authorization server was chosen")?;
            let need = |v: &Option<String>, what: &str| {
                v.clone()
                    .ok_or_else(|| format!("authorization server {} names no {what}", s.issuer))
            };
            if authorize_url.is_empty() {
                *authorize_url = need(&s.authorization_endpoint, "authorization_endpoint")?;
            }
            if token_url.is_empty() {
                *token_url = need(&s.token_endpoint, "token_endpoint")?;
            }
            resource.get_or_insert_with(|| meta.resource.clone());
            if revocation_url.is_none() {
                *revocation_url = s.revocation_endpoint.clone();
            }
            if issuer.is_none() && s.iss_in_redirects {
                *issuer = Some(s.issuer.clone());
            }
        }
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> ResourceMetadata {
        ResourceMetadata {
            resource: "https://mcp.example.com/mcp".into(),
            authorization_servers: vec!["https://idp.example.com".into()],
        }
    }

    fn exchange(audience: &str) -> AuthConfig {
        AuthConfig::TokenExchange {
            token_url: None,
            client_id: "c".into(),
            client_secret_env: "S".into(),
            audience: audience.into(),
            scope: None,
            trust_token_url: false,
        }
    }

    fn code(issuer: Option<&str>, secret: Option<&str>) -> AuthConfig {
        AuthConfig::AuthorizationCode {
            authorize_url: String::new(),
            token_url: String::new(),
            client_id: "c".into(),
            client_secret_env: secret.map(str::to_string),
            scope: None,
            resource: None,
            revocation_url: None,
            redirect_uri: None,
            issuer: issuer.map(str::to_string),
        }
    }

    #[test]
    fn well_known_urls_insert_the_path_first() {
        assert_eq!(
            well_known("https://a.example/mcp/", "oauth-protected-resource").unwrap(),
            [
                "https://a.example/.well-known/oauth-protected-resource/mcp",
                "https://a.example/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            well_known("https://a.example", "x").unwrap(),
            ["https://a.example/.well-known/x"]
        );
    }

    #[test]
    fn a_token_is_exchanged_only_for_a_server_that_accepts_our_issuer() {
        let m = meta();
        assert_eq!(
            chosen_server(&exchange(""), &m, Some("https://idp.example.com/")),
            Ok(None)
        );
        let e = chosen_server(&exchange(""), &m, Some("https://other.example")).unwrap_err();
        assert!(e.contains("nobody's token is exchanged"), "{e}");
        let AuthConfig::TokenExchange { audience, .. } = filled(&exchange(""), &m, None).unwrap()
        else {
            unreachable!()
        };
        assert_eq!(audience, "https://mcp.example.com/mcp");
    }

    #[test]
    fn a_client_secret_goes_only_to_the_server_the_entry_names() {
        let m = meta();
        assert!(chosen_server(&code(None, Some("S")), &m, None)
            .unwrap_err()
            .contains("`issuer`"));
        assert!(chosen_server(&code(Some("https://evil.example"), Some("S")), &m, None).is_err());
        assert_eq!(
            chosen_server(&code(Some("https://idp.example.com"), Some("S")), &m, None),
            Ok(Some("https://idp.example.com".into()))
        );
        assert_eq!(
            chosen_server(&code(None, None), &m, None),
            Ok(Some("https://idp.example.com".into()))
        );
    }

    #[test]
    fn endpoints_come_from_the_chosen_server() {
        let s = ServerMetadata {
            issuer: "https://idp.example.com".into(),
            authorization_endpoint: Some("https://idp.example.com/auth".into()),
            token_endpoint: Some("https://idp.example.com/token".into()),
            revocation_endpoint: None,
            iss_in_redirects: true,
        };
        let AuthConfig::AuthorizationCode {
            authorize_url,
            token_url,
            resource,
            issuer,
            ..
        } = filled(&code(None, None), &meta(), Some(&s)).unwrap()
        else {
            unreachable!()
        };
        assert_eq!(authorize_url, "https://idp.example.com/auth");
        assert_eq!(token_url, "https://idp.example.com/token");
        assert_eq!(resource.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(issuer.as_deref(), Some("https://idp.example.com"));
        let bare = ServerMetadata {
            token_endpoint: None,
            ..s
        };
        assert!(filled(&code(None, None), &meta(), Some(&bare)).is_err());
    }
}
