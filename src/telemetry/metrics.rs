//! Prometheus metrics: what a platform team watches a replica by.
//!
//! Call sites record through the `metrics` facade (the way they log through `tracing`), so
//! a layer such as `invoke` needs no handle passed down to it; until [`install`] sets the
//! recorder (`shortlist serve` does, at start) every record is a no-op. `/metrics` renders
//! the recorder in the Prometheus text format ([`render`]).
//!
//! Labels are bounded and never name a person, a secret or free text: the MCP method is
//! one of the protocol's names ([`mcp_method`]), an API is a catalog id (per-API labels are
//! why `/metrics` is for admins only: a person must not learn of an API hidden from them),
//! a token kind and a store operation are fixed words.

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Duration;

/// MCP requests by `method` (the protocol's name, or `other`) and `result` (`ok`, `error`
/// for a JSON-RPC error, `tool_error` for a tool result with `isError`).
pub const MCP_REQUESTS: &str = "shortlist_mcp_requests_total";
/// `find_tools` answers, from arguments to ranked answer (histogram, seconds).
pub const FIND_TOOLS_DURATION: &str = "shortlist_find_tools_duration_seconds";
/// Ranked `find_tools` answers by `matched`: `true`, `false` (nothing in the catalog
/// seemed to fit the request) or `unjudged` (lexical retrieval). Never the request's text.
pub const FIND_TOOLS_ANSWERS: &str = "shortlist_find_tools_answers_total";
/// Upstream API requests by `api` and `status` class (`2xx` … `5xx`, `error` when no
/// response came: refused connection, timeout).
pub const UPSTREAM_REQUESTS: &str = "shortlist_upstream_requests_total";
/// Upstream API request latency by `api` (histogram, seconds).
pub const UPSTREAM_DURATION: &str = "shortlist_upstream_request_duration_seconds";
/// Requests to token endpoints by `kind` (`client_credentials`, `token_exchange`,
/// `authorization_code`, `refresh_token`, `other`) and `result` (`granted`, `failed`).
pub const TOKEN_REQUESTS: &str = "shortlist_token_requests_total";
/// State store operations that failed or timed out, by `operation`.
pub const STORE_ERRORS: &str = "shortlist_state_store_errors_total";
/// Catalog reloads by `result` (`ok`, `failed`).
pub const RELOADS: &str = "shortlist_catalog_reloads_total";
/// Catalog reload duration, rebuild and swap (histogram, seconds).
pub const RELOAD_DURATION: &str = "shortlist_catalog_reload_duration_seconds";
/// Endpoints of the catalog now served (gauge).
pub const ENDPOINTS_SERVED: &str = "shortlist_endpoints_served";
/// APIs of the catalog now served (gauge).
pub const APIS_SERVED: &str = "shortlist_apis_served";
/// Consent pages refused for asking too fast, by `scope` (`client`: one client's limit,
/// `global`: the replica's ceiling).
pub const CONSENT_PAGES_LIMITED: &str = "shortlist_consent_pages_limited_total";
/// Redirects back from an authorization server to `/oauth/callback`, by `result`
/// ([`OAUTH_CALLBACK_RESULTS`]); `unknown_state` names no pending consent, and leaves no
/// audit row (anyone can send one).
pub const OAUTH_CALLBACKS: &str = "shortlist_oauth_callbacks_total";
/// Counter: calls to upstream MCP servers' tools, by `server` and `result` (`ok`,
/// `tool_error` for a result with `isError`, `error` when no result came).
pub const MCP_UPSTREAM_CALLS: &str = "shortlist_mcp_upstream_calls_total";
/// Histogram: the time of a call to an upstream MCP server's tool, by `server`.
pub const MCP_UPSTREAM_DURATION: &str = "shortlist_mcp_upstream_call_duration_seconds";
/// Gauge: the catalog's MCP servers by `state` (running, starting, backing_off, ...).
pub const MCP_SERVERS: &str = "shortlist_mcp_servers";
/// Gauge: tools an MCP server lists that are held for review, by `server`.
pub const MCP_TOOLS_HELD: &str = "shortlist_mcp_tools_held";
/// Gauge: connections to MCP servers that carry one person's own token.
pub const MCP_PERSONAL_CONNECTIONS: &str = "shortlist_mcp_personal_connections";
/// Gauge: calls of 2026-07-28 clients parked until the person answers an upstream's question.
pub const MCP_PARKED_CALLS: &str = "shortlist_mcp_parked_calls";

