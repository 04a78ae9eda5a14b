//! `shortlist serve --http` driven by real clients: the Python `mcp` SDK over streamable
//! HTTP in both eras (2025-11-25 sessions, 2026-07-28 stateless + `subscriptions/listen`)
//! and over the legacy HTTP+SSE transport, the MCP Inspector CLI, and the MCP conformance
//! suite. Also the HTTP guards (loopback, token, Host) and malformed requests.

mod server_common;
mod support;

use serde_json::{json, Value};
use server_common::*;
use support::upstream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_session_era_find_expose_and_call() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    let doc = find_expose_call(Target::Http(&srv.url("/mcp")), "legacy", &up).await;
    assert_eq!(doc["protocolVersion"], "2025-11-25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_stateless_era_find_expose_and_call() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    let doc = find_expose_call(Target::Http(&srv.url("/mcp")), "auto", &up).await;
    assert_eq!(doc["protocolVersion"], "2026-07-28");
    assert_eq!(doc["listen"]["toolsListChanged"], true, "{doc:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_round_trip() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    find_expose_call(Target::Sse(&srv.url("/sse")), "legacy", &up).await;

    // The Inspector speaks the same transport.
    let (code, out, err) = inspector(
        &[
            "-q".into(),
            "--format".into(),
            "json".into(),
            "--transport".into(),
            "sse".into(),
            "--method".into(),
            "tools/list".into(),
            srv.url("/sse"),
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\"call_tool\""), "{out}");
}

/// Each client has its own exposed set, the cap holds, and the least recently used tool
/// leaves first: sessions (one per client) and credentials (stateless era) are separate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_have_separate_capped_tool_sets() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &["--max-tools", "2"]).await;
    let url = srv.url("/mcp");
    let doc = python_client(
        Target::Http(&url),
        "legacy",
        json!([
            {"op": "call", "tool": "find_tools", "args": {"query": "search for a movie by its title", "k": 1}},
            {"op": "call", "tool": "find_tools", "args": {"query": "create a new list", "k": 1}},
            {"op": "call", "tool": "find_tools", "args": {"query": "delete a list", "k": 1}},
            {"op": "list_tools"},
        ]),
    )
    .await;
    let first = step(&doc, 0)["structuredContent"]["tools"][0]["name"].clone();
    let last = names(step(&doc, 3));
    assert_eq!(last.len(), 3 + 2, "capped at 2 endpoint tools: {last:?}");
    assert!(
        !last.iter().any(|n| *n == first),
        "{first} should have left first: {last:?}"
    );

    // Another session starts from nothing.
    let other = python_client(Target::Http(&url), "legacy", json!([{"op": "list_tools"}])).await;
    assert_eq!(names(step(&other, 0)).len(), 3);

    // A 2026-07-28 client's list never depends on its earlier requests: after alice's
    // find_tools her list is what bob, who asked nothing, gets.
    let steps = json!([
        {"op": "list_tools", "cache_mode": "bypass"},
        {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "k": 1}},
        {"op": "list_tools", "cache_mode": "bypass"},
    ]);
    let (a, ok, err) = python_client_raw(
        Target::Http(&url),
        "auto",
        steps,
        &["Authorization: Bearer alice"],
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(step(&a, 0)["tools"], step(&a, 2)["tools"], "{a:#}");
    assert_eq!(names(step(&a, 2)).len(), 3, "{a:#}");
    let (b, ok, err) = python_client_raw(
        Target::Http(&url),
        "auto",
        json!([{"op": "list_tools", "cache_mode": "bypass"}]),
        &["Authorization: Bearer bob"],
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(step(&b, 0)["tools"], step(&a, 2)["tools"], "{b:#}");
}

/// Catalog exposure over HTTP, 2026-07-28: every endpoint, paged with cursors in a fixed
/// order, cached for long and shareable (nothing in it depends on the caller), the same
/// for every caller and before and after find_tools; a cursor the server never gave is an
/// invalid-params error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_exposure_pages_the_whole_catalog() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &["--expose", "catalog", "--page-size", "4"]).await;
    let url = srv.url("/mcp");
    let doc = python_client(
        Target::Http(&url),
        "auto",
        json!([
            {"op": "list_tools", "cache_mode": "bypass"},
            {"op": "call", "tool": "find_tools", "args": {"query": "delete a list", "k": 2}},
            {"op": "list_tools", "cache_mode": "bypass"},
            {"op": "list_page", "cursor": "%%% not a cursor", "expect_error": true},
            {"op": "call", "tool": "deleteList", "args": {"list_id": "7"}},
        ]),
    )
    .await;
    assert_eq!(doc["protocolVersion"], "2026-07-28");
    let first = step(&doc, 0);
    let all = names(first);
    // 13 endpoints at 4 a page (the meta-tools ride on the first page).
    assert_eq!(first["pages"], 4, "{first:#}");
    assert_eq!(all.len(), 3 + 13, "{all:?}");
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "a tool listed twice: {all:?}");
    let mut sorted = all[3..].to_vec();
    sorted.sort();
    assert_eq!(all[3..], sorted[..]);
    for hint in first["hints"].as_array().expect("hints") {
        assert_eq!(hint["cacheScope"], "public", "{hint}");
        assert!(hint["ttlMs"].as_u64() >= Some(60_000), "{hint}");
    }
    assert_eq!(first["tools"], step(&doc, 2)["tools"], "the list moved");
    let found = &step(&doc, 1)["structuredContent"];
    assert_eq!(found["exposed"], false);
    assert!(found["note"]
        .as_str()
        .is_some_and(|n| n.contains("Every endpoint is a tool")));
    assert_eq!(step(&doc, 3)["error"]["code"], -32602, "{doc:#}");
    assert_eq!(step(&doc, 4)["isError"], false, "{doc:#}");
    assert_eq!(up.only().path, "/3/list/7");

    // Another caller, and a session-era client, get the same catalog.
    let other = python_client(Target::Http(&url), "legacy", json!([{"op": "list_tools"}])).await;
    assert_eq!(names(step(&other, 0)), all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_lists_and_calls_over_http() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["-q", "--format", "json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.push(srv.url("/mcp"));
        v
    };
    let (code, out, err) = inspector(&args(&["--method", "tools/list"]), None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\"find_tools\""), "{out}");
    let (code, out, err) = inspector(
        &args(&[
            "--method",
            "tools/call",
            "--tool-name",
            "call_tool",
            "--tool-args-json",
            r#"{"name": "getTopRated", "arguments": {"page": 1}}"#,
        ]),
        None,
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("Shawshank"), "{out}");
    let r = up.only();
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("GET", "/3/movie/top_rated")
    );
    assert_eq!(r.query.as_deref(), Some("page=1"));
}

