//! What a platform team watches a team server by, checked with the real watchers:
//!
//! - metrics: Debian's Prometheus scrapes `/metrics` of a server behind the test OpenID
//!   provider (tests/oidc/provider.mjs), with an admin's token; its query API shows the
//!   series move after MCP calls (requests by method and result, `find_tools` latency,
//!   upstream calls by API and status class, a token grant, a reload, the endpoints
//!   served), and no label names a person or a token. A person who is not an admin gets 403, no token 401.
//! - traces: an OTLP/HTTP receiver in this test decodes what the server exports with the
//!   official protobuf schema (`opentelemetry-proto`) and finds the `find_tools` and
//!   `call_tool` spans, the upstream request's client span under `call_tool`, the W3C
//!   `traceparent` the upstream received naming that span, and no query text or secret.
//! - logs: with `--log-format json` every stderr line is one JSON object, log events
//!   carry the same fields as the text format, and no secret appears.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{json, Value};
use server_common::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::upstream;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `shortlist serve` of `fx` on `port`, with `env`; killed when dropped.
async fn serve(
    fx: &Fixture,
    port: u16,
    extra: &[&str],
    env: &[(&str, &str)],
) -> server_common::child_server::Started {
    let addr = format!("127.0.0.1:{port}");
    let mut args = fx.serve_args(&["--http", &addr]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut cmd = tokio::process::Command::new(shortlist_bin());
    cmd.args(&args)
        .env(TOKEN_ENV, TOKEN)
        .env_remove("SHORTLIST_DATA_DIR")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    server_common::child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(180)).await
}