/// Histogram buckets in seconds: a ranked answer takes milliseconds, an upstream call up to
/// its timeout, a reload of a large catalog minutes.
const BUCKETS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The MCP methods a request may be counted under; anything else is `other`, so a client
/// cannot grow the label set by inventing methods.
const MCP_METHODS: [&str; 22] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/list",
    "skills/list",
    "skills/get",
];

/// What a callback came to.
pub const OAUTH_CALLBACK_RESULTS: [&str; 7] = [
    "given",
    "declined",
    "refused",
    "not_stored",
    "not_the_browser",
    "unknown_state",
    "malformed",
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Sets the process's recorder, once; later calls do nothing. `Err` when another
/// recorder was set first.
pub fn install() -> anyhow::Result<()> {
    if HANDLE.get().is_some() {
        return Ok(());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)
        .map_err(|e| anyhow::anyhow!("metrics buckets: {e}"))?
        .install_recorder()
        .map_err(|e| anyhow::anyhow!("cannot install the metrics recorder: {e}"))?;
    let _ = HANDLE.set(handle);
    describe();
    Ok(())
}

/// The metrics in the Prometheus text format; `None` when no recorder was installed.
pub fn render() -> Option<String> {
    let h = HANDLE.get()?;
    h.run_upkeep();
    Some(h.render())
}

fn describe() {
    describe_counter!(MCP_REQUESTS, "MCP requests by method and result");
    describe_histogram!(
        FIND_TOOLS_DURATION,
        metrics::Unit::Seconds,
        "find_tools answer time"
    );
    describe_counter!(
        FIND_TOOLS_ANSWERS,
        "ranked find_tools answers by whether anything fit the request"
    );
    describe_counter!(
        UPSTREAM_REQUESTS,
        "upstream API requests by API and status class"
    );
    describe_histogram!(
        UPSTREAM_DURATION,
        metrics::Unit::Seconds,
        "upstream API request latency by API"
    );
    describe_counter!(
        TOKEN_REQUESTS,
        "token endpoint requests by grant kind and result"
    );
    describe_counter!(STORE_ERRORS, "state store operations that failed");
    describe_counter!(RELOADS, "catalog reloads by result");
    describe_histogram!(
        RELOAD_DURATION,
        metrics::Unit::Seconds,
        "catalog reload duration"
    );
    describe_gauge!(ENDPOINTS_SERVED, "endpoints of the catalog served");
    describe_gauge!(APIS_SERVED, "APIs of the catalog served");
    describe_counter!(
        CONSENT_PAGES_LIMITED,
        "consent pages refused for asking too fast, by scope"
    );
    describe_counter!(OAUTH_CALLBACKS, "OAuth consent callbacks by result");
    describe_counter!(
        MCP_UPSTREAM_CALLS,
        "calls to upstream MCP servers' tools by server and result"
    );
    describe_histogram!(
        MCP_UPSTREAM_DURATION,
        metrics::Unit::Seconds,
        "upstream MCP tool call latency by server"
    );
    describe_gauge!(MCP_SERVERS, "the catalog's MCP servers by state");
    describe_gauge!(MCP_TOOLS_HELD, "MCP tools held for review, by server");
    describe_gauge!(
        MCP_PERSONAL_CONNECTIONS,
        "connections to MCP servers carrying one person's own token"
    );
    describe_gauge!(
        MCP_PARKED_CALLS,
        "calls waiting for a person's answer to an upstream's question"
    );
}

/// The personal connections open and the calls parked for an answer, as scraped.
pub fn mcp_waiting(personal: usize, parked: usize) {
    gauge!(MCP_PERSONAL_CONNECTIONS).set(personal as f64);
    gauge!(MCP_PARKED_CALLS).set(parked as f64);
}

/// One call to an upstream MCP server's tool: `Some(is_error)` when it answered.
pub fn mcp_upstream_call(server: &str, answered: Option<bool>, took: Duration) {
    let result = match answered {
        Some(false) => "ok",
        Some(true) => "tool_error",
        None => "error",
    };
    counter!(MCP_UPSTREAM_CALLS, "server" => server.to_string(), "result" => result).increment(1);
    histogram!(MCP_UPSTREAM_DURATION, "server" => server.to_string()).record(took.as_secs_f64());
}

/// The MCP servers' states and held tools, as the server sees them now (set before each
/// scrape: they are read, not counted).
pub fn mcp_servers(
    states: &std::collections::BTreeMap<&'static str, usize>,
    held: &[(String, usize)],
) {
    for (state, n) in states {
        gauge!(MCP_SERVERS, "state" => *state).set(*n as f64);
    }
    for (server, n) in held {
        gauge!(MCP_TOOLS_HELD, "server" => server.clone()).set(*n as f64);
    }
}

/// The label of an MCP method: the protocol's name, or `other`.
pub fn mcp_method(method: &str) -> &'static str {
    MCP_METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// One MCP request answered.
pub fn mcp_request(method: &str, result: &'static str) {
    counter!(MCP_REQUESTS, "method" => mcp_method(method), "result" => result).increment(1);
}

/// One `find_tools` answer.
pub fn find_tools(took: Duration) {
    histogram!(FIND_TOOLS_DURATION).record(took.as_secs_f64());
}

/// Counts a ranked `find_tools` answer by its judgement (`None`: not judged).
pub fn find_tools_answer(matched: Option<bool>) {
    let label = match matched {
        Some(true) => "true",
        Some(false) => "false",
        None => "unjudged",
    };
    counter!(FIND_TOOLS_ANSWERS, "matched" => label).increment(1);
}

/// One upstream request of `api`: its status, or `None` when no response came.
pub fn upstream(api: &str, status: Option<u16>, took: Duration) {
    let class = match status {
        Some(100..=199) => "1xx",
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(500..=599) => "5xx",
        Some(_) | None => "error",
    };
    counter!(UPSTREAM_REQUESTS, "api" => api.to_string(), "status" => class).increment(1);
    histogram!(UPSTREAM_DURATION, "api" => api.to_string()).record(took.as_secs_f64());
}

/// One request to a token endpoint, by the `grant_type` of its form.
pub fn token_request(grant_type: &str, granted: bool) {
    let kind = match grant_type {
        "client_credentials" => "client_credentials",
        "urn:ietf:params:oauth:grant-type:token-exchange" => "token_exchange",
        "authorization_code" => "authorization_code",
        "refresh_token" => "refresh_token",
        _ => "other",
    };
    let result = if granted { "granted" } else { "failed" };
    counter!(TOKEN_REQUESTS, "kind" => kind, "result" => result).increment(1);
}

/// One state store operation that failed (or did not answer in time).
pub fn store_error(operation: &'static str) {
    counter!(STORE_ERRORS, "operation" => operation).increment(1);
}

/// One catalog reload, finished or failed.
pub fn reload(ok: bool, took: Duration) {
    counter!(RELOADS, "result" => if ok { "ok" } else { "failed" }).increment(1);
    histogram!(RELOAD_DURATION).record(took.as_secs_f64());
}

/// One consent page refused for its client's limit (`client`) or the ceiling (`global`).
pub fn consent_page_limited(scope: &'static str) {
    counter!(CONSENT_PAGES_LIMITED, "scope" => scope).increment(1);
}

/// One callback, by what it came to (one of [`OAUTH_CALLBACK_RESULTS`]).
pub fn oauth_callback(result: &'static str) {
    debug_assert!(OAUTH_CALLBACK_RESULTS.contains(&result));
    counter!(OAUTH_CALLBACKS, "result" => result).increment(1);
}

/// The catalog now served.
pub fn served(endpoints: usize, apis: usize) {
    gauge!(ENDPOINTS_SERVED).set(endpoints as f64);
    gauge!(APIS_SERVED).set(apis as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_labels_are_the_protocols_names_or_other() {
        assert_eq!(mcp_method("tools/call"), "tools/call");
        assert_eq!(mcp_method("logging/setLevel"), "logging/setLevel");
        assert_eq!(mcp_method("tools/call "), "other");
        assert_eq!(mcp_method("alice's secret"), "other");
    }

    #[test]
    fn the_recorder_renders_what_was_recorded() {
        install().unwrap();
        mcp_request("tools/list", "ok");
        upstream("metrics-test-api", Some(503), Duration::from_millis(12));
        token_request("urn:ietf:params:oauth:grant-type:token-exchange", false);
        let text = render().unwrap();
        assert!(
            text.contains(r#"shortlist_mcp_requests_total{method="tools/list",result="ok"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"shortlist_upstream_requests_total{api="metrics-test-api",status="5xx"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "shortlist_upstream_request_duration_seconds_bucket{api=\"metrics-test-api\",le=\"0.025\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"shortlist_token_requests_total{kind="token_exchange",result="failed"} 1"#
            ),
            "{text}"
        );
    }
}
