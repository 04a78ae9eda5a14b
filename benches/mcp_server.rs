//! MCP server benchmark: `cargo bench --bench mcp_server`.
//!
//! On the RestBench catalogs (TMDB, Spotify; `datasets/restbench`, or
//! `SHORTLIST_RESTBENCH`), through the real `shortlist serve` binary:
//!
//! - `find_tools` latency over MCP, seen by a client (request written to answer parsed),
//!   over stdio, streamable HTTP with a 2025-11-25 session, and stateless 2026-07-28 HTTP;
//!   p50/p99 over every benchmark query, three rounds, after a warm-up;
//! - the tokens (cl100k, `tiktoken-rs`) of what a client receives: the whole catalog as
//!   tools (`--expose catalog`) versus a top-5 shortlist (the three meta-tools, the five
//!   exposed tools, and the `find_tools` answer that exposed them).
//!
//! `-- --scale` measures only the tokens, on catalogs of many APIs: about 2,000 endpoints
//! of the development suite's real specs (toolbench-dev, then socbench-dev, whole specs until
//! 2,000 endpoints), embedded by the real model, and five renamed copies of them (about
//! 10,000 endpoints), indexed beforehand with pseudo-random vectors so the run does not
//! embed 10,000 texts (the queries are embedded by the real model, ranking is then mostly
//! BM25's; the token counts depend on which five tools come back, not on how well).
//! `SHORTLIST_BIN` runs another `shortlist` binary (an older build, side by side).
//!
//! Figures go to stdout as Markdown; `docs/benchmarks.md` ("MCP server") records a run.
//! The clients here are minimal JSON-RPC writers on purpose: the point is the server's
//! cost, not an SDK's.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "support/stdio_client.rs"]
mod stdio_client;
use std::time::{Duration, Instant};
use stdio_client::StdioClient;

const ROUNDS: usize = 3;
const K: usize = 5;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bench = std::env::var_os("SHORTLIST_RESTBENCH")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("datasets/restbench"));
    let tokens =
        |v: &Value| shortlist::server::tokens::count_text(&compact(v)).expect("cl100k tokenizer");
    if std::env::args().any(|a| a == "--scale") {
        scale::run(root, &tokens);
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    let mut latency_rows = Vec::new();
    let mut token_rows = Vec::new();
    for name in ["tmdb", "spotify"] {
        let spec = bench.join(format!("{name}_oas.json"));
        let queries = read_queries(&bench.join(format!("{name}_queries.jsonl")));
        assert!(
            spec.is_file() && !queries.is_empty(),
            "RestBench files missing in {}",
            bench.display()
        );
        let data = tempfile::tempdir().expect("temp dir");
        let base = vec![
            spec.display().to_string(),
            "--data-dir".into(),
            data.path().display().to_string(),
        ];

        let (n, whole, meta_t, five, answer) = token_counts(&base, &queries, &tokens);
        let mut stdio = Stdio1::start(&base, &["--max-tools", "5"]);
        let stdio_lat = time_rounds(&queries, |q| {
            stdio.request("tools/call", find_args(q));
        });
        drop(stdio);

        let (session_lat, stateless_lat) = runtime.block_on(http_latencies(&base, &queries));

        token_rows.push(format!(
            "| {name} | {n} | {whole} | {meta_t} | {five:.0} | {answer:.0} | {:.0} | {:.1}x |",
            meta_t as f64 + five + answer,
            whole as f64 / (meta_t as f64 + five + answer),
        ));
        for (transport, lat) in [
            ("stdio", &stdio_lat),
            ("HTTP, 2025-11-25 session", &session_lat),
            ("HTTP, 2026-07-28 stateless", &stateless_lat),
        ] {
            latency_rows.push(format!(
                "| {name} | {transport} | {} | {} | {} |",
                lat.len(),
                ms(percentile(lat, 0.50)),
                ms(percentile(lat, 0.99)),
            ));
        }
    }

    println!("### find_tools latency over MCP (k={K}, client round trip)\n");
    println!("| catalog | transport | calls | p50 | p99 |");
    println!("|---|---|---|---|---|");
    latency_rows.iter().for_each(|r| println!("{r}"));
    println!("\n### Tokens a client receives (cl100k)\n");
    println!("| catalog | endpoints | whole catalog as tools | 3 meta-tools | 5 shortlisted tools (mean) | find_tools answer (mean) | top-5 total | ratio |");
    println!("|---|---|---|---|---|---|---|---|");
    token_rows.iter().for_each(|r| println!("{r}"));
}

