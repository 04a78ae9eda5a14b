//! The `[upstream]` table of a catalog config: how calls to the APIs leave the server.

use serde::Deserialize;

/// The `[upstream]` table: an egress proxy for the calls to the APIs. Without it calls go
/// directly, whatever `HTTP_PROXY`, `HTTPS_PROXY` or `ALL_PROXY` say: a proxy resolves
/// the names it is given, so the address policy (no link-local or metadata addresses, no
/// private ones on a team server) would only ever see the proxy's address. With a proxy,
/// each target's name is resolved here and every address checked before the call is
/// handed over; a name that does not resolve here is refused unless its API's entry says
/// `proxy_resolves = true`. Read when the server starts.
///
/// ```toml
/// [upstream]
/// proxy = "http://user:password@proxy.example.com:3128"   # http or https
/// # proxy_env = true     # or: the environment's HTTP(S)_PROXY, ALL_PROXY and NO_PROXY
/// ```
#[derive(Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// The proxy's URL; user info in it is sent to the proxy alone (Proxy-Authorization).
    #[serde(default)]
    pub proxy: Option<String>,
    /// Use the proxy the environment's variables name, as most HTTP clients do by default.
    #[serde(default)]
    pub proxy_env: bool,
}

/// Without the proxy's password, which must not reach a log.
impl std::fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Parsed as `vet` reads it: a proxy written without a scheme is an http one.
        let proxy = self.proxy.as_deref().map(|p| {
            let p = p.trim();
            if p.contains("://") {
                p.to_string()
            } else {
                format!("http://{p}")
            }
        });
        let proxy = proxy.as_deref().map(|p| match url::Url::parse(p) {
            Ok(mut u) if u.password().is_some() => {
                let _ = u.set_password(Some("***"));
                u.to_string()
            }
            Ok(u) => u.to_string(),
            Err(_) => "(not a URL)".to_string(),
        });
        f.debug_struct("UpstreamConfig")
            .field("proxy", &proxy)
            .field("proxy_env", &self.proxy_env)
            .finish()
    }
}
