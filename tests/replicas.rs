//! Two replicas of the team server behind a real load balancer, with real parts only: a
//! throwaway PostgreSQL cluster as the shared state store, the OpenID provider of
//! tests/oidc, two `shortlist serve --http` processes on one read-only index built
//! beforehand, HAProxy (round robin, health checks on `/readyz`, sessions stuck to their
//! replica by `Mcp-Session-Id`) and a recording upstream API.
//!
//! What it proves: stateless (2026-07-28) requests are spread over both replicas, which
//! answer `tools/list` identically; 100 people with their own tokens calling at once lose
//! no request, each person's calls to an API behind the provider carry their own exchanged
//! token (never another's), and every upstream call lands in the one audit log under the
//! right person, whichever replica made it; a session (2025-11-25) works through the balancer because it
//! stays on the replica that holds it; a replica that stops is taken out by the health
//! checks while requests keep succeeding; and no replica writes to the shared index.
//!
//! Needs PostgreSQL, HAProxy and the OpenID provider from ./scripts/setup-test-tools.sh and
//! the model from ./scripts/setup-models.sh; without them it fails saying so.

mod server_common;
mod support;

#[path = "support/haproxy.rs"]
mod haproxy;
#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/postgres.rs"]
mod postgres;

use serde_json::{json, Value};
use server_common::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use support::upstream;

/// People in the load run, each with a token of their own.
const PEOPLE: usize = 100;
/// The audience of the API called with each person's own (exchanged) token.
const HR: &str = "http://127.0.0.1:9/hr";
/// The server's own client secret at the provider, for the token exchange.
const IDP_SECRET: (&str, &str) = ("TEST_IDP_SECRET", "shortlist-server-secret");
/// The HAProxy backend of the replicas.
const BACKEND: &str = "replicas";
const STATELESS: &str = "2026-07-28";
const SESSIONS: &str = "2025-11-25";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn person(i: usize) -> String {
    format!("p{i:03}")
}

/// The balancer's config: round robin over the replicas, each checked on `/readyz` every
/// 300 ms and out after two failures; a session id the replica answered with sticks the
/// following requests of that session to it; a connection a replica refuses or drops
/// without answering is retried on the other one.
fn haproxy_config(lb: u16, stats: u16, replicas: &[u16]) -> String {
    let servers: String = replicas
        .iter()
        .enumerate()
        .map(|(i, p)| format!("    server r{} 127.0.0.1:{p} check\n", i + 1))
        .collect();
    format!(
        "global
    maxconn 4096

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 10s
    timeout tunnel 1h
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response

frontend mcp
    bind 127.0.0.1:{lb}
    default_backend {BACKEND}

backend {BACKEND}
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 300ms fall 2 rise 1
    stick-table type string len 64 size 100k expire 30m
    stick on req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
{servers}
listen stats
    bind 127.0.0.1:{stats}
    stats enable
    stats uri /stats
"
    )
}

/// Every file and folder under `dir` with its size and modification time: what a replica
/// writing to the index would change.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read index folder").flatten() {
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                todo.push(e.path());
            }
            out.insert(e.path(), (meta.len(), meta.modified().expect("mtime")));
        }
        let meta = std::fs::metadata(&d).expect("metadata");
        out.insert(d, (0, meta.modified().expect("mtime")));
    }
    out
}

