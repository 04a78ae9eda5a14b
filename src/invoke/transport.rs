//! How calls leave the host: the HTTP clients, directly or through an egress proxy.
//!
//! The address policy ([`address`]) checks the address a call connects to. Through a
//! proxy that is the proxy's address: the proxy resolves the target's name and connects,
//! and the policy would see nothing of it. So no proxy is used unless the catalog config
//! names one (`[upstream]`): `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY` are ignored by
//! default, and with a proxy configured, [`check_target`] resolves the target's name here
//! and checks every address before the call is handed over (a name that does not resolve
//! here is refused unless the API's entry says `proxy_resolves = true`). The proxy's own
//! address may be private, never link-local or a metadata service's. Its credentials go in
//! `Proxy-Authorization` to the proxy alone, and are masked in results and logs.
//!
//! A name the proxy resolves again may answer differently than here (DNS rebinding): the
//! check narrows what a spec can reach through a proxy; the proxy's own rules still
//! decide where it connects.

use super::address::{self, GuardedResolver, Policy};
use super::redact::{register_secret_for_logs, Redactor};
use crate::catalog::config::UpstreamConfig;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use url::Url;

/// Variables that name proxies when `proxy_env = true` (the ones HTTP clients read).
const PROXY_VARS: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// A proxy setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("[upstream] {0}")]
    Config(String),
    #[error("cannot create the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// Where calls go: directly (the default), or through a proxy.
#[derive(Clone, Default)]
pub struct Egress {
    /// The configured proxy (user info included: reqwest sends it to the proxy alone).
    proxy: Option<Url>,
    /// The environment's proxies (`proxy_env = true`).
    from_env: bool,
    /// The proxies' host names (their addresses are checked as a proxy's).
    hosts: Vec<String>,
    /// The proxies' credentials, in the spellings that could show up in text.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("proxy", &self.proxy.as_ref().map(without_user_info))
            .field("from_env", &self.from_env)
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// The egress the `[upstream]` table asks for, with its proxies' addresses vetted.
    pub fn from_config(cfg: &UpstreamConfig) -> Result<Egress, EgressError> {
        let mut egress = Egress::default();
        match (&cfg.proxy, cfg.proxy_env) {
            (Some(_), true) => {
                return Err(EgressError::Config(
                    "set either `proxy` or `proxy_env = true`, not both".into(),
                ))
            }
            (Some(raw), false) => {
                let url = egress.vet(raw, "proxy")?;
                egress.proxy = Some(url);
            }
            (None, true) => {
                for var in PROXY_VARS {
                    if let Some(raw) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
                        egress.vet(&raw, var)?;
                    }
                }
                egress.from_env = true;
            }
            (None, false) => {}
        }
        Ok(egress)
    }

    /// Whether calls may go through a proxy (then targets are checked before they leave).
    pub fn is_proxied(&self) -> bool {
        self.proxy.is_some() || self.from_env
    }

    /// The configured proxy, user info included (for an HTTP client's proxy setting only).
    pub fn proxy_url(&self) -> Option<&Url> {
        self.proxy.as_ref()
    }

    /// Whether the environment's proxies are used (`proxy_env = true`).
    pub fn uses_env(&self) -> bool {
        self.from_env
    }

    /// The proxies' host names, whose addresses are checked as a proxy's.
    pub fn proxy_hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The proxy for logs: no user info.
    pub fn describe(&self) -> String {
        match (&self.proxy, self.from_env) {
            (Some(u), _) => format!("through the proxy at {}", without_user_info(u)),
            (None, true) => "through the environment's proxies".into(),
            (None, false) => "directly".into(),
        }
    }

    /// Masks the proxies' credentials in a call's result.
    pub fn mask_secrets(&self, redactor: &mut Redactor) {
        for s in &self.secrets {
            redactor.add_local(s);
        }
    }

    /// Parses a proxy URL, refuses one on a link-local or metadata address, and notes its
    /// host and credentials.
    fn vet(&mut self, raw: &str, key: &str) -> Result<Url, EgressError> {
        let raw = raw.trim();
        let with_scheme = if raw.contains("://") {
            raw.to_string()
        } else {
            format!("http://{raw}")
        };
        let url = Url::parse(&with_scheme)
            .map_err(|e| EgressError::Config(format!("`{key}` is not a proxy URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(EgressError::Config(format!(
                "`{key}`: only http and https proxies are supported, not {}",
                url.scheme()
            )));
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
            Some(url::Host::Domain(d)) => {
                self.hosts.push(d.to_ascii_lowercase());
                None
            }
            None => {
                return Err(EgressError::Config(format!("`{key}` names no proxy host")));
            }
        };
        if let Some(why) = ip.and_then(address::refused) {
            return Err(EgressError::Config(format!(
                "refusing the proxy at {}: it is {why}, which no call may go through",
                without_user_info(&url)
            )));
        }
        let user = percent(url.username());
        if let Some(password) = url.password() {
            for secret in [
                password.to_string(),
                percent(password),
                format!("{user}:{}", percent(password)),
            ] {
                register_secret_for_logs(&secret);
                self.secrets.push(secret);
            }
        }
        Ok(url)
    }
}

