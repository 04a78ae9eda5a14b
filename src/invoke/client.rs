//! [`Invoker`]: validates a tool call, builds the request, sends it and shapes the
//! answer. One shared `reqwest::Client` (connection pool) serves every API.
//!
//! Order of checks, cheapest and most informative first: the API's `read_only` switch,
//! argument validation, credentials from the environment, request building (URL safety),
//! then the network. Every failure becomes a [`CallOutcome`] with `is_error`, never a
//! panic or an `Err` the server has to format, and every outcome passes through the
//! [`Redactor`] holding the secrets read for this call.
//!
//! Network policy: one deadline covers connecting, sending and reading the body (default
//! 30 s, `timeout_secs` per API); redirects are followed only to the same scheme (or an
//! upgrade to https), host and port, at most 5 times; bodies are read up to a cap;
//! link-local and cloud metadata addresses are refused unless the API allows them, and on
//! a team server loopback and private ones too (see `address`). No proxy is used unless
//! the catalog config names one, and then every address of a target's name is checked
//! here before the call is handed to it (see `transport`).

use super::address::Policy;
use super::auth::{self, EnvLookup, Redactor};
use super::outcome::CallOutcome;
use super::request::{build_request, host_of, register_user_info, PreparedRequest};
use super::response::{read_capped, shape, CappedBody, Limits, ResponseContext, ResponseHead};
use super::transport::{check_target, clients, refused_literal, same_origin, Egress, EgressError};
use super::validate::validate;
use crate::catalog::config::UpstreamConfig;
use crate::catalog::{ApiConfig, AuthConfig, Endpoint, Method};
use crate::credentials::{Broker, Grant, Person, ServerSide};
use crate::store::Store;
use crate::upstream::PersonToken;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// Tunables of an [`Invoker`].
#[derive(Debug, Clone, Copy)]
pub struct InvokerOptions {
    /// Deadline for a whole call unless the API's config sets `timeout_secs`.
    pub timeout: Duration,
    /// Cap on the response body read (the rest is never downloaded).
    pub max_response_bytes: usize,
    /// Cap, in characters, on the body excerpt of an error response.
    pub error_excerpt_chars: usize,
    /// Same-host redirects followed before giving up.
    pub max_redirects: usize,
}

impl Default for InvokerOptions {
    fn default() -> Self {
        InvokerOptions {
            timeout: Duration::from_secs(30),
            max_response_bytes: 100 * 1024,
            error_excerpt_chars: 2048,
            max_redirects: 5,
        }
    }
}

/// Calls endpoints over HTTP. Cheap to clone (the connection pools are shared).
#[derive(Clone)]
pub struct Invoker {
    /// One client per address policy ([`Policy::index`]): its resolver refuses what the
    /// policy does not allow.
    http: Arc<[reqwest::Client; 4]>,
    /// Whether loopback and private addresses are refused unless an API allows them (a
    /// team server: one with an `[auth]` table).
    refuse_private: bool,
    options: InvokerOptions,
    env: Arc<EnvLookup>,
    fixed: Arc<HashMap<String, Vec<IpAddr>>>,
    /// Directly, or through the configured proxy.
    egress: Arc<Egress>,
    /// Tokens obtained at run time (OAuth grants), with the same secret lookup.
    broker: Arc<Broker>,
    /// What the broker was told of the server (kept for a new secret lookup).
    server: ServerSide,
    /// The catalog's MCP servers, which calls to their tools go to.
    upstreams: Option<Arc<crate::upstream::Upstreams>>,
}

/// Who a call is made for, and where per-person tokens live.
#[derive(Clone, Copy, Default)]
pub struct CallFor<'a> {
    /// The verified person (`None`: stdio, the CLI, a server without `[auth]`).
    pub person: Option<&'a Person>,
    pub store: Option<&'a Store>,
    /// The OAuth client the person came through (recorded with a consent they are asked
    /// for).
    pub client_id: Option<&'a str>,
    /// Where the call's progress and an upstream's questions go, when the person's client
    /// can take them (MCP servers' tools; an HTTP API has neither).
    pub hooks: Option<&'a crate::upstream::CallHooks>,
}