/// Runs the Python MCP client (2026-07-28) with `token`; asserts it worked.
async fn client(mcp: &str, token: &str, steps: Value) -> Value {
    let (doc, ok, err) = python_client_raw(
        Target::Http(mcp),
        "auto",
        steps,
        &[&format!("Authorization: Bearer {token}")],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    doc
}

// --- Prometheus -----------------------------------------------------------------------------

/// Debian's Prometheus on 127.0.0.1, scraping `target`'s `/metrics` every second with
/// `token`; killed when dropped.
struct Prometheus {
    _child: tokio::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    async fn start(target: &str, token: &str) -> Prometheus {
        let bin = std::path::Path::new("/usr/bin/prometheus");
        assert!(
            bin.is_file(),
            "Prometheus is not installed: run ./scripts/setup-test-tools.sh (Debian's prometheus)"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, token).expect("token file");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: shortlist\n    metrics_path: /metrics\n\
                 \x20   authorization:\n      credentials_file: {:?}\n\
                 \x20   static_configs:\n      - targets: [{target:?}]\n",
                token_file.display()
            ),
        )
        .expect("prometheus.yml");
        let port = free_port();
        let child = tokio::process::Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            _child: child,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let ready = format!("{}/-/ready", p.base);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = reqwest::get(&ready)
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                break;
            }
            assert!(Instant::now() < deadline, "Prometheus did not get ready");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        p
    }

    /// The instant vector of `query` as `(labels, value)` pairs.
    async fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let doc: Value = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", query)])
            .send()
            .await
            .expect("query prometheus")
            .json()
            .await
            .expect("query answer");
        assert_eq!(doc["status"], "success", "{query}: {doc}");
        doc["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|r| {
                let v = r["value"][1]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(f64::NAN);
                (r["metric"].clone(), v)
            })
            .collect()
    }

    /// The single value of `query`, 0 when it has none.
    async fn value(&self, query: &str) -> f64 {
        self.query(query).await.first().map_or(0.0, |(_, v)| *v)
    }

    /// Waits until `query`'s value satisfies `ok` (scrapes come every second).
    async fn until(&self, query: &str, ok: impl Fn(f64) -> bool) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let v = self.value(query).await;
            if ok(v) {
                return v;
            }
            assert!(Instant::now() < deadline, "{query} stayed at {v}");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_metrics_that_move_with_calls() {
    let up = upstream::start().await;
    let port = free_port();
    let audience = format!("http://127.0.0.1:{port}/mcp");
    let idp = oidc::Provider::start(&audience).await;
    // `machine` gets its token from the provider by the client credentials grant.
    let spec = repo().join("tests/fixtures/upstream_tmdb.json");
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url())],
        &format!(
            "\n[[api]]\nid = \"machine\"\nspec = {spec:?}\nbase_url = {:?}\nallow_private = true\n\
             auth = {{ kind = \"client_credentials\", token_url = \"{}/token\", \
             client_id = \"carol\", client_secret_env = \"OPS_TEST_CAROL_SECRET\" }}\n\
             \n[auth]\nissuer = {:?}\naudience = {audience:?}\n\
             admins = {{ groups = [\"admins\"] }}\n",
            up.base_url(),
            idp.issuer,
            idp.issuer
        ),
    );
    let srv = serve(&fx, port, &[], &[("OPS_TEST_CAROL_SECRET", "carol-secret")]).await;
    let base = format!("http://127.0.0.1:{port}");
    let alice = idp.token("alice", "mcp", None).await;
    let bob = idp.token("bob", "mcp", None).await;

    // Admins only: no token 401, bob (not an admin) 403, alice (in `admins`) the text.
    let get = |token: Option<String>| {
        let url = format!("{base}/metrics");
        async move {
            let mut req = reqwest::Client::new().get(url);
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let res = req.send().await.expect("GET /metrics");
            (res.status().as_u16(), res.text().await.unwrap_or_default())
        }
    };
    assert_eq!(get(None).await.0, 401);
    let (status, body) = get(Some(bob.clone())).await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("machine"), "{body}");
    let (status, body) = get(Some(alice.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("shortlist_endpoints_served"), "{body}");

    let prom = Prometheus::start(&format!("127.0.0.1:{port}"), &alice).await;
    prom.until("up{job=\"shortlist\"}", |v| v == 1.0).await;
    let served = prom.until("shortlist_endpoints_served", |v| v > 0.0).await;
    assert!(served >= 2.0, "{served}");
    assert_eq!(prom.value("shortlist_apis_served").await, 2.0);
    let calls_ok = "sum(shortlist_mcp_requests_total{method=\"tools/call\",result=\"ok\"})";
    let before = prom.value(calls_ok).await;

    let doc = client(
        &format!("{base}/mcp"),
        &bob,
        json!([
            {"op": "list_tools"},
            {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "k": 2}},
            {"op": "call", "tool": "call_tool",
             "args": {"name": "tmdb__getMovieCredits", "arguments": {"movie_id": 550}}},
            {"op": "call", "tool": "call_tool",
             "args": {"name": "machine__getMovieCredits", "arguments": {"movie_id": 550}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "no_such_tool", "arguments": {}}},
            {"op": "call", "tool": "find_tools",
             "args": {"query": "book a table for two at a sushi restaurant tonight", "k": 2}}
        ]),
    )
    .await;
    assert_eq!(doc["protocolVersion"], "2026-07-28", "{doc:#}");
    for i in [1, 2, 3] {
        assert_ne!(step(&doc, i)["isError"], true, "step {i}: {doc:#}");
    }
    assert_eq!(step(&doc, 4)["isError"], true, "{doc:#}");

    let after = prom.until(calls_ok, |v| v >= before + 4.0).await;
    assert_eq!(after, before + 4.0);
    prom.until(
        "sum(shortlist_mcp_requests_total{method=\"tools/call\",result=\"tool_error\"})",
        |v| v == 1.0,
    )
    .await;
    prom.until(
        "sum(shortlist_mcp_requests_total{method=\"tools/list\",result=\"ok\"})",
        |v| v >= 1.0,
    )
    .await;
    prom.until("shortlist_find_tools_duration_seconds_count", |v| v == 2.0)
        .await;
    // Answers are counted by whether anything fit, never by their text: the movie request
    // fits the catalog, the restaurant booking does not.
    assert_eq!(
        step(&doc, 1)["structuredContent"]["matched"],
        true,
        "{doc:#}"
    );
    assert_eq!(
        step(&doc, 5)["structuredContent"]["matched"],
        false,
        "{doc:#}"
    );
    for matched in ["true", "false"] {
        prom.until(
            &format!("shortlist_find_tools_answers_total{{matched=\"{matched}\"}}"),
            |v| v == 1.0,
        )
        .await;
    }
    let buckets = prom
        .query("shortlist_find_tools_duration_seconds_bucket")
        .await;
    assert!(buckets.len() > 5, "a histogram, not a summary: {buckets:?}");
    for api in ["tmdb", "machine"] {
        prom.until(
            &format!("shortlist_upstream_requests_total{{api=\"{api}\",status=\"2xx\"}}"),
            |v| v == 1.0,
        )
        .await;
        prom.until(
            &format!("shortlist_upstream_request_duration_seconds_count{{api=\"{api}\"}}"),
            |v| v == 1.0,
        )
        .await;
    }
    prom.until(
        "shortlist_token_requests_total{kind=\"client_credentials\",result=\"granted\"}",
        |v| v == 1.0,
    )
    .await;

    // A reload (SIGHUP) is counted and timed.
    let pid = srv.child.id().expect("server pid") as i32;
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    prom.until("shortlist_catalog_reloads_total{result=\"ok\"}", |v| {
        v == 1.0
    })
    .await;
    prom.until("shortlist_catalog_reload_duration_seconds_count", |v| {
        v == 1.0
    })
    .await;

    // No label value names a person, a token or a query.
    let series: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/series", prom.base))
        .query(&[("match[]", "{__name__=~\"shortlist_.*\"}")])
        .send()
        .await
        .expect("series")
        .json()
        .await
        .expect("series answer");
    let text = series["data"].to_string();
    assert!(text.contains("shortlist_mcp_requests_total"), "{text}");
    for secret in [
        "alice",
        "bob",
        "carol",
        "movie credits",
        TOKEN,
        &alice,
        &bob,
    ] {
        assert!(!text.contains(secret), "a label names {secret}: {text}");
    }
}

