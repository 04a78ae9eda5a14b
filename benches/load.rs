//! Load benchmark: `cargo bench --bench load`.
//!
//! Starts the release `shortlist serve --http 127.0.0.1:0` on the fixture catalog
//! (`tests/fixtures/upstream_tmdb.json`) pointed at the recording upstream of the tests
//! (`tests/support/upstream.rs`, in this process, on 127.0.0.1), then runs `CLIENTS`
//! concurrent MCP clients, each doing `ROUNDS` rounds of `find_tools` + a call of the found
//! `searchMovie` tool (which reaches the upstream). Half the clients use 2025-11-25
//! sessions (initialize, rounds, DELETE), half stateless 2026-07-28 requests, each with its
//! own credential so the server keeps a tool set per client.
//!
//! Reported: throughput, p50/p99 per request kind, protocol errors (HTTP failures, JSON-RPC
//! errors, missing results: the target is zero), tool errors, and the server's RSS
//! (`/proc/<pid>/status`) before, at peak during, and after the clients stop and their state
//! expires (`--client-idle-secs`). Everything is bounded: fixed request counts, a per-request
//! timeout and an overall deadline. Figures go to stdout as Markdown; `docs/benchmarks.md`
//! ("Load") records a run. The clients are raw JSON-RPC over reqwest, as in
//! `benches/mcp_server.rs`.

#[allow(dead_code)]
#[path = "../tests/support/upstream.rs"]
mod upstream;

use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

const CLIENTS: usize = 200;
const ROUNDS: usize = 50;
const IDLE_SECS: u64 = 5;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const DEADLINE: Duration = Duration::from_secs(20 * 60);
const TOKEN_ENV: &str = "SHORTLIST_LOAD_TMDB_TOKEN";
const QUERIES: [&str; 5] = [
    "search for a movie by its title",
    "find films matching a name",
    "look up a movie called Fight Club",
    "movie search by keyword",
    "search movies",
];

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        tokio::time::timeout(DEADLINE, run())
            .await
            .expect("the load benchmark passed its deadline")
    });
}

#[derive(Default)]
struct Tally {
    find: Vec<Duration>,
    call: Vec<Duration>,
    protocol_errors: Vec<String>,
    tool_errors: usize,
    /// find_tools answers whose top 3 did not include searchMovie (a ranking miss, not an
    /// error: the round still calls searchMovie).
    misses: usize,
}