/// A reply: the HTTP status, the JSON-RPC message (from a JSON body or the last event of an
/// event stream) and the session id header.
struct Reply {
    status: u16,
    message: Value,
    session: Option<String>,
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> Result<Reply, String> {
    let mut req = http
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.map_err(|e| format!("POST {url}: {e}"))?;
    let status = res.status().as_u16();
    let session = res
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = res.text().await.map_err(|e| format!("body: {e}"))?;
    let message = serde_json::from_str(&text).ok().or_else(|| {
        text.lines()
            .rev()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
    });
    Ok(Reply {
        status,
        message: message.unwrap_or(Value::String(text)),
        session,
    })
}

/// One 2026-07-28 request (no session: the protocol version and client facts ride in
/// `_meta` and the `MCP-*` headers); its `result`, or why there is none. A tool result
/// with `isError` is a failure too.
async fn stateless(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    method: &str,
    mut params: Value,
) -> Result<Value, String> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "replicas-test", "version": "1"}
    });
    let name = params["name"].as_str().map(str::to_string);
    let mut headers = vec![("mcp-protocol-version", STATELESS), ("mcp-method", method)];
    if let Some(n) = &name {
        headers.push(("mcp-name", n));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = post(http, url, token, &headers, &body).await?;
    let result = &reply.message["result"];
    if reply.status != 200 || !result.is_object() {
        return Err(format!(
            "{method}: HTTP {}: {}",
            reply.status, reply.message
        ));
    }
    if result["isError"] == true {
        return Err(format!("{method} {name:?}: tool error: {result}"));
    }
    Ok(result.clone())
}

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// What one person does in the load run: list, search, and two upstream calls through
/// `call_tool` whose arguments name the person, so the upstream can tell the calls apart.
/// Each request's latency and outcome.
async fn person_session(
    url: String,
    token: String,
    i: usize,
) -> Vec<(Duration, Result<(), String>)> {
    let http = reqwest::Client::new();
    let steps = [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "find_tools", "arguments": {"query": "who played in a movie", "k": 3}}),
        ),
        (
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "tmdb__getMovieCredits",
                   "arguments": {"movie_id": 1000 + i}}}),
        ),
        (
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "hr__searchMovie",
                   "arguments": {"query": person(i)}}}),
        ),
    ];
    let mut out = Vec::new();
    for (method, params) in steps {
        let t = Instant::now();
        let r = stateless(&http, &url, &token, method, params).await;
        let r = r.and_then(|res| match method {
            "tools/list" if !tool_names(&res).contains(&"find_tools".to_string()) => {
                Err(format!("no find_tools in {res}"))
            }
            _ => Ok(()),
        });
        out.push((t.elapsed(), r));
    }
    out
}