/// What [`Invoker::call_for`] came to.
#[derive(Debug)]
pub enum Called {
    /// The call ran (or failed readably).
    Done(CallOutcome),
    /// The API needs the person's consent first: they open `link`, then call again.
    Consent {
        api: String,
        link: String,
        state: String,
    },
}

impl std::fmt::Debug for Invoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invoker")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Invoker {
    /// An invoker with default options, reading credentials from the process environment.
    pub fn new() -> Result<Invoker, reqwest::Error> {
        Invoker::with_options(InvokerOptions::default())
    }

    /// An invoker with these options.
    pub fn with_options(options: InvokerOptions) -> Result<Invoker, reqwest::Error> {
        let fixed = Arc::new(HashMap::new());
        let env: Arc<EnvLookup> = Arc::new(auth::process_env);
        let egress = Arc::new(Egress::default());
        Ok(Invoker {
            http: clients(options.max_redirects, &fixed, &egress)?,
            egress,
            refuse_private: false,
            options,
            broker: Arc::new(Broker::new(Arc::clone(&env), ServerSide::default())),
            server: ServerSide::default(),
            env,
            fixed,
            upstreams: None,
        })
    }

    /// Tells the broker where the server is and what it offers browsers: consent pages
    /// and the OAuth callback under its public URL, the issuer whose token endpoint may
    /// receive people's tokens.
    pub fn with_server(mut self, server: ServerSide) -> Invoker {
        // A server that knows its people is a team server, inside an organisation's
        // network: private addresses only where an API's entry allows them.
        self.refuse_private = server.issuer.is_some();
        self.server = server.clone();
        self.broker = Arc::new(Broker::new(Arc::clone(&self.env), server));
        self
    }

    /// A call's time limit: the API's `timeout_secs`, else the invoker's.
    fn timeout_for(&self, cfg: Option<&ApiConfig>) -> Duration {
        cfg.and_then(|c| c.timeout_secs)
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
            .unwrap_or(self.options.timeout)
    }

    /// The same invoker, calling MCP tools on these servers.
    pub fn with_upstreams(mut self, upstreams: Arc<crate::upstream::Upstreams>) -> Invoker {
        self.upstreams = Some(upstreams);
        self
    }

    /// The catalog's MCP servers, when it has any.
    pub fn upstreams(&self) -> Option<&Arc<crate::upstream::Upstreams>> {
        self.upstreams.as_ref()
    }

    /// The broker that obtains OAuth tokens (the OAuth callback and disconnects use it).
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// Resolves these host names to these addresses instead of asking the system (tests
    /// use it to give a name a link-local address); the address policy applies to them as
    /// to any other answer.
    pub fn with_fixed_addresses(
        mut self,
        fixed: HashMap<String, Vec<IpAddr>>,
    ) -> Result<Invoker, reqwest::Error> {
        self.fixed = Arc::new(fixed);
        self.http = clients(self.options.max_redirects, &self.fixed, &self.egress)?;
        Ok(self)
    }

    /// Sends calls the way the catalog config's `[upstream]` table says: directly, or
    /// through its proxy, each target checked here first.
    pub fn with_upstream(mut self, cfg: &UpstreamConfig) -> Result<Invoker, EgressError> {
        let egress = Egress::from_config(cfg)?;
        tracing::info!("calls to APIs go {}", egress.describe());
        self.http = clients(self.options.max_redirects, &self.fixed, &egress)?;
        self.egress = Arc::new(egress);
        Ok(self)
    }

    /// Refuses loopback and private addresses unless an API's entry allows them, as a
    /// team server does (tests of the policy without a whole server).
    pub fn refusing_private(mut self) -> Invoker {
        self.refuse_private = true;
        self
    }

    /// Replaces where credentials are looked up (tests, or a secrets manager).
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Invoker {
        self.env = Arc::new(lookup);
        self.broker = Arc::new(Broker::new(Arc::clone(&self.env), self.server.clone()));
        self
    }

    /// The options in use.
    pub fn options(&self) -> &InvokerOptions {
        &self.options
    }

    /// Calls `ep` with the tool call's `args`. `api_cfg` is the API's catalog config entry
    /// (base URL, credentials, read-only switch, timeout), if it has one.
    pub async fn call(
        &self,
        ep: &Endpoint,
        api_cfg: Option<&ApiConfig>,
        args: &Map<String, Value>,
    ) -> CallOutcome {
        match self.call_for(ep, api_cfg, args, CallFor::default()).await {
            Called::Done(outcome) => outcome,
            Called::Consent { api, link, .. } => CallOutcome::error(format!(
                "API '{api}' needs your consent first: open {link} and call again"
            )),
        }
    }

    /// Calls `ep` for a person: the same as [`Invoker::call`], with the person's own
    /// token for APIs whose credentials are per person. A token the API refuses (`401`)
    /// is forgotten and the call made once more with a fresh one.
    pub async fn call_for(
        &self,
        ep: &Endpoint,
        api_cfg: Option<&ApiConfig>,
        args: &Map<String, Value>,
        who: CallFor<'_>,
    ) -> Called {
        // An MCP server's own settings may come from its metadata; its machine tokens are
        // its connection's business, so only each person's own are obtained here.
        let resolved = match self.mcp_auth(ep, api_cfg).await {
            Ok(a) => a,
            Err(e) => return Called::Done(CallOutcome::refused("token", e)),
        };
        let obtained = resolved
            .as_ref()
            .or_else(|| api_cfg.and_then(|c| c.auth.as_ref()))
            .filter(|a| a.is_obtained() && (ep.mcp.is_none() || a.is_per_person()));
        let mut retried = false;
        loop {
            let token = match obtained {
                Some(auth) => match self
                    .broker
                    .grant(&ep.api, auth, who.person, who.client_id, who.store)
                    .await
                {
                    Ok(Grant::Token(t)) => Some(t),
                    Ok(Grant::Consent { link, state }) => {
                        return Called::Consent {
                            api: ep.api.clone(),
                            link,
                            state,
                        }
                    }
                    Err(e) => return Called::Done(CallOutcome::refused("token", e)),
                },
                None => None,
            };
            let mut redactor = Redactor::default();
            if let Some(t) = &token {
                // Masked in this call's result, and in the logs only while it is good: a
                // person's token is no business of anyone else's call, and a list of
                // every token ever obtained would only grow.
                redactor.add_until(&t.value, t.good_until);
            }
            let outcome = self
                .run(
                    ep,
                    api_cfg,
                    args,
                    token.as_ref().map(|t| PersonToken {
                        sub: who.person.map(|p| p.sub.as_str()).unwrap_or_default(),
                        token: t.value.as_str(),
                    }),
                    &mut redactor,
                    who.hooks,
                )
                .await;
            if let (Some(auth), Some(401), false) = (obtained, outcome.status, retried) {
                tracing::info!(api = %ep.api, "the API refused an obtained token; getting a fresh one");
                self.broker
                    .refused(&ep.api, auth, who.person, who.store)
                    .await;
                retried = true;
                continue;
            }
            if outcome.is_error {
                tracing::debug!(tool = %ep.tool_name, status = ?outcome.status, "call failed");
            }
            return Called::Done(outcome.redacted(&redactor));
        }
    }

    /// For a tool of an MCP server whose calls carry each person's token, the credential
    /// settings with what the entry left out read from the server's metadata.
    async fn mcp_auth(
        &self,
        ep: &Endpoint,
        cfg: Option<&ApiConfig>,
    ) -> Result<Option<AuthConfig>, String> {
        let (Some(tool), Some(upstreams)) = (&ep.mcp, &self.upstreams) else {
            return Ok(None);
        };
        if !cfg
            .and_then(|c| c.auth.as_ref())
            .is_some_and(AuthConfig::is_per_person)
        {
            return Ok(None);
        }
        upstreams.auth_for(&tool.server).await
    }

    /// Reads MCP server `api`'s metadata now if its entry left settings out and they were
    /// not read yet: a consent started on another replica (or before a restart) completes
    /// here with the settings the call was made with.
    pub async fn discover_auth(&self, api: &str) {
        if let Some(u) = &self.upstreams {
            if let Err(e) = u.auth_for(api).await {
                tracing::debug!(api, "no MCP server settings read: {e}");
            }
        }
    }

    /// The credential settings of `api` as calls use them: an MCP server's as read from its
    /// metadata where its entry left something out ([`Invoker::discover_auth`]), else
    /// `configured`. What a consent that a call started is completed with.
    pub fn auth_of(&self, api: &str, configured: Option<AuthConfig>) -> Option<AuthConfig> {
        self.upstreams
            .as_ref()
            .and_then(|u| u.resolved_auth(api))
            .or(configured)
    }

    async fn run(
        &self,
        ep: &Endpoint,
        cfg: Option<&ApiConfig>,
        args: &Map<String, Value>,
        token: Option<PersonToken<'_>>,
        redactor: &mut Redactor,
        hooks: Option<&crate::upstream::CallHooks>,
    ) -> CallOutcome {
        if cfg.is_some_and(|c| c.read_only)
            && !matches!(ep.method, Method::Get | Method::Head | Method::Options)
        {
            return CallOutcome::refused("read_only", format!(
                "refused: API '{}' is configured read_only, so {} is not called (only GET, HEAD and OPTIONS are allowed)",
                ep.api,
                ep.key()
            ));
        }
        let valid = match validate(ep, args) {
            Ok(v) => v,
            Err(e) => return CallOutcome::refused("invalid_arguments", e.to_string()),
        };
        if ep.mcp.is_some() {
            return super::mcp::call(
                self.upstreams.as_deref(),
                ep,
                &valid,
                self.timeout_for(cfg),
                self.options.max_response_bytes,
                hooks.cloned().unwrap_or_default(),
                token.filter(|t| !t.sub.is_empty()),
            )
            .await;
        }
        let creds = match auth::resolve(
            cfg.and_then(|c| c.auth.as_ref()),
            &ep.api,
            self.env.as_ref(),
            token.map(|t| t.token),
            redactor,
        ) {
            Ok(c) => c,
            Err(e) => return CallOutcome::refused("credentials", e),
        };
        // User info in the base URL is a credential too (sent as basic auth).
        if let Some(raw) = cfg
            .and_then(|c| c.base_url.as_deref())
            .or_else(|| ep.servers.first().map(String::as_str))
        {
            register_user_info(raw, redactor);
        }
        let req = match build_request(ep, cfg, &valid, &creds) {
            Ok(r) => r,
            Err(e) => return CallOutcome::refused("request", e),
        };
        let policy = Policy {
            link_local: cfg.is_some_and(|c| c.allow_link_local),
            private: !self.refuse_private || cfg.is_some_and(|c| c.allow_private),
        };
        if let Some(refusal) = refused_literal(&req.url, policy) {
            return CallOutcome::refused("address", format!("{refusal} (API '{}')", ep.api));
        }
        let timeout = self.timeout_for(cfg);
        if self.egress.is_proxied() {
            self.egress.mask_secrets(redactor);
            let resolves = cfg.is_some_and(|c| c.proxy_resolves);
            let checked = check_target(&req.url, policy, &self.fixed, resolves);
            let refusal = match tokio::time::timeout(timeout, checked).await {
                Ok(Ok(())) => None,
                Ok(Err(refusal)) => Some(refusal),
                Err(_) => Some(format!(
                    "refusing to send {} to the proxy: resolving it here took over {}",
                    host_of(&req.url),
                    seconds(timeout)
                )),
            };
            if let Some(refusal) = refusal {
                return CallOutcome::refused("address", format!("{refusal} (API '{}')", ep.api));
            }
        }
        let auth_hint = (cfg.and_then(|c| c.auth.as_ref()).is_none() && !ep.security.is_empty()).then(|| {
            format!(
                "hint: this endpoint declares authentication, but no `auth` is configured for API '{}' in the catalog config",
                ep.api
            )
        });
        tracing::debug!(tool = %ep.tool_name, method = %req.method, url = %req.display_url, "calling upstream");
        let method = req.method.as_str();
        let display_url = req.display_url.clone();
        let span = crate::telemetry::trace::upstream_span(
            &ep.api,
            method,
            &ep.path,
            req.url.host_str().unwrap_or_default(),
        );
        let started = std::time::Instant::now();
        let exchanged = tokio::time::timeout(timeout, self.exchange(req, policy));
        let answered = tracing::Instrument::instrument(exchanged, span.clone()).await;
        let status = match &answered {
            Ok(Ok((head, _))) => Some(head.status.as_u16()),
            _ => None,
        };
        crate::telemetry::metrics::upstream(&ep.api, status, started.elapsed());
        match status {
            Some(s) => {
                span.record("http.response.status_code", s);
                if s >= 500 {
                    crate::telemetry::trace::mark_error(&span);
                }
            }
            None => crate::telemetry::trace::mark_error(&span),
        }
        match answered {
            Err(_) => CallOutcome::error(format!(
                "upstream timed out after {} calling {method} {display_url}",
                seconds(timeout)
            )),
            Ok(Err(e)) => {
                let mut msg = describe_error(&e, method, &display_url);
                // Through a proxy, a connection that failed may be the proxy's: say which
                // way the call went (never the proxy's credentials).
                if e.is_connect() && self.egress.is_proxied() {
                    msg.push_str(&format!(" ({})", self.egress.describe()));
                }
                // A name that resolved only to refused addresses never left either.
                if msg.contains("refusing to connect to") {
                    CallOutcome::refused("address", msg)
                } else {
                    CallOutcome::error(msg)
                }
            }
            Ok(Ok((head, body))) => {
                let ctx = ResponseContext {
                    method,
                    display_url: &display_url,
                    limits: Limits {
                        max_bytes: self.options.max_response_bytes,
                        excerpt_chars: self.options.error_excerpt_chars,
                        max_redirects: self.options.max_redirects,
                    },
                    redactor,
                    auth_hint,
                };
                shape(&head, body, &ctx)
            }
        }
    }

    /// Sends the request and reads the capped body.
    async fn exchange(
        &self,
        req: PreparedRequest,
        policy: Policy,
    ) -> Result<(ResponseHead, CappedBody), reqwest::Error> {
        let method = reqwest::Method::from_bytes(req.method.as_str().as_bytes())
            .unwrap_or(reqwest::Method::GET);
        let request_url = req.url.clone();
        let http = &self.http[policy.index()];
        let mut builder = http.request(method, req.url);
        for (name, value) in req.headers {
            builder = builder.header(name, value);
        }
        if let Some(b) = req.body {
            builder = builder.body(b.bytes);
        }
        // The trace this request belongs to, when spans are exported (W3C traceparent).
        builder = builder.headers(crate::telemetry::trace::context_headers());
        let mut resp = builder.send().await?;
        let final_url = resp.url().clone();
        let location = resp
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| final_url.join(l).ok());
        let head = ResponseHead {
            status: resp.status(),
            content_type: resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            location_same_origin: location
                .as_ref()
                .is_some_and(|l| same_origin(&request_url, l)),
            location: location.map(|l| l.to_string()),
        };
        let body = read_capped(&mut resp, self.options.max_response_bytes).await?;
        Ok((head, body))
    }
}