/// The `shortlist` binary under test: this build's, or `SHORTLIST_BIN`.
fn shortlist_bin() -> PathBuf {
    std::env::var_os("SHORTLIST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_shortlist")))
}

/// Client-side token counts of one catalog: (endpoints, whole catalog as tools, meta-tools,
/// mean five shortlisted tools, mean find_tools answer), over `queries`.
fn token_counts(
    base: &[String],
    queries: &[String],
    tokens: &dyn Fn(&Value) -> usize,
) -> (usize, usize, usize, f64, f64) {
    let mut all = Stdio1::start(base, &["--expose", "catalog"]);
    let listed = all.request("tools/list", json!({}));
    let tools = listed["tools"].as_array().cloned().unwrap_or_default();
    let endpoint_tools: Vec<Value> = tools.iter().skip(3).cloned().collect();
    let whole = tokens(&Value::Array(endpoint_tools.clone()));
    drop(all);
    // The cap of 5 makes the list after each find_tools exactly the three meta-tools plus
    // that query's five.
    let mut stdio = Stdio1::start(base, &["--max-tools", "5"]);
    let (mut meta_t, mut five_t, mut answer_t) = (0usize, Vec::new(), Vec::new());
    for q in queries {
        let r = stdio.request("tools/call", find_args(q));
        answer_t.push(tokens(&Value::String(result_text(&r))));
        let l = stdio.request("tools/list", json!({}));
        let t = l["tools"].as_array().cloned().unwrap_or_default();
        meta_t = tokens(&Value::Array(t.iter().take(3).cloned().collect()));
        five_t.push(tokens(&Value::Array(t.iter().skip(3).cloned().collect())));
    }
    (
        endpoint_tools.len(),
        whole,
        meta_t,
        mean(&five_t),
        mean(&answer_t),
    )
}

mod scale {
    use super::*;
    use shortlist::catalog::Catalog;
    use shortlist::index::doc_text::DocVariant;
    use shortlist::index::vectors::TextSeeded;
    use shortlist::index::{catalog_index, Embedder, EmbedderConfig};

    /// Queries per catalog.
    const QUERIES: usize = 40;

    pub fn run(root: &Path, tokens: &dyn Fn(&Value) -> usize) {
        let work = tempfile::tempdir().expect("temp dir");
        let two = work.path().join("dev2000");
        let ten = work.path().join("dev10000");
        std::fs::create_dir_all(&two).expect("mkdir");
        std::fs::create_dir_all(&ten).expect("mkdir");
        let mut total = 0;
        'pick: for set in ["toolbench-dev", "socbench-dev"] {
            let mut files: Vec<PathBuf> =
                std::fs::read_dir(root.join("datasets").join(set).join("specs"))
                    .expect("dev specs")
                    .flatten()
                    .map(|e| e.path())
                    .collect();
            files.sort();
            for f in files {
                if total >= 2000 {
                    break 'pick;
                }
                let n = Catalog::load_paths(std::slice::from_ref(&f))
                    .endpoints
                    .len();
                if n == 0 {
                    continue;
                }
                total += n;
                let name = format!(
                    "{}_{}",
                    &set[..2],
                    f.file_name().and_then(|n| n.to_str()).unwrap_or("spec")
                );
                std::fs::copy(&f, two.join(&name)).expect("copy spec");
                for c in 0..5 {
                    std::fs::copy(&f, ten.join(format!("c{c}{name}"))).expect("copy spec");
                }
            }
        }
        let queries: Vec<String> = read_queries(&root.join("datasets/toolbench-dev/queries.jsonl"))
            .into_iter()
            .take(QUERIES)
            .collect();
        println!("| catalog | APIs | endpoints | whole catalog as tools | 3 meta-tools | 5 shortlisted tools (mean) | find_tools answer (mean) | top-5 total | share of the whole |");
        println!("|---|---|---|---|---|---|---|---|---|");
        for (label, dir, synthetic) in [
            ("dev suite, real vectors", &two, false),
            ("5 copies, synthetic vectors", &ten, true),
        ] {
            if synthetic && std::env::var_os("SHORTLIST_BIN").is_some() {
                // Another build reads another index format; it would embed 10,000 texts.
                continue;
            }
            let data = work
                .path()
                .join(format!("index-{}", dir.display().to_string().len()));
            let apis = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
            if synthetic {
                let embedder = Embedder::load(&EmbedderConfig::locate()).expect("model");
                let catalog = Catalog::load_paths(std::slice::from_ref(dir));
                catalog_index::build(
                    &catalog,
                    &data,
                    &TextSeeded(&embedder),
                    DocVariant::default(),
                    |_, _| {},
                )
                .expect("index");
            }
            let base = vec![
                dir.display().to_string(),
                "--data-dir".into(),
                data.display().to_string(),
            ];
            let (n, whole, meta, five, answer) = token_counts(&base, &queries, tokens);
            let top = meta as f64 + five + answer;
            println!(
                "| {label} | {apis} | {n} | {whole} | {meta} | {five:.0} | {answer:.0} | {top:.0} | {:.2}% |",
                100.0 * top / whole as f64
            );
        }
    }
}

