//! Security properties of `shortlist serve --http`, checked against real server processes
//! and the recording upstream (`tests/support/upstream.rs`), with raw JSON-RPC over
//! reqwest so every header is under the test's control.
//!
//! Already covered elsewhere and not repeated here (`tests/server_http.rs`): `0.0.0.0`
//! without a token is refused; with a token, `GET /mcp` and `GET /sse` without it get 401
//! and a wrong token fails a real client; a foreign `Host` on `/sse` (with a token) gets
//! 403; the conformance suite's DNS-rebinding scenario on `/mcp`; the upstream token is
//! not in a debug log. `tests/server_faults.rs` sends `../../account` and `@evil.example`
//! through stdio.
//!
//! Here:
//! - [`loopback_by_default_and_token_required_beyond_it`]: the default bind, `[::]`
//!   without a token, and with a token (bound beyond loopback) every route and method
//!   without the exact token gets 401 and nothing reaches the handler or the upstream;
//! - [`foreign_host_or_origin_is_refused_on_mcp_and_sse`]: `Host` and `Origin` on `/mcp`
//!   (both eras), `/sse` and `/message`;
//! - [`arguments_never_leave_the_base_path_or_host`]: path escapes, SSRF values and CRLF in
//!   path, query, header and cookie arguments;
//! - [`redirects_to_another_host_are_refused`]: 301/302/303/307/308 to another host, port,
//!   name or scheme-relative URL are never followed; same-host ones are;
//! - [`secrets_never_appear_anywhere_a_client_or_log_reader_looks`]: four kinds of
//!   credentials with distinctive values, the server at `RUST_LOG=trace`.

mod server_common;
mod support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use server_common::{child_server, require_model, shortlist_bin, Fixture, TOKEN, TOKEN_ENV};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::upstream::{self, Recorded};
use tokio::process::{Child, Command};

/// A running `shortlist serve --http`, its whole stderr captured; killed when dropped.
struct Server {
    _child: Child,
    /// `host:port` it printed.
    addr: String,
    startup: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    async fn start(fx: &Fixture, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(shortlist_bin());
        cmd.args(fx.serve_args(extra)).env(TOKEN_ENV, TOKEN);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let marker = "serving MCP on http://";
        let s = child_server::start(cmd, marker, Duration::from_secs(120)).await;
        Server {
            _child: s.child,
            addr: s.addr,
            startup: s.startup,
            log: s.log,
        }
    }

    fn port(&self) -> u16 {
        self.addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    /// A URL on 127.0.0.1 (the server may be bound to an unspecified address).
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    fn log(&self) -> String {
        let since = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        format!("{}{since}", self.startup)
    }
}

/// A 2026-07-28 (stateless) JSON-RPC request body and its routing headers.
fn stateless(id: u64, method: &str, params: Value) -> (Value, Vec<(&'static str, String)>) {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "security-test", "version": "0"}});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28".to_string()),
        ("mcp-method", method.to_string()),
    ];
    if let Some(name) = params["name"].as_str() {
        headers.push(("mcp-name", name.to_string()));
    }
    (
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        headers,
    )
}

/// A raw MCP client: POSTs stateless requests, returns status and the JSON-RPC answer.
struct Raw {
    http: reqwest::Client,
    url: String,
    extra: Vec<(String, String)>,
    next_id: u64,
    /// Every answer body seen, for leak checks.
    seen: String,
}

impl Raw {
    fn new(url: String) -> Raw {
        Raw {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            url,
            extra: Vec::new(),
            next_id: 0,
            seen: String::new(),
        }
    }

    fn header(mut self, k: &str, v: &str) -> Raw {
        self.extra.push((k.to_string(), v.to_string()));
        self
    }