/// A readable transport error. The URL reqwest would quote (query and all) is left out;
/// the caller's display URL has no query.
fn describe_error(e: &reqwest::Error, method: &str, display_url: &str) -> String {
    let host = Url::parse(display_url)
        .map(|u| host_of(&u))
        .unwrap_or_default();
    let cause = causes(e);
    if e.is_timeout() {
        format!("upstream timed out calling {method} {display_url}: {cause}")
    } else if e.is_connect() {
        format!("could not connect to {host} calling {method} {display_url}: {cause}")
    } else if e.is_body() || e.is_decode() {
        format!("reading the response of {method} {display_url} failed: {cause}")
    } else {
        format!("request failed calling {method} {display_url}: {cause}")
    }
}

/// The error's source chain, each distinct message once, without reqwest's URL suffix.
fn causes(e: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    parts.push(strip_url(&e.to_string()));
    while let Some(err) = cur {
        let msg = err.to_string();
        if !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// reqwest formats errors as `<kind> for url (<url>)`; the URL may carry an API key.
fn strip_url(msg: &str) -> String {
    match msg.find(" for url (") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// `30 s`, or `1.5 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoke::args::tests::endpoint;

    /// The server spawns calls on a multi-threaded runtime, so the future must be `Send`.
    #[test]
    fn call_future_is_send() {
        fn is_send<T: Send>(_: &T) {}
        let inv = Invoker::new().expect("client");
        let ep = endpoint(Method::Get, "/x", vec![]);
        let args = Map::new();
        let fut = inv.call(&ep, None, &args);
        is_send(&fut);
    }

    #[test]
    fn reqwest_url_suffix_is_stripped() {
        assert_eq!(
            strip_url("error sending request for url (http://h/x?api_key=k)"),
            "error sending request"
        );
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