/// `text` percent-decoded (user info in a URL is kept encoded).
fn percent(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The URL without user name or password.
fn without_user_info(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// Checks, before a call is handed to a proxy, every address the target's name has here:
/// the proxy will pick one itself, so one refused address refuses the call. A name that
/// does not resolve here is refused unless `proxy_resolves`.
pub async fn check_target(
    url: &Url,
    policy: Policy,
    fixed: &HashMap<String, Vec<IpAddr>>,
    proxy_resolves: bool,
) -> Result<(), String> {
    let Some(url::Host::Domain(host)) = url.host() else {
        // IP literals are checked before any call, proxy or not.
        return Ok(());
    };
    if policy == Policy::ANY {
        // An entry that allows every address has nothing to check.
        return Ok(());
    }
    let addrs: Vec<IpAddr> = match fixed.get(host) {
        Some(ips) => ips.clone(),
        None => {
            match tokio::net::lookup_host((host, url.port_or_known_default().unwrap_or(80))).await {
                Ok(found) => found.map(|a| a.ip()).collect(),
                Err(_) => Vec::new(),
            }
        }
    };
    if addrs.is_empty() {
        if proxy_resolves {
            return Ok(());
        }
        return Err(format!(
            "refusing to send {host} to the proxy: it does not resolve here, so its addresses cannot be checked; an API whose names only the proxy's network knows needs `proxy_resolves = true` in its catalog config entry"
        ));
    }
    for ip in addrs {
        if let Some(why) = address::refused_by(ip, policy) {
            return Err(address::refusal(ip, host, why));
        }
    }
    Ok(())
}

/// The four HTTP clients, one per address policy, following at most `max_redirects`
/// same-origin redirects.
pub fn clients(
    max_redirects: usize,
    fixed: &Arc<HashMap<String, Vec<IpAddr>>>,
    egress: &Egress,
) -> Result<Arc<[reqwest::Client; 4]>, reqwest::Error> {
    let policy = |i: usize| Policy {
        link_local: i & 1 == 1,
        private: i & 2 == 2,
    };
    Ok(Arc::new([
        client(max_redirects, policy(0), fixed, egress)?,
        client(max_redirects, policy(1), fixed, egress)?,
        client(max_redirects, policy(2), fixed, egress)?,
        client(max_redirects, policy(3), fixed, egress)?,
    ]))
}

/// One HTTP client: same-origin redirects only, names resolved through the address
/// policy, the environment's proxies ignored unless asked for.
fn client(
    max: usize,
    policy: Policy,
    fixed: &Arc<HashMap<String, Vec<IpAddr>>>,
    egress: &Egress,
) -> Result<reqwest::Client, reqwest::Error> {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            let same = attempt
                .previous()
                .first()
                .is_some_and(|first| same_origin(first, attempt.url()));
            if let Some(refusal) = refused_literal(attempt.url(), policy) {
                return attempt.error(refusal);
            }
            if same && attempt.previous().len() <= max {
                attempt.follow()
            } else {
                // Stopping hands the 3xx back, and `shape` says why it was not followed.
                attempt.stop()
            }
        }))
        .dns_resolver(Arc::new(GuardedResolver {
            policy,
            fixed: Arc::clone(fixed),
            proxies: egress.hosts.clone().into(),
        }))
        .user_agent(concat!("shortlist/", env!("CARGO_PKG_VERSION")));
    if !egress.from_env {
        builder = builder.no_proxy();
    }
    if let Some(proxy) = &egress.proxy {
        builder = builder.proxy(reqwest::Proxy::all(proxy.as_str())?);
    }
    builder.build()
}

/// The refusal for a URL whose host is an IP literal the policy refuses (names are
/// checked when resolved).
pub fn refused_literal(url: &Url, policy: Policy) -> Option<String> {
    let ip = match url.host()? {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(_) => return None,
    };
    address::refused_by(ip, policy).map(|why| address::refusal(ip, &ip.to_string(), why))
}

/// Whether a redirect from `from` to `to` stays on the same host and port, and does not
/// downgrade https to http. Upgrading http to https on the default ports is allowed
/// (`http://api.example` -> `https://api.example` is the most common redirect there is).
pub fn same_origin(from: &Url, to: &Url) -> bool {
    let upgrade = from.scheme() == "http" && to.scheme() == "https";
    let same_port = from.port_or_known_default() == to.port_or_known_default()
        || (upgrade && from.port().is_none() && to.port().is_none());
    from.host_str() == to.host_str() && same_port && (from.scheme() == to.scheme() || upgrade)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_origin_allows_only_same_host_port_and_no_downgrade() {
        let u = |s: &str| Url::parse(s).expect("url");
        assert!(same_origin(&u("http://a:80/x"), &u("http://a/y")));
        assert!(same_origin(&u("http://a/x"), &u("https://a/y")));
        assert!(!same_origin(&u("https://a/x"), &u("http://a:443/y")));
        assert!(!same_origin(&u("http://a/x"), &u("http://b/x")));
        assert!(!same_origin(&u("http://a:8080/x"), &u("http://a:8081/x")));
    }

    #[test]
    fn a_proxy_is_described_without_its_credentials() {
        let e = Egress::from_config(&UpstreamConfig {
            proxy: Some("http://me:pa%24s@proxy.example:3128".into()),
            ..Default::default()
        })
        .expect("egress");
        assert_eq!(
            e.describe(),
            "through the proxy at http://proxy.example:3128/"
        );
        assert!(!format!("{e:?}").contains("pa%24s"), "{e:?}");
        let mut r = Redactor::default();
        e.mask_secrets(&mut r);
        assert!(!r.redact("Basic bWU6cGEkcw==").contains("bWU6cGEkcw"));
        assert!(Egress::from_config(&UpstreamConfig {
            proxy: Some("socks5://proxy.example".into()),
            ..Default::default()
        })
        .is_err());
    }
}