    async fn send(&mut self, method: &str, params: Value) -> (StatusCode, Value) {
        self.next_id += 1;
        let (body, headers) = stateless(self.next_id, method, params);
        let mut r = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            r = r.header(k, v);
        }
        for (k, v) in &self.extra {
            r = r.header(k, v);
        }
        let resp = r.send().await.expect("POST /mcp");
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        self.seen.push_str(&text);
        self.seen.push('\n');
        let v = serde_json::from_str::<Value>(&text).unwrap_or_else(|_| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v.get("id").is_some())
                .unwrap_or(Value::Null)
        });
        (StatusCode::from_u16(status.as_u16()).expect("status"), v)
    }

    /// Calls a tool; returns (isError, text). Panics on a protocol-level failure.
    async fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let (status, v) = self
            .send("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        assert_eq!(status, StatusCode::OK, "{tool}({args}): {v}");
        let r = &v["result"];
        assert!(r.is_object(), "{tool}({args}): no result: {v}");
        (r["isError"] == true, text_of(r))
    }
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A listener on 127.0.0.1 that only counts the connections it gets: the "other host" of
/// the SSRF and redirect checks (on loopback, as the tests touch nothing else).
struct Trap {
    addr: std::net::SocketAddr,
    hits: Arc<AtomicUsize>,
}

async fn trap() -> Trap {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    let hits = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            drop(s);
        }
    });
    Trap { addr, hits }
}