// --- OpenTelemetry ----------------------------------------------------------------------------

/// An OTLP/HTTP receiver on 127.0.0.1: every span of every `POST /v1/traces`, decoded.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Receiver {
    async fn start() -> (Receiver, String) {
        let r = Receiver::default();
        let state = r.clone();
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                axum::routing::post(
                    |axum::extract::State(r): axum::extract::State<Receiver>,
                     headers: axum::http::HeaderMap,
                     body: axum::body::Bytes| async move {
                        assert_eq!(
                            headers.get("content-type").and_then(|v| v.to_str().ok()),
                            Some("application/x-protobuf")
                        );
                        let req = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                        let mut spans = r.spans.lock().unwrap();
                        for rs in req.resource_spans {
                            let service = rs
                                .resource
                                .iter()
                                .flat_map(|res| &res.attributes)
                                .find(|a| a.key == "service.name")
                                .and_then(|a| a.value.as_ref())
                                .and_then(|v| v.value.clone());
                            assert_eq!(service, Some(AnyValue::StringValue("shortlist".into())));
                            for ss in rs.scope_spans {
                                spans.extend(ss.spans);
                            }
                        }
                        // An empty ExportTraceServiceResponse.
                        (
                            [("content-type", "application/x-protobuf")],
                            Vec::<u8>::new(),
                        )
                    },
                ),
            )
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (r, url)
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits until a span named `name` arrived.
    async fn span(&self, name: &str) -> Span {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.spans().into_iter().find(|s| s.name == name) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "no span {name}: {:?}",
                self.spans().iter().map(|s| &s.name).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A span attribute's value, as text.
fn attr(span: &Span, key: &str) -> Option<String> {
    let v = span.attributes.iter().find(|a| a.key == key)?;
    Some(match v.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::IntValue(i) => i.to_string(),
        AnyValue::BoolValue(b) => b.to_string(),
        AnyValue::DoubleValue(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_an_otlp_receiver_and_upstreams_get_traceparent() {
    let up = upstream::start().await;
    let (receiver, endpoint) = Receiver::start().await;
    let fx = Fixture::new(&up.base_url());
    let port = free_port();
    let srv = serve(
        &fx,
        port,
        &["--log-format", "json"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("RUST_LOG", "shortlist=debug"),
        ],
    )
    .await;
    let mcp = format!("http://127.0.0.1:{port}/mcp");
    let doc = python_client(
        Target::Http(&mcp),
        "auto",
        json!([
            {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "k": 2}},
            {"op": "call", "tool": "call_tool",
             "args": {"name": "getMovieCredits", "arguments": {"movie_id": 550}}}
        ]),
    )
    .await;
    assert_ne!(step(&doc, 1)["isError"], true, "{doc:#}");

    let find = receiver.span("find_tools").await;
    assert_eq!(
        attr(&find, "gen_ai.tool.name").as_deref(),
        Some("find_tools")
    );
    assert_eq!(attr(&find, "shortlist.hits").as_deref(), Some("2"));
    let call = receiver.span("call_tool").await;
    assert_eq!(
        attr(&call, "gen_ai.tool.name").as_deref(),
        Some("getMovieCredits")
    );
    assert_eq!(attr(&call, "shortlist.api").as_deref(), Some("tmdb"));
    let upstream_span = receiver.span("GET /movie/{movie_id}/credits").await;
    assert_eq!(
        upstream_span.parent_span_id, call.span_id,
        "a child of call_tool"
    );
    assert_eq!(upstream_span.trace_id, call.trace_id);
    assert_eq!(
        upstream_span.kind,
        opentelemetry_proto::tonic::trace::v1::span::SpanKind::Client as i32
    );
    assert_eq!(
        attr(&upstream_span, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(
        attr(&upstream_span, "url.template").as_deref(),
        Some("/movie/{movie_id}/credits")
    );
    assert_eq!(
        attr(&upstream_span, "server.address").as_deref(),
        Some("127.0.0.1")
    );
    // The W3C trace context the upstream received names the client span.
    let received = up
        .received()
        .into_iter()
        .find(|r| r.path.contains("/credits"))
        .expect("the credits request");
    let traceparent = received.header("traceparent").expect("traceparent sent");
    assert_eq!(
        traceparent,
        format!(
            "00-{}-{}-01",
            hex::encode(&upstream_span.trace_id),
            hex::encode(&upstream_span.span_id)
        )
    );
    // Neither the query's text nor the upstream token nor the movie id is in any span's
    // name, attributes, events or status (its timestamps are digits that may hold "550").
    let all: String = receiver
        .spans()
        .iter()
        .map(|s| {
            format!(
                "{} {:?} {:?} {:?}",
                s.name, s.attributes, s.events, s.status
            )
        })
        .collect();
    for secret in ["movie credits", TOKEN, "550"] {
        assert!(!all.contains(secret), "a span carries {secret}: {all}");
    }

    // Logs: every line one JSON object; events carry level, target, fields and spans.
    drop(srv.child);
    let log = srv.log.lock().unwrap().clone();
    let mut events = 0;
    for line in srv.startup.lines().chain(log.lines()) {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(
            v["timestamp"].is_string() && v["level"].is_string(),
            "{line}"
        );
        assert!(
            v["message"].is_string() || v["fields"].is_object(),
            "{line}"
        );
        if v["message"] == "calling upstream" {
            assert_eq!(v["level"], "DEBUG", "{line}");
            assert_eq!(v["target"], "shortlist::invoke::client", "{line}");
            assert_eq!(v["tool"], "getMovieCredits", "{line}");
            let spans = v["spans"].to_string();
            assert!(spans.contains("call_tool"), "{line}");
            events += 1;
        }
    }
    assert_eq!(events, 1, "{log}");
    assert!(!log.contains(TOKEN), "{log}");
    assert!(srv.startup.contains("serving MCP on"), "{}", srv.startup);
}
