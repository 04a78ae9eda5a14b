//! Reaching an MCP server over HTTP: streamable HTTP, or the older HTTP+SSE ([`super::sse`]).
//!
//! The client follows the same rules as calls to APIs: the `[upstream]` egress proxy when
//! one is configured (never the environment's unless `proxy_env = true`), no
//! redirects (a server that moved is reconfigured, not followed), the same address policy
//! (link-local and metadata addresses refused unless the entry says `allow_link_local`;
//! loopback and private ones, on a team server, unless it says `allow_private`; checked on
//! the addresses a name resolves to as on IP literals), a bearer token read from the
//! variable the entry names, and the entry's literal headers. The URL's own credentials
//! are sent as the URL carries them and never appear in messages.

use super::bearing::{Bearing, TokenSlot};
use crate::catalog::config::{ApiConfig, AuthConfig};
use crate::catalog::mcp_config::McpSource;
use crate::invoke::address::{self, GuardedResolver, Policy};
use crate::invoke::transport::{check_target, Egress};
use reqwest_mcp::header::{HeaderName, HeaderValue};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use std::collections::HashMap;
use std::sync::Arc;

/// The TLS settings every HTTP upstream shares: rustls on ring, the webpki roots.
fn tls() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// The HTTP client's resolver: the same address policy as calls to APIs.
struct Guarded(GuardedResolver);

impl reqwest_mcp::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest_mcp::dns::Name) -> reqwest_mcp::dns::Resolving {
        let resolver = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = resolver.lookup(&host).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest_mcp::dns::Addrs)
        })
    }
}

/// The server's URL, refused when it names an address the policy refuses (a name is
/// checked when it resolves, in [`Guarded`]).
fn checked_url(source: &McpSource, policy: Policy) -> Result<&str, String> {
    let raw = source
        .url
        .as_deref()
        .ok_or("an HTTP MCP server needs `url`")?;
    let url = url::Url::parse(raw).map_err(|e| format!("`url` is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("`url` must be an http:// or https:// URL".into());
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(ip) = ip {
        if let Some(why) = address::refused_by(ip, policy) {
            return Err(address::refusal(
                ip,
                url.host_str().unwrap_or_default(),
                why,
            ));
        }
    }
    Ok(raw)
}

/// How an entry's server is reached: the addresses it may have, and the egress.
#[derive(Clone, Copy)]
pub struct Reach<'a> {
    pub policy: Policy,
    pub egress: &'a Egress,
}

/// The HTTP client an entry's connection uses: through the egress proxy when one is
/// configured (the target's addresses are checked here first, as for API calls), else
/// directly, never through the environment's proxies unless `proxy_env = true`.
async fn client(
    entry: &ApiConfig,
    url: &str,
    reach: Reach<'_>,
) -> Result<reqwest_mcp::Client, String> {
    let mut builder = reqwest_mcp::Client::builder()
        .redirect(reqwest_mcp::redirect::Policy::none())
        .tls_backend_preconfigured(tls())
        .dns_resolver(Guarded(GuardedResolver {
            policy: reach.policy,
            proxies: reach.egress.proxy_hosts().into(),
            ..GuardedResolver::default()
        }))
        .connect_timeout(std::time::Duration::from_secs(10));
    if reach.egress.is_proxied() {
        let target = url::Url::parse(url).map_err(|e| format!("`url` is not a URL: {e}"))?;
        check_target(&target, reach.policy, &HashMap::new(), entry.proxy_resolves).await?;
    }
    builder = match reach.egress.proxy_url() {
        Some(proxy) => builder.proxy(
            reqwest_mcp::Proxy::all(proxy.as_str())
                .map_err(|e| format!("the proxy cannot be used: {e}"))?,
        ),
        // reqwest reads the environment's proxies unless told not to.
        None if reach.egress.uses_env() => builder,
        None => builder.no_proxy(),
    };
    builder
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// The token an entry's shared connection opens with, read from the environment: the
/// entry's bearer token, or the one its tools are listed with where calls carry each
/// person's own (`list_token_env`). A machine token (client credentials) is put in the
/// connection's slot by its server instead.
pub fn fixed_token(entry: &ApiConfig, source: &McpSource) -> Result<Option<String>, String> {
    let var = match &entry.auth {
        None | Some(AuthConfig::ClientCredentials { .. }) => return Ok(None),
        Some(AuthConfig::Bearer { token_env }) => token_env,
        Some(a) if a.is_per_person() => match &source.list_token_env {
            Some(v) => v,
            None => return Ok(None),
        },
        Some(_) => return Err(
            "an MCP server takes a bearer token, the client credentials grant or each person's own token".into(),
        ),
    };
    std::env::var(var)
        .map(Some)
        .map_err(|_| format!("the token's variable {var} is not set"))
}

/// The entry's literal headers.
fn headers(entry: &ApiConfig) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut headers = HashMap::new();
    for (k, v) in &entry.headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("header '{k}' is not a valid header name"))?;
        let value = HeaderValue::from_str(v)
            .map_err(|_| format!("header '{k}' has a value that is not a valid header value"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// The transport for a streamable HTTP entry, its requests carrying the token in `slot`
/// ([`Bearing`]); `Err` says what in the entry is wrong.
pub async fn transport(
    entry: &ApiConfig,
    source: &McpSource,
    reach: Reach<'_>,
    slot: Arc<TokenSlot>,
) -> Result<StreamableHttpClientTransport<Bearing>, String> {
    let url = checked_url(source, reach.policy)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.custom_headers = headers(entry)?;
    let inner = client(entry, url, reach).await?;
    Ok(StreamableHttpClientTransport::with_client(
        Bearing { inner, slot },
        config,
    ))
}

/// A plain client for `url` under the entry's reach: what its protected-resource metadata
/// is read with.
pub async fn metadata_client(
    entry: &ApiConfig,
    source: &McpSource,
    reach: Reach<'_>,
) -> Result<(reqwest_mcp::Client, String), String> {
    let url = checked_url(source, reach.policy)?;
    Ok((client(entry, url, reach).await?, url.to_string()))
}

/// The transport for an HTTP+SSE entry (2024-11-05), connected.
pub async fn sse_transport(
    entry: &ApiConfig,
    source: &McpSource,
    reach: Reach<'_>,
) -> Result<super::sse::SseTransport, String> {
    let url = checked_url(source, reach.policy)?;
    let mut map = reqwest_mcp::header::HeaderMap::new();
    for (k, v) in headers(entry)? {
        map.insert(k, v);
    }
    if let Some(token) = fixed_token(entry, source)? {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the bearer token is not a valid header value".to_string())?;
        map.insert(reqwest_mcp::header::AUTHORIZATION, value);
    }
    super::sse::SseTransport::connect(client(entry, url, reach).await?, url, map).await
}