/// The conformance suite's server requirements of both revisions the server speaks, each run
/// whole (`--requirements`): everything passes but the scenarios in
/// `tests/conformance/expected-failures-REVISION.yml`, each there with its reason (they
/// call the suite's reference tools, prompts and resources, which a catalog server has
/// not). A listed scenario that starts passing fails the run too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_requirements_pass_but_for_documented_expected_failures() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    for revision in ["2026-07-28", "2025-11-25"] {
        let baseline = repo().join(format!(
            "tests/conformance/expected-failures-{revision}.yml"
        ));
        let listed = std::fs::read_to_string(&baseline).expect("expected-failures file");
        for line in listed.lines().filter(|l| l.trim_start().starts_with("- ")) {
            assert!(
                line.contains(" # "),
                "{}: an expected failure without its reason: {line}",
                baseline.display()
            );
        }
        let out = tokio::process::Command::new(node22())
            .arg(conformance_js())
            .args([
                "server",
                "--url",
                &srv.url("/mcp"),
                "--requirements",
                revision,
            ])
            .arg("--expected-failures")
            .arg(&baseline)
            .kill_on_drop(true)
            .output()
            .await
            .expect("run the conformance suite");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("all failures are expected"),
            "--requirements {revision}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Malformed JSON-RPC gets a clear HTTP/JSON-RPC error, and the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_rpc_over_http_is_refused_and_serving_continues() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    let http = reqwest::Client::new();
    let post = |url: String, body: &'static str| {
        http.post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    // Streamable HTTP answers like the legacy transport: 400 with a JSON-RPC error.
    for (body, code) in [
        ("{not json", -32700),
        (r#"{"jsonrpc": "2.0", "id": 1, "method": 42}"#, -32600),
        ("[]", -32600),
    ] {
        let r = post(srv.url("/mcp"), body).await.expect("POST /mcp");
        assert_eq!(r.status(), 400, "{body}");
        let v: Value = r.json().await.expect("JSON-RPC error body");
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
        assert_eq!(v["jsonrpc"], "2.0", "{body}: {v}");
        assert!(v["id"].is_null(), "{body}: {v}");
    }

    // Legacy SSE: open a stream, read the endpoint, post garbage, then a valid message.
    let mut sse = http
        .get(srv.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("GET /sse");
    let mut buf = String::new();
    while !buf.contains("\n\n") {
        let chunk = sse.chunk().await.expect("sse chunk").expect("sse open");
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
    let endpoint = buf
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("endpoint event")
        .trim()
        .to_string();
    assert!(endpoint.starts_with("/message?sessionId="), "{endpoint}");
    let r = post(srv.url(&endpoint), "{not json")
        .await
        .expect("POST /message");
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.expect("JSON-RPC error body");
    assert_eq!(v["error"]["code"], -32700);
    let r = post(srv.url("/message?sessionId=nope"), "{}")
        .await
        .expect("POST");
    assert_eq!(r.status(), 404);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let r = post(srv.url(&endpoint), init)
        .await
        .expect("POST initialize");
    assert_eq!(r.status(), 202);
    let answered = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let Ok(Some(chunk)) = sse.chunk().await else {
                return false;
            };
            buf.push_str(&String::from_utf8_lossy(&chunk));
            if buf.contains("\"protocolVersion\":\"2024-11-05\"") {
                return true;
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(answered, "no initialize answer on the SSE stream: {buf}");

    // And a real client still gets through afterwards.
    let doc = python_client(
        Target::Http(&srv.url("/mcp")),
        "legacy",
        json!([{"op": "list_tools"}]),
    )
    .await;
    assert_eq!(names(step(&doc, 0)).len(), 3);
}

/// A token, when configured, guards every route; off loopback one is required.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_auth_and_bind_guards() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let out = tokio::process::Command::new(shortlist_bin())
        .args(fx.serve_args(&["--http", "0.0.0.0:0"]))
        .output()
        .await
        .expect("run serve");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--auth-token-env"));

    let srv = HttpServer::start_with_env(
        &fx,
        &["--auth-token-env", "SHORTLIST_SERVE_TOKEN"],
        &[("SHORTLIST_SERVE_TOKEN", "serve-secret")],
    )
    .await;
    assert!(!srv.startup.contains("serve-secret"));
    let http = reqwest::Client::new();
    for path in ["/mcp", "/sse"] {
        let r = http.get(srv.url(path)).send().await.expect("GET");
        assert_eq!(r.status(), 401, "{path}");
    }
    let (doc, ok, _) = python_client_raw(
        Target::Http(&srv.url("/mcp")),
        "legacy",
        json!([{"op": "list_tools"}]),
        &["Authorization: Bearer wrong"],
    )
    .await;
    assert!(!ok, "a wrong token must be refused: {doc:#}");
    let (doc, ok, err) = python_client_raw(
        Target::Http(&srv.url("/mcp")),
        "legacy",
        json!([{"op": "list_tools"}]),
        &["Authorization: Bearer serve-secret"],
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(names(step(&doc, 0)).len(), 3);

    // Health and readiness answer a balancer's or kubelet's probe: no token, the pod's
    // address as Host, which MCP refuses.
    for (path, status) in [("/healthz", "ok"), ("/readyz", "ready")] {
        let r = http
            .get(srv.url(path))
            .header("host", "10.1.2.3:8080")
            .send()
            .await
            .expect("GET probe");
        assert_eq!(r.status(), 200, "{path}");
        let v: Value = r.json().await.expect("probe JSON");
        assert_eq!(v["status"], status, "{path}: {v}");
    }
    let r = http
        .post(srv.url("/mcp"))
        .header("host", "10.1.2.3:8080")
        .bearer_auth("serve-secret")
        .send()
        .await
        .expect("POST");
    assert!(
        r.status().is_client_error(),
        "a foreign Host reached MCP: {}",
        r.status()
    );

    // The legacy routes check Host like /mcp does (DNS rebinding).
    let r = http
        .get(srv.url("/sse"))
        .header("host", "evil.example")
        .header("authorization", "Bearer serve-secret")
        .send()
        .await
        .expect("GET /sse");
    assert_eq!(r.status(), 403);
}

/// A session or SSE connection that ends gives its exposed set back at once (stateless
/// clients are forgotten after the idle expiry instead), and no log line carries a session
/// id or a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_clients_release_their_state() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start_with_env(&fx, &[], &[("RUST_LOG", "shortlist=debug")]).await;
    let steps =
        json!([{"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "k": 2}}]);
    python_client(Target::Http(&srv.url("/mcp")), "legacy", steps.clone()).await;
    python_client(Target::Sse(&srv.url("/sse")), "legacy", steps).await;
    let released = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            let log = srv.log();
            let released = |kind: &str| {
                log.lines().any(|l| {
                    l.contains("client state released")
                        && l.contains(kind)
                        && l.contains("clients=0")
                })
            };
            if released("client=session#") && released("client=sse#") {
                return log;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("client state not released:\n{}", srv.log()));
    assert!(
        !released.contains(TOKEN),
        "the upstream token leaked into the log"
    );
}

/// A burst of concurrent `find_tools` calls queues for the CPU instead of parking a
/// blocking thread per request: the server's thread count stays bounded by its cores, so
/// the memory those threads hold does not grow with the number of clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_searches_does_not_grow_a_thread_per_request() {
    const BURST: usize = 48;
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let srv = HttpServer::start(&fx, &[]).await;
    let pid = srv.child.id().expect("server pid");
    let threads = move || -> usize {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Threads:"))
                    .and_then(|n| n.trim().parse().ok())
            })
            .expect("the server's thread count")
    };
    let idle = threads();
    let http = reqwest::Client::new();
    let mut burst = Vec::new();
    for i in 0..BURST {
        let (http, url) = (http.clone(), srv.url("/mcp"));
        burst.push(tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "find_tools",
                "arguments": {"query": format!("movie credits of film number {i}"), "k": 2},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "burst", "version": "0"}}}});
            let r = http
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("authorization", format!("Bearer burst-{i}"))
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "find_tools")
                .body(body.to_string())
                .send()
                .await
                .expect("POST find_tools");
            assert!(r.status().is_success(), "HTTP {}", r.status());
            let text = r.text().await.expect("body");
            assert!(text.contains("\"result\""), "{text}");
        }));
    }
    let mut peak = idle;
    while !burst.iter().all(|t| t.is_finished()) {
        peak = peak.max(threads());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    for t in burst {
        t.await.expect("client task");
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Async workers and ranking threads (one set each per core), the embedder's and the
    // runtime's own few: well under one thread per request.
    let bound = idle + 2 * cores + 4;
    assert!(
        peak <= bound,
        "{BURST} concurrent searches raised the server from {idle} to {peak} threads (bound {bound})"
    );
}