async fn run() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let up = upstream::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("catalog.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n\n[[api]]\nid = \"tmdb\"\nspec = {:?}\nbase_url = {:?}\n\
             timeout_secs = 30\nauth = {{ kind = \"bearer\", token_env = {TOKEN_ENV:?} }}\n",
            dir.path().join("index"),
            root.join("tests/fixtures/upstream_tmdb.json"),
            up.base_url()
        ),
    )
    .expect("write catalog.toml");

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_shortlist"))
        .args(["serve", "-c"])
        .arg(&config)
        .args(["--http", "127.0.0.1:0", "--client-idle-secs"])
        .arg(IDLE_SECS.to_string())
        .env(TOKEN_ENV, "load-token")
        .env("RUST_LOG", "shortlist=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn shortlist serve --http");
    let pid = child.id().expect("server pid");
    let forgotten = Arc::new(AtomicUsize::new(0));
    let url = {
        let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines
                .next_line()
                .await
                .expect("stderr")
                .expect("the server exited before serving");
            if let Some(rest) = line.split("serving MCP on ").nth(1) {
                break rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
        };
        let f = Arc::clone(&forgotten);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("idle clients forgotten") {
                    if let Some(n) = line
                        .split("forgotten=")
                        .nth(1)
                        .and_then(|s| s.split_whitespace().next())
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        f.fetch_add(n, Ordering::SeqCst);
                    }
                }
            }
        });
        url
    };
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("HTTP client");

    let rss_start = rss_kib(pid);
    // Warm-up: one client, a few rounds (first embeddings, connection pool, lazy statics).
    let mut warm = Tally::default();
    client(&http, &url, usize::MAX, 5, &mut warm).await;
    assert!(
        warm.protocol_errors.is_empty(),
        "{:?}",
        warm.protocol_errors
    );
    tokio::time::sleep(Duration::from_secs(IDLE_SECS + 3)).await;
    let rss_before = rss_kib(pid);

    // Peak RSS sampler.
    let peak = Arc::new(AtomicUsize::new(rss_before));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (Arc::clone(&peak), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                peak.fetch_max(rss_kib(pid), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    // The warm-up client may already have been swept: count only the load's clients.
    forgotten.store(0, Ordering::SeqCst);
    let upstream_before = up.received().len();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let (http, url, tally) = (http.clone(), url.clone(), Arc::clone(&tally));
        tasks.push(tokio::spawn(async move {
            let mut t = Tally::default();
            client(&http, &url, i, ROUNDS, &mut t).await;
            let mut all = tally.lock().expect("tally");
            all.find.extend(t.find);
            all.call.extend(t.call);
            all.protocol_errors.extend(t.protocol_errors);
            all.tool_errors += t.tool_errors;
            all.misses += t.misses;
        }));
    }
    for t in tasks {
        t.await.expect("client task");
    }
    let wall = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let _ = sampler.await;
    let rss_end = rss_kib(pid);

    // State expiry: stateless clients are swept after IDLE_SECS; sessions ended at DELETE.
    let stateless = CLIENTS / 2;
    let expiry_started = Instant::now();
    while forgotten.load(Ordering::SeqCst) < stateless
        && expiry_started.elapsed() < Duration::from_secs(IDLE_SECS * 6)
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let expired_in = expiry_started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_after = rss_kib(pid);
    let swept = forgotten.load(Ordering::SeqCst);
    let upstream_calls = up.received().len() - upstream_before;
    let _ = child.kill().await;

    let t = tally.lock().expect("tally");
    let requests = t.find.len() + t.call.len();
    println!("### Load: {CLIENTS} concurrent clients x {ROUNDS} rounds of find_tools + call\n");
    println!(
        "{} session-era (2025-11-25) and {} stateless (2026-07-28) clients; upstream on 127.0.0.1.\n",
        CLIENTS - stateless,
        stateless
    );
    println!("| metric | value |");
    println!("|---|---|");
    println!("| wall time | {:.1} s |", wall.as_secs_f64());
    println!(
        "| requests (find_tools + calls) | {requests} ({} + {}) |",
        t.find.len(),
        t.call.len()
    );
    println!(
        "| throughput | {:.0} requests/s ({:.0} rounds/s) |",
        requests as f64 / wall.as_secs_f64(),
        t.call.len() as f64 / wall.as_secs_f64()
    );
    println!(
        "| find_tools p50 / p99 | {} / {} |",
        ms(percentile(&t.find, 0.50)),
        ms(percentile(&t.find, 0.99))
    );
    println!(
        "| call (upstream round trip) p50 / p99 | {} / {} |",
        ms(percentile(&t.call, 0.50)),
        ms(percentile(&t.call, 0.99))
    );
    println!("| protocol errors | {} |", t.protocol_errors.len());
    println!("| tool errors | {} |", t.tool_errors);
    println!(
        "| find_tools answers without searchMovie in the top 3 | {} |",
        t.misses
    );
    println!(
        "| upstream requests received | {upstream_calls} (expected {}) |",
        CLIENTS * ROUNDS
    );
    println!("| server RSS at start | {} |", mib(rss_start));
    println!(
        "| server RSS before (after warm-up) | {} |",
        mib(rss_before)
    );
    println!(
        "| server RSS peak during | {} |",
        mib(peak.load(Ordering::SeqCst))
    );
    println!("| server RSS when clients stop | {} |", mib(rss_end));
    println!(
        "| stateless clients expired (idle {IDLE_SECS} s) | {swept} of {stateless} in {:.1} s |",
        expired_in.as_secs_f64()
    );
    println!("| server RSS after expiry | {} |", mib(rss_after));
    for e in t.protocol_errors.iter().take(10) {
        eprintln!("protocol error: {e}");
    }
    assert!(
        t.protocol_errors.is_empty(),
        "{} protocol errors",
        t.protocol_errors.len()
    );
    assert_eq!(
        requests,
        2 * CLIENTS * ROUNDS,
        "every request must be answered"
    );
}