/// `find_tools` call parameters.
fn find_args(q: &str) -> Value {
    json!({"name": "find_tools", "arguments": {"query": q, "k": K}})
}

/// Times `f` on every query, `ROUNDS` times, after five warm-up calls.
fn time_rounds(queries: &[String], mut f: impl FnMut(&str)) -> Vec<Duration> {
    queries.iter().take(5).for_each(|q| f(q));
    let mut out = Vec::new();
    for _ in 0..ROUNDS {
        for q in queries {
            let t = Instant::now();
            f(q);
            out.push(t.elapsed());
        }
    }
    out
}

/// One `shortlist serve` over stdio with a newline-delimited JSON-RPC client.
/// `shortlist serve BASE EXTRA` over stdio.
struct Stdio1;

impl Stdio1 {
    fn start(base: &[String], extra: &[&str]) -> StdioClient {
        StdioClient::start(
            Command::new(shortlist_bin())
                .arg("serve")
                .args(base)
                .args(extra)
                .stderr(Stdio::inherit()),
        )
    }
}

/// `find_tools` latency over HTTP: one 2025-11-25 session, then stateless 2026-07-28
/// requests (each self-contained, as that era wants).
async fn http_latencies(base: &[String], queries: &[String]) -> (Vec<Duration>, Vec<Duration>) {
    let mut child = tokio::process::Command::new(shortlist_bin())
        .arg("serve")
        .args(base)
        .args(["--max-tools", "5", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn shortlist serve --http");
    let url = {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let url = loop {
            let line = lines
                .next_line()
                .await
                .expect("stderr")
                .expect("server started");
            if let Some(rest) = line.split("serving MCP on ").nth(1) {
                break rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        url
    };
    let http = reqwest::Client::new();

    // 2025-11-25: initialize, keep the session id.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}});
    let resp = post(&http, &url, &init, &[]).await;
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("session id")
        .to_string();
    let _ = resp.text().await;
    let sh = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = post(&http, &url, &initialized, &sh).await.text().await;
    let mut id = 0u64;
    let mut session_lat = Vec::new();
    let mut stateless_lat = Vec::new();
    for (era, out) in [
        ("session", &mut session_lat),
        ("stateless", &mut stateless_lat),
    ] {
        for round in 0..=ROUNDS {
            for q in queries.iter().take(if round == 0 { 5 } else { usize::MAX }) {
                id += 1;
                let t = Instant::now();
                let v = if era == "session" {
                    let m = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": find_args(q)});
                    answer(post(&http, &url, &m, &sh).await, id).await
                } else {
                    let mut p = find_args(q);
                    p["_meta"] = json!({
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}});
                    let m =
                        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": p});
                    let h = [
                        ("mcp-protocol-version", "2026-07-28"),
                        ("mcp-method", "tools/call"),
                        ("mcp-name", "find_tools"),
                    ];
                    answer(post(&http, &url, &m, &h).await, id).await
                };
                if round > 0 {
                    out.push(t.elapsed());
                }
                assert_eq!(v["result"]["isError"], false, "{v}");
            }
        }
    }
    (session_lat, stateless_lat)
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut r = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let resp = r.send().await.expect("POST");
    assert!(resp.status().is_success(), "HTTP {}", resp.status());
    resp
}

/// The JSON-RPC answer with `id` from a JSON or SSE response body.
async fn answer(resp: reqwest::Response, id: u64) -> Value {
    let body = resp.text().await.expect("body");
    if let Ok(v) = serde_json::from_str::<Value>(&body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no answer with id {id} in {body}"))
}

fn result_text(result: &Value) -> String {
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

/// A value as a client would put it in the model's context: compact JSON (a text stays
/// itself).
fn compact(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn read_queries(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(String::from))
        .collect()
}

fn mean(v: &[usize]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<usize>() as f64 / v.len() as f64
    }
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