/// A replica's peak resident memory so far, in MiB (0 when unreadable).
fn peak_mib(server: &HttpServer) -> u64 {
    let pid = server.child.id().unwrap_or(0);
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_behind_haproxy_share_one_store() {
    haproxy::binary();
    let pg = tokio::task::spawn_blocking(postgres::Postgres::start)
        .await
        .expect("start postgres");
    let db = pg.database("shortlist");

    // The balancer's port is chosen first: its /mcp URL is the audience of every token.
    let (lb, stats_port) = (free_port(), free_port());
    let audience = format!("http://127.0.0.1:{lb}/mcp");
    let users: String = (0..PEOPLE).map(|i| format!("{}=;", person(i))).collect();
    let idp = oidc::Provider::start_with_users(&audience, &users).await;
    let up = upstream::start().await;
    // Two APIs on the same upstream: `tmdb` with the catalog's own credential, `hr` with
    // each person's own token, exchanged at the provider for the caller (RFC 8693).
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url())],
        &format!(
            "\n[[api]]\nid = \"hr\"\nspec = {:?}\nbase_url = {:?}\ntimeout_secs = 5\nallow_private = true\n\
             auth = {{ kind = \"token_exchange\", token_url = \"{}/token\", \
             client_id = \"shortlist-server\", client_secret_env = \"TEST_IDP_SECRET\", \
             audience = {HR:?}, scope = \"mcp\" }}\n\
             \n[auth]\nissuer = {:?}\naudience = {audience:?}\nrequired_scopes = [\"mcp\"]\n",
            repo().join("tests/fixtures/upstream_tmdb.json"),
            up.base_url(),
            idp.issuer,
            idp.issuer
        ),
    );

    // One index, built once; the replicas only read it.
    let out = tokio::process::Command::new(shortlist_bin())
        .args(["index", "-c"])
        .arg(&fx.config)
        .output()
        .await
        .expect("run shortlist index");
    assert!(
        out.status.success(),
        "shortlist index: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index_dir = fx.dir.path().join("index");
    let index_before = snapshot(&index_dir);

    // Two replicas on the same config, index and PostgreSQL database, started together (the
    // store's schema is migrated once, under an advisory lock). No catalog watch: a change
    // to a shared index is rolled out by restarting the replicas. On SIGTERM a replica
    // keeps serving for 2 s with /readyz at 503: the balancer's checks (every 300 ms, out
    // after 2 failures) take it out before its listener closes.
    let serve_args = [
        "--state",
        db.as_str(),
        "--watch-secs",
        "0",
        "--drain-secs",
        "2",
    ];
    let (r1, r2) = tokio::join!(
        HttpServer::start_with_env(&fx, &serve_args, &[IDP_SECRET]),
        HttpServer::start_with_env(&fx, &serve_args, &[IDP_SECRET])
    );
    for r in [&r1, &r2] {
        assert!(
            r.startup.contains("state store: postgres://"),
            "{}",
            r.startup
        );
    }
    let proxy = haproxy::Haproxy::start(
        &haproxy_config(lb, stats_port, &[r1.port, r2.port]),
        stats_port,
    )
    .await;
    proxy
        .wait_status(BACKEND, &["r1", "r2"], "UP", Duration::from_secs(10))
        .await;

    // The same tools/list from either replica, asked directly, and through the balancer.
    let http = reqwest::Client::new();
    let token = idp.token(&person(0), "mcp", None).await;
    let mut lists = Vec::new();
    for url in [
        r1.url("/mcp"),
        r2.url("/mcp"),
        audience.clone(),
        audience.clone(),
    ] {
        lists.push(
            stateless(&http, &url, &token, "tools/list", json!({}))
                .await
                .unwrap_or_else(|e| panic!("tools/list at {url}: {e}")),
        );
    }
    assert_eq!(
        tool_names(&lists[0]),
        ["find_tools", "describe_tool", "call_tool"],
        "{}",
        lists[0]
    );
    for l in &lists[1..] {
        assert_eq!(l, &lists[0], "tools/list differs between replicas");
    }

    // The load run: every person at once, each with their own token and connection.
    let tokens = futures::future::join_all((0..PEOPLE).map(|i| {
        let idp = &idp;
        async move { idp.token(&person(i), "mcp", None).await }
    }))
    .await;
    let before = proxy.servers(BACKEND).await;
    let started = Instant::now();
    let runs: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| tokio::spawn(person_session(audience.clone(), t.clone(), i)))
        .collect();
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    for (i, run) in runs.into_iter().enumerate() {
        for (took, r) in run.await.expect("client task") {
            latencies.push(took);
            if let Err(e) = r {
                failures.push(format!("{}: {e}", person(i)));
            }
        }
    }
    let took = started.elapsed();
    let after = proxy.servers(BACKEND).await;
    let sent = latencies.len();
    assert_eq!(sent, PEOPLE * 4);
    assert!(
        failures.is_empty(),
        "{} of {sent} requests failed: {:#?}\nreplica 1: {}\nreplica 2: {}",
        failures.len(),
        &failures[..failures.len().min(10)],
        r1.log(),
        r2.log()
    );
    latencies.sort();
    let served: Vec<u64> = ["r1", "r2"]
        .iter()
        .map(|s| after[*s].http_2xx - before[*s].http_2xx)
        .collect();
    eprintln!(
        "replicas: {PEOPLE} people x 4 requests = {sent} requests (tools/list, find_tools, \
         2 call_tool upstream) through HAProxy to 2 replicas in {:.2} s ({:.0} requests/s); \
         latency p50 {} ms, p95 {} ms, max {} ms; answered by r1 {}, r2 {}",
        took.as_secs_f64(),
        sent as f64 / took.as_secs_f64(),
        percentile(&latencies, 50).as_millis(),
        percentile(&latencies, 95).as_millis(),
        latencies[sent - 1].as_millis(),
        served[0],
        served[1]
    );
    assert_eq!(
        served[0] + served[1],
        sent as u64,
        "the balancer's count of answers differs from the requests sent: {before:?} -> {after:?}"
    );
    for (name, n) in ["r1", "r2"].iter().zip(&served) {
        assert!(
            *n as usize >= sent * 3 / 10,
            "round robin left {name} with {n} of {sent} requests"
        );
    }

    // Each person's calls reached the upstream exactly once, with the catalog's credential
    // and never an MCP access token.
    let got = up.received();
    let mut credits: HashMap<String, usize> = HashMap::new();
    let mut searches: HashMap<String, usize> = HashMap::new();
    let hr = idp.api_verifier(HR, &[]);
    for r in &got {
        if r.path == "/3/search/movie" {
            // Each person's own token: the API sees exactly the person the call names.
            let token = r
                .header("authorization")
                .and_then(|h| h.strip_prefix("Bearer "))
                .expect("a bearer token");
            let seen = hr.verify(token).await.expect("the API accepts the token");
            assert_eq!(
                r.query.as_deref(),
                Some(format!("query={}", seen.sub).as_str()),
                "a person was served another's upstream token"
            );
        } else {
            assert_eq!(
                r.header("authorization"),
                Some(format!("Bearer {TOKEN}").as_str()),
                "{r:?}"
            );
        }
        if let Some(id) = r
            .path
            .strip_prefix("/3/movie/")
            .and_then(|p| p.strip_suffix("/credits"))
        {
            *credits.entry(id.to_string()).or_default() += 1;
        } else if r.path == "/3/search/movie" {
            *searches
                .entry(r.query.clone().unwrap_or_default())
                .or_default() += 1;
        }
    }
    assert_eq!(got.len(), 2 * PEOPLE, "upstream requests");
    for (i, t) in tokens.iter().enumerate() {
        assert_eq!(
            credits.get(&(1000 + i).to_string()),
            Some(&1),
            "{}",
            person(i)
        );
        assert_eq!(
            searches.get(&format!("query={}", person(i))),
            Some(&1),
            "{}: {searches:?}",
            person(i)
        );
        assert!(
            !got.iter()
                .any(|r| r.headers.iter().any(|(_, v)| v.contains(t.as_str()))),
            "an MCP access token reached the upstream"
        );
    }

    // Both replicas wrote into one audit log, each call under the person who made it.
    let store =
        shortlist::store::Store::open(&shortlist::store::Location::Postgres(db.clone()), None)
            .await
            .expect("open the shared store");
    let audit = store.audit(None, 10_000).await.expect("read the audit log");
    assert_eq!(audit.len(), 2 * PEOPLE, "audit rows: {audit:?}");
    let mut per_person: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in &audit {
        assert_eq!(e.status, 200, "{e:?}");
        per_person.entry(&e.sub).or_default().push(&e.endpoint);
    }
    assert_eq!(per_person.len(), PEOPLE, "{per_person:?}");
    for i in 0..PEOPLE {
        let mut calls = per_person
            .get(person(i).as_str())
            .cloned()
            .unwrap_or_default();
        calls.sort();
        assert_eq!(
            calls,
            ["hr__searchMovie", "tmdb__getMovieCredits"],
            "{}",
            person(i)
        );
    }
    eprintln!(
        "replicas: {} audit rows from both replicas in one PostgreSQL store, 2 per person; \
         peak memory (VmHWM) r1 {} MiB, r2 {} MiB",
        audit.len(),
        peak_mib(&r1),
        peak_mib(&r2)
    );

    // A session (2025-11-25) lives in the replica that created it: the balancer keeps its
    // requests there by the Mcp-Session-Id the replica answered with.
    let before = proxy.servers(BACKEND).await;
    let init = post(
        &http,
        &audience,
        &token,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": SESSIONS, "capabilities": {},
            "clientInfo": {"name": "replicas-session", "version": "1"}}}),
    )
    .await
    .expect("initialize");
    assert_eq!(init.status, 200, "{}", init.message);
    let session = init.session.expect("an Mcp-Session-Id");
    let with_session = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", SESSIONS),
    ];
    let note = post(
        &http,
        &audience,
        &token,
        &with_session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .expect("initialized");
    assert_eq!(note.status, 202, "{}", note.message);
    for id in 2..8 {
        let r = post(
            &http,
            &audience,
            &token,
            &with_session,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        )
        .await
        .expect("tools/list in the session");
        assert_eq!(r.status, 200, "request {id} of the session: {}", r.message);
        assert!(
            tool_names(&r.message["result"]).contains(&"find_tools".to_string()),
            "{}",
            r.message
        );
    }
    let after = proxy.servers(BACKEND).await;
    let mut moved: Vec<u64> = ["r1", "r2"]
        .iter()
        .map(|s| after[*s].http_2xx - before[*s].http_2xx)
        .collect();
    moved.sort();
    assert_eq!(
        moved,
        [0, 8],
        "the session's 8 requests did not stay on one replica"
    );
    // Without the balancer's stickiness half of them would fail: the other replica does not
    // know the session.
    let mut direct = Vec::new();
    for r in [&r1, &r2] {
        let reply = post(
            &http,
            &r.url("/mcp"),
            &token,
            &with_session,
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
        )
        .await
        .expect("tools/list at a replica");
        direct.push(reply.status);
    }
    direct.sort();
    assert_eq!(direct[0], 200, "{direct:?}");
    assert!(
        (400..500).contains(&direct[1]),
        "the replica without the session accepted it: {direct:?}"
    );

    // A replica stops (SIGTERM, as Kubernetes or systemd stop it) while requests flow: its
    // /readyz turns 503, the health checks take it out of the balancer, and no request
    // fails, neither those it was answering nor those sent meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut loopers = Vec::new();
    for token in tokens.iter().take(4) {
        let (stop, ok, failed, errors) = (stop.clone(), ok.clone(), failed.clone(), errors.clone());
        let (url, token) = (audience.clone(), token.clone());
        loopers.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            while !stop.load(Ordering::Relaxed) {
                match stateless(&http, &url, &token, "tools/list", json!({})).await {
                    Ok(_) => ok.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        errors.lock().unwrap().push(e);
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut r2 = r2;
    let pid = r2.child.id().expect("replica 2 pid") as i32;
    // SAFETY: a signal to a child this test spawned and has not reaped.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    proxy
        .wait_status(BACKEND, &["r2"], "DOWN", Duration::from_secs(10))
        .await;
    // Taken out because /readyz said so, while it still listened: not by a refused
    // connection.
    let down = proxy
        .log()
        .lines()
        .find(|l| l.contains("replicas/r2 is DOWN"))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(down.contains("503"), "{down}");
    // Requests keep flowing until the replica has exited.
    let exited = tokio::time::timeout(Duration::from_secs(10), r2.child.wait())
        .await
        .expect("replica 2 did not exit after SIGTERM")
        .expect("wait");
    stop.store(true, Ordering::Relaxed);
    for l in loopers {
        l.await.expect("looper");
    }
    assert!(
        exited.success(),
        "replica 2 exited with {exited}: {}",
        r2.log()
    );
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("replicas: {ok} requests while replica 2 stopped, {failed} failed");
    assert_eq!(
        failed,
        0,
        "requests failed while a replica stopped: {:?}\nhaproxy: {}",
        errors.lock().unwrap(),
        proxy.log()
    );
    assert!(ok > 10, "too few requests during the stop: {ok}");
    let before = proxy.servers(BACKEND).await;
    for _ in 0..20 {
        stateless(&http, &audience, &token, "tools/list", json!({}))
            .await
            .expect("tools/list with one replica left");
    }
    let after = proxy.servers(BACKEND).await;
    assert_eq!(after["r1"].http_2xx - before["r1"].http_2xx, 20);
    assert_eq!(after["r2"].http_2xx, before["r2"].http_2xx);

    // Nothing in the shared index was written by a replica.
    assert_eq!(
        snapshot(&index_dir),
        index_before,
        "a replica wrote to the index"
    );
    drop(pg);
}
