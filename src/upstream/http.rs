//! Reaching an MCP server over streamable HTTP.
//!
//! The client follows the same rules as calls to APIs: no proxy from the environment, no
//! redirects (a server that moved is reconfigured, not followed), a bearer token read from
//! the variable the entry names, and the entry's literal headers. The URL's own
//! credentials are sent as the URL carries them and never appear in messages.

use crate::catalog::config::{ApiConfig, AuthConfig};
use crate::catalog::mcp_config::McpSource;
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

/// The transport for an HTTP entry; `Err` says what in the entry is wrong.
pub fn transport(
    entry: &ApiConfig,
    source: &McpSource,
) -> Result<StreamableHttpClientTransport<reqwest_mcp::Client>, String> {
    let url = source
        .url
        .as_deref()
        .ok_or("an HTTP MCP server needs `url`")?;
    let client = reqwest_mcp::Client::builder()
        .no_proxy()
        .redirect(reqwest_mcp::redirect::Policy::none())
        .tls_backend_preconfigured(tls())
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    match &entry.auth {
        None => {}
        Some(AuthConfig::Bearer { token_env }) => {
            let token = std::env::var(token_env)
                .map_err(|_| format!("the bearer token's variable {token_env} is not set"))?;
            config = config.auth_header(token);
        }
        Some(_) => {
            return Err(
                "an MCP server takes `auth = { kind = \"bearer\", token_env = \"...\" }` only"
                    .into(),
            )
        }
    }
    let mut headers = HashMap::new();
    for (k, v) in &entry.headers {
        let name = reqwest_mcp::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("header '{k}' is not a valid header name"))?;
        let value = reqwest_mcp::header::HeaderValue::from_str(v)
            .map_err(|_| format!("header '{k}' has a value that is not a valid header value"))?;
        headers.insert(name, value);
    }
    config.custom_headers = headers;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}