/// One client: `rounds` rounds of find_tools + a searchMovie call. Even `i`: a 2025-11-25
/// session; odd `i`: stateless 2026-07-28 requests with credential `client-i`.
async fn client(http: &reqwest::Client, url: &str, i: usize, rounds: usize, t: &mut Tally) {
    let session_era = i % 2 == 0;
    let mut headers: Vec<(&str, String)> = Vec::new();
    if session_era {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "load", "version": "0"}}});
        let resp = match post(http, url, &init, &[]).await {
            Ok(r) => r,
            Err(e) => return t.protocol_errors.push(format!("initialize: {e}")),
        };
        let Some(session) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
        else {
            return t.protocol_errors.push("initialize: no session id".into());
        };
        let _ = resp.text().await;
        headers.push(("mcp-session-id", session));
        headers.push(("mcp-protocol-version", "2025-11-25".into()));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        if let Err(e) = post(http, url, &note, &headers).await {
            return t.protocol_errors.push(format!("initialized: {e}"));
        }
    } else {
        headers.push(("authorization", format!("Bearer client-{i}")));
    }
    for round in 0..rounds {
        let id = 2 * round as u64 + 1;
        let find = json!({"name": "find_tools",
            "arguments": {"query": QUERIES[(i + round) % QUERIES.len()], "k": 3}});
        let (res, took) = rpc(http, url, id, &find, session_era, &headers).await;
        t.find.push(took);
        let name = match res {
            Ok(r) => {
                let text = r["content"][0]["text"].as_str().unwrap_or_default();
                if r["isError"] == true {
                    t.tool_errors += 1;
                } else if !text.contains("searchMovie") {
                    t.misses += 1;
                }
                "searchMovie"
            }
            Err(e) => {
                t.protocol_errors.push(format!("find_tools: {e}"));
                "searchMovie"
            }
        };
        let call = json!({"name": name, "arguments": {"query": "Fight Club", "page": round + 1}});
        let (res, took) = rpc(http, url, id + 1, &call, session_era, &headers).await;
        t.call.push(took);
        match res {
            Ok(r) if r["isError"] == true => t.tool_errors += 1,
            Ok(_) => {}
            Err(e) => t.protocol_errors.push(format!("call: {e}")),
        }
    }
    if session_era {
        let mut r = http.delete(url);
        for (k, v) in &headers {
            r = r.header(*k, v);
        }
        match r.send().await {
            Ok(resp) if resp.status().is_success() => {}
            Ok(resp) => t
                .protocol_errors
                .push(format!("DELETE session: HTTP {}", resp.status())),
            Err(e) => t.protocol_errors.push(format!("DELETE session: {e}")),
        }
    }
}

/// A `tools/call`; returns its result or a protocol error, and the round-trip time.
async fn rpc(
    http: &reqwest::Client,
    url: &str,
    id: u64,
    params: &Value,
    session_era: bool,
    headers: &[(&str, String)],
) -> (Result<Value, String>, Duration) {
    let started = Instant::now();
    let mut params = params.clone();
    let mut headers = headers.to_vec();
    if !session_era {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "0"}});
        headers.push(("mcp-protocol-version", "2026-07-28".into()));
        headers.push(("mcp-method", "tools/call".into()));
        headers.push((
            "mcp-name",
            params["name"].as_str().unwrap_or_default().to_string(),
        ));
    }
    let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let res = match post(http, url, &m, &headers).await {
        Ok(resp) => match resp.text().await {
            Ok(body) => answer(&body, id),
            Err(e) => Err(format!("reading the body: {e}")),
        },
        Err(e) => Err(e),
    };
    (res, started.elapsed())
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
    headers: &[(&str, String)],
) -> Result<reqwest::Response, String> {
    let mut r = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        r = r.header(*k, v);
    }
    let resp = r.send().await.map_err(|e| format!("POST: {e}"))?;
    if resp.status().is_success() {
        Ok(resp)
    } else {
        Err(format!("HTTP {}", resp.status()))
    }
}

/// The result of the JSON-RPC answer with `id` in a JSON or SSE body.
fn answer(body: &str, id: u64) -> Result<Value, String> {
    let v = serde_json::from_str::<Value>(body).ok().or_else(|| {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v["id"] == id)
    });
    match v {
        Some(v) if v["id"] == id && v["result"].is_object() => Ok(v["result"].clone()),
        Some(v) => Err(format!("no result: {}", clip(&v.to_string()))),
        None => Err(format!("no answer with id {id}: {}", clip(body))),
    }
}

fn clip(s: &str) -> String {
    s.chars().take(300).collect()
}

/// VmRSS of a process, in KiB (0 when unreadable).
fn rss_kib(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(kib: usize) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn percentile(v: &[Duration], p: f64) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    if s.is_empty() {
        return Duration::ZERO;
    }
    let i = ((s.len() as f64 - 1.0) * p).round() as usize;
    s[i.min(s.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