/// Exits with the given arguments (the server must refuse to start); returns stderr.
async fn refused_to_start(fx: &Fixture, extra: &[&str]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(shortlist_bin())
            .args(fx.serve_args(extra))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("serve should exit at once")
    .expect("run serve");
    assert_eq!(out.status.code(), Some(2), "{extra:?} should be refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_by_default_and_token_required_beyond_it() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    // A bare port and `:port` mean loopback.
    for spec in ["0", ":0"] {
        let srv = Server::start(&fx, &["--http", spec], &[]).await;
        assert!(
            srv.addr.starts_with("127.0.0.1:"),
            "--http {spec}: {}",
            srv.addr
        );
    }
    // Every unspecified or non-loopback address needs a token (0.0.0.0: server_http.rs).
    let err = refused_to_start(&fx, &["--http", "[::]:0"]).await;
    assert!(err.contains("--auth-token-env"), "{err}");
    // A named but unset token variable is refused too, rather than serving without one.
    let err = refused_to_start(
        &fx,
        &[
            "--http",
            "0.0.0.0:0",
            "--auth-token-env",
            "SHORTLIST_SEC_UNSET",
        ],
    )
    .await;
    assert!(err.contains("SHORTLIST_SEC_UNSET"), "{err}");

    const SERVE_TOKEN: &str = "srv-LEAKCANARY-4d2a";
    let srv = Server::start(
        &fx,
        &[
            "--http",
            "0.0.0.0:0",
            "--auth-token-env",
            "SHORTLIST_SEC_SERVE_TOKEN",
            "--allow-host",
            "mcp.internal",
        ],
        &[
            ("SHORTLIST_SEC_SERVE_TOKEN", SERVE_TOKEN),
            ("RUST_LOG", "trace"),
        ],
    )
    .await;
    assert!(srv.addr.starts_with("0.0.0.0:"), "{}", srv.addr);
    let http = reqwest::Client::new();
    let call = stateless(
        1,
        "tools/call",
        json!({"name": "getTopRated", "arguments": {}}),
    );
    let bad_auth: [Option<String>; 7] = [
        None,
        Some(String::new()),
        Some("Bearer wrong".into()),
        Some(format!("Bearer {SERVE_TOKEN}x")),
        Some(format!("Bearer {}", &SERVE_TOKEN[..SERVE_TOKEN.len() - 1])),
        Some(SERVE_TOKEN.into()),
        Some(format!("Basic {SERVE_TOKEN}")),
    ];
    for auth in &bad_auth {
        for (method, path) in [
            ("POST", "/mcp"),
            ("GET", "/mcp"),
            ("DELETE", "/mcp"),
            ("GET", "/sse"),
            ("POST", "/message?sessionId=x"),
        ] {
            let mut r = http
                .request(method.parse().expect("method"), srv.url(path))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(call.0.to_string());
            for (k, v) in &call.1 {
                r = r.header(*k, v);
            }
            if let Some(a) = auth {
                r = r.header("authorization", a);
            }
            let resp = r.send().await.expect("request");
            assert_eq!(resp.status(), 401, "{method} {path} with {auth:?}");
            assert_eq!(
                resp.headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok()),
                Some("Bearer")
            );
        }
    }
    assert!(
        up.received().is_empty(),
        "an unauthorized call reached the upstream: {:#?}",
        up.received()
    );
    let log = srv.log();
    assert!(
        !log.contains("calling upstream") && !log.contains("tools/call"),
        "an unauthorized request reached the handler:\n{log}"
    );

    // With the token: the handler answers, on loopback names and the allowed name only.
    let mut ok =
        Raw::new(srv.url("/mcp")).header("authorization", &format!("Bearer {SERVE_TOKEN}"));
    let (is_error, text) = ok.call("getTopRated", json!({})).await;
    assert!(!is_error, "{text}");
    assert_eq!(
        up.received().len(),
        1,
        "the authorized call must reach the upstream"
    );
    let port = srv.port();
    let named = ok
        .header("host", &format!("mcp.internal:{port}"))
        .send("tools/list", json!({}))
        .await;
    assert_eq!(named.0, StatusCode::OK, "{}", named.1);
    let mut foreign = Raw::new(srv.url("/mcp"))
        .header("authorization", &format!("Bearer {SERVE_TOKEN}"))
        .header("host", &format!("evil.example:{port}"));
    assert_eq!(
        foreign.send("tools/list", json!({})).await.0,
        StatusCode::FORBIDDEN
    );
    assert!(
        !srv.log().contains(SERVE_TOKEN),
        "the serve token leaked into the trace log"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_or_origin_is_refused_on_mcp_and_sse() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = Server::start(&fx, &["--http", "127.0.0.1:0"], &[]).await;
    let port = srv.port();
    let http = reqwest::Client::new();
    let foreign_hosts = [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
    ];
    let foreign_origins = [
        "http://evil.example".to_string(),
        format!("http://evil.example:{port}"),
        format!("http://127.0.0.1.evil.example:{port}"),
        "null".to_string(),
        "file://".to_string(),
    ];
    let call = json!({"name": "getTopRated", "arguments": {}});
    let refusals = foreign_hosts
        .iter()
        .map(|h| ("host", h))
        .chain(foreign_origins.iter().map(|o| ("origin", o)));
    for (k, v) in refusals {
        let mut c = Raw::new(srv.url("/mcp")).header(k, v);
        let (status, body) = c.send("tools/call", call.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "/mcp with {k}: {v}: {body}");

        // Session era: initialize is refused the same way.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}});
        let r = http
            .post(srv.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header(k, v.as_str())
            .body(init.to_string())
            .send()
            .await
            .expect("POST");
        assert_eq!(r.status(), 403, "/mcp initialize with {k}: {v}");

        // Legacy SSE: the stream and the message endpoint.
        let r = http
            .get(srv.url("/sse"))
            .header("accept", "text/event-stream")
            .header(k, v.as_str())
            .send()
            .await
            .expect("GET /sse");
        assert_eq!(r.status(), 403, "/sse with {k}: {v}");
        let r = http
            .post(srv.url("/message?sessionId=x"))
            .header("content-type", "application/json")
            .header(k, v.as_str())
            .body("{}")
            .send()
            .await
            .expect("POST /message");
        assert_eq!(r.status(), 403, "/message with {k}: {v}");
    }
    assert!(
        up.received().is_empty(),
        "a refused request reached the upstream: {:#?}",
        up.received()
    );

    // Controls: no Origin (non-browser clients) and the server's own origins are served.
    for origin in [
        None,
        Some(format!("http://127.0.0.1:{port}")),
        Some(format!("http://localhost:{port}")),
        Some("http://localhost:3000".to_string()),
    ] {
        let mut c = Raw::new(srv.url("/mcp"));
        if let Some(o) = &origin {
            c = c.header("origin", o);
        }
        let (is_error, text) = c.call("getTopRated", json!({})).await;
        assert!(!is_error, "origin {origin:?}: {text}");
        let mut r = http
            .get(srv.url("/sse"))
            .header("accept", "text/event-stream");
        if let Some(o) = &origin {
            r = r.header("origin", o);
        }
        let r = r.send().await.expect("GET /sse");
        assert_eq!(r.status(), 200, "/sse with origin {origin:?}");
    }
}

/// Every recorded request went to the upstream's host and under the API's base path.
fn assert_stayed_home(got: &[Recorded], host: &str) {
    for r in got {
        assert!(r.path.starts_with("/3/"), "left the base path: {r:?}");
        assert_ne!(
            r.path, "/3/account",
            "a path argument escaped its segment: {r:?}"
        );
        assert_eq!(r.header("host"), Some(host), "{r:?}");
        assert!(
            r.headers.iter().all(|(k, _)| !k.starts_with("x-evil")),
            "an argument injected a header: {r:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_never_leave_the_base_path_or_host() {
    let up = upstream::start().await;
    let evil = trap().await;
    let fx = Fixture::new(&up.base_url());
    let srv = Server::start(&fx, &["--http", "127.0.0.1:0"], &[]).await;
    let mut c = Raw::new(srv.url("/mcp"));
    let e = evil.addr.to_string();
    let escapes = [
        "..".to_string(),
        ".".to_string(),
        "../account".to_string(),
        "../../account".to_string(),
        "..%2faccount".to_string(),
        "..%2Faccount".to_string(),
        "%2e%2e".to_string(),
        "%2E%2E%2F%2E%2E%2Faccount".to_string(),
        ".%2e".to_string(),
        "%2e.".to_string(),
        "x/../../account".to_string(),
        "..\\account".to_string(),
        "..;/account".to_string(),
        "%252e%252e%252faccount".to_string(),
        "\u{ff0e}\u{ff0e}/account".to_string(),
        format!("@{e}"),
        format!("user@{e}/x"),
        format!("http://{e}/x"),
        format!("https://{e}/x"),
        format!("//{e}/x"),
        format!("\\\\{e}\\x"),
        format!("x?redirect=http://{e}/"),
        format!("x#http://{e}/"),
        "a\r\nHost: evil.example".to_string(),
        "a%0d%0aX-Evil: 1".to_string(),
        "\0".to_string(),
    ];
    let mut deletes = 0;
    for v in &escapes {
        let before = up.received().len();
        let (is_error, text) = c.call("deleteList", json!({"list_id": v})).await;
        let got = up.received();
        match got.len() - before {
            0 => assert!(is_error, "{v:?}: not sent, yet not an error: {text}"),
            1 => {
                deletes += 1;
                let r = &got[before];
                assert_eq!(r.method, "DELETE", "{v:?}: {r:?}");
                let seg = r
                    .path
                    .strip_prefix("/3/list/")
                    .unwrap_or_else(|| panic!("{v:?} left /3/list/: {r:?}"));
                assert!(
                    !seg.is_empty() && !seg.contains('/') && seg != "." && seg != "..",
                    "{v:?} left its segment: {r:?}"
                );
                let decoded = percent_encoding::percent_decode_str(seg).decode_utf8_lossy();
                assert_eq!(
                    decoded, *v,
                    "{v:?} must arrive as exactly one segment: {r:?}"
                );
            }
            n => panic!("{v:?} caused {n} upstream requests: {:#?}", &got[before..]),
        }
        // An integer path parameter refuses them all before sending.
        let before = up.received().len();
        let (is_error, _) = c.call("getMovieCredits", json!({"movie_id": v})).await;
        assert!(is_error && up.received().len() == before, "{v:?}");
        // In a query value they stay one value of one parameter.
        let before = up.received().len();
        let (is_error, text) = c
            .call("searchMovie", json!({"query": v, "language": v}))
            .await;
        let got = up.received();
        if got.len() > before {
            let r = &got[before];
            assert_eq!(r.path, "/3/search/movie", "{r:?}");
            let pairs: Vec<(String, String)> =
                url::form_urlencoded::parse(r.query.as_deref().unwrap_or("").as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect();
            let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(keys, ["query", "language"], "{v:?}: {r:?}");
        } else {
            assert!(is_error, "{v:?}: {text}");
        }
    }
    assert!(
        deletes >= escapes.len() / 2,
        "most values should be sent, encoded"
    );

    // Line breaks in header values are refused and nothing is sent; in a cookie value
    // they are percent-encoded (cookie values are encoded data), or refused.
    for v in [
        "a\r\nX-Evil: 1",
        "a\nX-Evil: 1",
        "a\rX-Evil: 1",
        "a\r\n\r\nGET /3/account HTTP/1.1",
        "a\u{0}b",
    ] {
        let before = up.received().len();
        let (is_error, text) = c.call("getTopRated", json!({"X-Trace-Id": v})).await;
        assert!(is_error, "header {v:?}: {text}");
        assert_eq!(up.received().len(), before, "header {v:?} was sent");
        let (is_error, _) = c.call("getTopRated", json!({"session_id": v})).await;
        let got = up.received();
        if let Some(r) = got.get(before) {
            let cookie = r.header("cookie").unwrap_or_default();
            assert!(
                !is_error
                    && !cookie.contains(['\r', '\n', '\0'])
                    && cookie.starts_with("session_id="),
                "cookie {v:?}: {r:?}"
            );
        } else {
            assert!(is_error, "cookie {v:?}");
        }
    }
    // Names through call_tool cannot be paths or URLs either.
    for name in ["../account", &format!("http://{e}/x"), "/3/account"] {
        let (is_error, text) = c
            .call("call_tool", json!({"name": name, "arguments": {}}))
            .await;
        assert!(is_error && text.contains("unknown tool"), "{name}: {text}");
    }

    assert_eq!(
        evil.hits.load(Ordering::SeqCst),
        0,
        "another host was contacted"
    );
    assert_stayed_home(&up.received(), &up.addr.to_string());
}

/// An API whose redirect endpoints answer with a redirect to somewhere else each time.
async fn redirector(
    l: tokio::net::TcpListener,
    targets: Vec<(u16, String)>,
) -> (String, Arc<Mutex<Vec<String>>>) {
    use axum::response::IntoResponse;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let next = Arc::new(AtomicUsize::new(0));
    let log = Arc::clone(&seen);
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let log = Arc::clone(&log);
        let next = Arc::clone(&next);
        let targets = targets.clone();
        async move {
            let host = req
                .headers()
                .get("host")
                .and_then(|h| h.to_str().ok())
                .unwrap_or("")
                .to_string();
            let path = req.uri().path().to_string();
            log.lock().unwrap().push(format!("{host} {path}"));
            match path.as_str() {
                "/r/redirect-other-host" => {
                    let (status, to) =
                        &targets[next.fetch_add(1, Ordering::SeqCst) % targets.len()];
                    (
                        StatusCode::from_u16(*status).expect("status"),
                        [("location", to.clone())],
                    )
                        .into_response()
                }
                "/r/redirect-same" => {
                    (StatusCode::FOUND, [("location", "/r/movie/top_rated")]).into_response()
                }
                "/r/movie/top_rated" => {
                    axum::Json(json!({"results": [{"title": "Same host"}]})).into_response()
                }
                _ => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    (format!("http://{addr}/r"), seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_to_another_host_are_refused() {
    let evil = trap().await;
    let e = evil.addr;
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let own_port = l.local_addr().expect("addr").port();
    let mut targets: Vec<(u16, String)> = Vec::new();
    for status in [301, 302, 303, 307, 308] {
        targets.push((status, format!("http://{e}/stolen")));
    }
    targets.push((302, format!("//{e}/stolen")));
    targets.push((302, format!("http://user@{e}/stolen")));
    // The redirector itself under another name, and another port of the same host.
    targets.push((302, format!("http://localhost:{own_port}/stolen")));
    targets.push((302, "http://other.invalid/stolen".into()));
    let (base, seen) = redirector(l, targets.clone()).await;
    let fx = Fixture::new(&base);
    let srv = Server::start(&fx, &["--http", "127.0.0.1:0"], &[]).await;
    let mut c = Raw::new(srv.url("/mcp"));
    for (status, to) in &targets {
        let (is_error, text) = c.call("redirectOtherHost", json!({})).await;
        assert!(is_error, "{status} to {to} must not be a success: {text}");
        assert!(
            text.contains(&status.to_string()) && text.to_lowercase().contains("redirect"),
            "{status} to {to}: the result should say the redirect was not followed: {text}"
        );
        assert!(!text.contains(TOKEN), "{text}");
    }
    // Same-host redirects are followed: the refusal above is about the host.
    let (is_error, text) = c.call("redirectSame", json!({})).await;
    assert!(!is_error && text.contains("Same host"), "{text}");

    assert_eq!(
        evil.hits.load(Ordering::SeqCst),
        0,
        "a redirect was followed off-host"
    );
    let host = base
        .trim_start_matches("http://")
        .trim_end_matches("/r")
        .to_string();
    for r in seen.lock().unwrap().iter() {
        assert!(r.starts_with(&format!("{host} /r/")), "{r}");
    }
}

/// A value in every form a secret can take on the wire or in a message.
fn forms(secret: &str) -> Vec<String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut v = vec![
        secret.to_string(),
        percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
            .to_string(),
        url::form_urlencoded::byte_serialize(secret.as_bytes()).collect(),
        b64.encode(secret),
    ];
    v.dedup();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear_anywhere_a_client_or_log_reader_looks() {
    require_model();
    let up = upstream::start().await;
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    const BEARER: &str = "bt-LEAKCANARY-51d0";
    const QUERY_KEY: &str = "sk/LEAKCANARY+q=7f3e";
    const HEADER_KEY: &str = "hk-LEAKCANARY-33aa";
    const PASSWORD: &str = "pw-LEAKCANARY-77c1";
    const SERVE_TOKEN: &str = "st-LEAKCANARY-0e0e";
    let spec = server_common::repo().join("tests/fixtures/upstream_tmdb.json");
    let base = up.base_url();
    let dead = format!("http://127.0.0.1:{dead_port}/3");
    let extra = format!(
        "\n[[api]]\nid = \"keyed\"\nspec = {spec:?}\nbase_url = {base:?}\ntimeout_secs = 2\n\
         auth = {{ kind = \"api_key\", name = \"api_key\", in = \"query\", value_env = \"SHORTLIST_SEC_QUERY_KEY\" }}\n\
         \n[[api]]\nid = \"hdr\"\nspec = {spec:?}\nbase_url = {base:?}\ntimeout_secs = 2\n\
         auth = {{ kind = \"api_key\", name = \"X-Api-Key\", in = \"header\", value_env = \"SHORTLIST_SEC_HEADER_KEY\" }}\n\
         \n[[api]]\nid = \"down\"\nspec = {spec:?}\nbase_url = {dead:?}\ntimeout_secs = 2\n\
         auth = {{ kind = \"basic\", username_env = \"SHORTLIST_SEC_USER\", password_env = \"SHORTLIST_SEC_PASSWORD\" }}\n"
    );
    let fx = Fixture::with_apis_and(&[("tmdb", &base)], &extra);
    let srv = Server::start(
        &fx,
        &[
            "--http",
            "127.0.0.1:0",
            "--expose",
            "static",
            "--auth-token-env",
            "SHORTLIST_SEC_SERVE_TOKEN",
        ],
        &[
            (TOKEN_ENV, BEARER),
            ("SHORTLIST_SEC_QUERY_KEY", QUERY_KEY),
            ("SHORTLIST_SEC_HEADER_KEY", HEADER_KEY),
            ("SHORTLIST_SEC_USER", "svc"),
            ("SHORTLIST_SEC_PASSWORD", PASSWORD),
            ("SHORTLIST_SEC_SERVE_TOKEN", SERVE_TOKEN),
            ("RUST_LOG", "trace"),
        ],
    )
    .await;
    let mut c = Raw::new(srv.url("/mcp")).header("authorization", &format!("Bearer {SERVE_TOKEN}"));

    // Every endpoint is a tool (--expose catalog): all descriptions are in this list.
    let (status, listed) = c.send("tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    let names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .skip(3)
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert_eq!(names.len(), 4 * 13, "{names:?}");
    let mut echoed = 0;
    let mut echo_texts = Vec::new();
    for api in ["tmdb", "keyed", "hdr", "down"] {
        let (is_error, text) = c
            .call(
                "find_tools",
                json!({"query": "echo the request", "k": 5, "api": api}),
            )
            .await;
        assert!(!is_error, "{text}");
    }
    {
        for name in &names {
            let (is_error, text) = c.call("describe_tool", json!({"name": name})).await;
            assert!(!is_error, "{text}");
            let described: Value = serde_json::from_str(&text).expect("describe JSON");
            let call = described.to_string();
            // Calls likely to make an upstream repeat, or an error quote, a credential.
            let args = if call.contains("/echo") {
                json!({"q": "hello"})
            } else if call.contains("/search/movie") {
                json!({"query": "x"})
            } else if call.contains("/movie/{movie_id}") {
                json!({"movie_id": "not a number"})
            } else if call.contains("/list/{list_id}") {
                json!({"list_id": "1"})
            } else if call.contains("POST /list") || call.contains("\"POST\"") {
                json!({"name": "n"})
            } else {
                json!({})
            };
            let (_, text) = c.call(name, args.clone()).await;
            if call.contains("\"/echo\"") {
                if text.contains("[REDACTED]") {
                    echoed += 1;
                } else {
                    echo_texts.push(text.clone());
                }
            }
            // The same through call_tool, and a call with unknown arguments.
            c.call("call_tool", json!({"name": name, "arguments": args}))
                .await;
            c.call(name, json!({"nope": 1})).await;
        }
    }
    assert!(
        echoed >= 2,
        "the echo endpoint should have repeated (masked) credentials: {echoed} {echo_texts:#?}"
    );
    // Positive control: the upstream did get every credential.
    let got = up.received();
    let has = |f: &dyn Fn(&Recorded) -> bool| got.iter().any(f);
    assert!(has(
        &|r| r.header("authorization") == Some(&format!("Bearer {BEARER}"))
    ));
    assert!(has(&|r| r.header("x-api-key") == Some(HEADER_KEY)));
    assert!(has(&|r| r
        .query
        .as_deref()
        .is_some_and(|q| q.contains("LEAKCANARY"))));

    // Give the log a moment to drain, then look everywhere.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = srv.log();
    assert!(
        log.contains("calling upstream"),
        "no trace log captured?\n{log}"
    );
    let mut secrets: Vec<String> = [BEARER, QUERY_KEY, HEADER_KEY, PASSWORD, SERVE_TOKEN]
        .iter()
        .flat_map(|s| forms(s))
        .collect();
    secrets.extend(forms(&format!("svc:{PASSWORD}")));
    secrets.push("LEAKCANARY".into());
    for s in &secrets {
        assert!(
            !c.seen.contains(s.as_str()),
            "secret form {s:?} reached a client:\n{}",
            excerpt(&c.seen, s)
        );
        assert!(
            !log.contains(s.as_str()),
            "secret form {s:?} is in the trace log:\n{}",
            excerpt(&log, s)
        );
    }
}

/// The lines of `hay` around `needle`.
fn excerpt(hay: &str, needle: &str) -> String {
    hay.lines()
        .filter(|l| l.contains(needle))
        .take(5)
        .map(|l| l.chars().take(600).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}
