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
//! errors, missing results: the target is zero), tool errors, and the server's RSS and
//! thread count (`/proc/<pid>/status`) before, at peak during, and after the clients stop
//! and their state expires (`--client-idle-secs`), for `WAVES` identical waves (a second
//! wave tells memory that is reused from memory that grows), then once more after a quiet
//! `SETTLE_SECS`. Everything is bounded: fixed request counts, a per-request
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
const WAVES: usize = 2;
const SETTLE_SECS: u64 = 15;
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

    let rss_start = Sample::take(pid);
    // Warm-up: one client, a few rounds (first embeddings, connection pool, lazy statics).
    let mut warm = Tally::default();
    client(&http, &url, usize::MAX, 5, &mut warm).await;
    assert!(
        warm.protocol_errors.is_empty(),
        "{:?}",
        warm.protocol_errors
    );
    tokio::time::sleep(Duration::from_secs(IDLE_SECS + 3)).await;
    let before = Sample::take(pid);

    // Two identical waves: the second tells a plateau (memory reused) from growth (a leak).
    let mut waves = Vec::new();
    for _ in 0..WAVES {
        waves.push(wave(&http, &url, pid, &forgotten, &up).await);
    }
    // Past tokio's blocking-thread keep-alive (10 s) and another sweep: what stays for good.
    tokio::time::sleep(Duration::from_secs(SETTLE_SECS)).await;
    let settled = Sample::take(pid);
    let _ = child.kill().await;

    println!("### Load: {CLIENTS} concurrent clients x {ROUNDS} rounds of find_tools + call, {WAVES} waves\n");
    println!(
        "{} session-era (2025-11-25) and {} stateless (2026-07-28) clients per wave; upstream on 127.0.0.1.\n",
        CLIENTS - CLIENTS / 2,
        CLIENTS / 2
    );
    let cols: String = (1..=waves.len()).map(|i| format!(" wave {i} |")).collect();
    println!("| metric |{cols}");
    println!("|---|{}", "---|".repeat(waves.len()));
    let row = |name: &str, f: &dyn Fn(&Wave) -> String| {
        let cells: String = waves.iter().map(|w| format!(" {} |", f(w))).collect();
        println!("| {name} |{cells}");
    };
    row("wall time", &|w| format!("{:.1} s", w.wall.as_secs_f64()));
    row("requests (find_tools + calls)", &|w| {
        format!(
            "{} ({} + {})",
            w.tally.find.len() + w.tally.call.len(),
            w.tally.find.len(),
            w.tally.call.len()
        )
    });
    row("throughput", &|w| {
        let n = w.tally.find.len() + w.tally.call.len();
        format!("{:.0} requests/s", n as f64 / w.wall.as_secs_f64())
    });
    row("find_tools p50 / p99", &|w| {
        format!(
            "{} / {}",
            ms(percentile(&w.tally.find, 0.50)),
            ms(percentile(&w.tally.find, 0.99))
        )
    });
    row("call (upstream round trip) p50 / p99", &|w| {
        format!(
            "{} / {}",
            ms(percentile(&w.tally.call, 0.50)),
            ms(percentile(&w.tally.call, 0.99))
        )
    });
    row("protocol errors", &|w| {
        w.tally.protocol_errors.len().to_string()
    });
    row("tool errors", &|w| w.tally.tool_errors.to_string());
    row(
        "find_tools answers without searchMovie in the top 3",
        &|w| w.tally.misses.to_string(),
    );
    row("upstream requests received", &|w| {
        format!("{} (expected {})", w.upstream_calls, CLIENTS * ROUNDS)
    });
    row("server RSS / threads peak during", &|w| w.peak.to_string());
    row("server RSS / threads when clients stop", &|w| {
        w.end.to_string()
    });
    row(
        &format!("stateless clients expired (idle {IDLE_SECS} s)"),
        &|w| {
            format!(
                "{} of {} in {:.1} s",
                w.swept,
                CLIENTS / 2,
                w.expired_in.as_secs_f64()
            )
        },
    );
    row("server RSS / threads after expiry", &|w| {
        w.after.to_string()
    });
    println!();
    println!("| server RSS / threads | value |");
    println!("|---|---|");
    println!("| at start | {rss_start} |");
    println!("| before (after warm-up) | {before} |");
    println!("| settled ({SETTLE_SECS} s after the last wave) | {settled} |");

    for w in &waves {
        for e in w.tally.protocol_errors.iter().take(10) {
            eprintln!("protocol error: {e}");
        }
        assert!(
            w.tally.protocol_errors.is_empty(),
            "{} protocol errors",
            w.tally.protocol_errors.len()
        );
        assert_eq!(
            w.tally.find.len() + w.tally.call.len(),
            2 * CLIENTS * ROUNDS,
            "every request must be answered"
        );
    }
}

/// What one wave measured.
struct Wave {
    tally: Tally,
    wall: Duration,
    upstream_calls: usize,
    peak: Sample,
    end: Sample,
    after: Sample,
    swept: usize,
    expired_in: Duration,
}

/// `CLIENTS` concurrent clients of `ROUNDS` rounds each, then the wait for the stateless
/// clients' state to expire.
async fn wave(
    http: &reqwest::Client,
    url: &str,
    pid: u32,
    forgotten: &Arc<AtomicUsize>,
    up: &upstream::Upstream,
) -> Wave {
    // Peak sampler.
    let peak = Arc::new(Mutex::new(Sample::take(pid)));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (Arc::clone(&peak), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let now = Sample::take(pid);
                peak.lock().expect("peak").max_with(now);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    // Earlier clients may already have been swept: count only this wave's clients.
    forgotten.store(0, Ordering::SeqCst);
    let upstream_before = up.received().len();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..CLIENTS {
        let (http, url, tally) = (http.clone(), url.to_string(), Arc::clone(&tally));
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
    let end = Sample::take(pid);

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
    let after = Sample::take(pid);
    let upstream_calls = up.received().len() - upstream_before;
    let tally = std::mem::take(&mut *tally.lock().expect("tally"));
    let peak = *peak.lock().expect("peak");
    Wave {
        tally,
        wall,
        upstream_calls,
        peak,
        end,
        after,
        swept: forgotten.load(Ordering::SeqCst),
        expired_in,
    }
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

/// Resident memory and thread count of a process (`/proc/<pid>/status`; zeros when
/// unreadable). Threads matter here: each one keeps a stack and a malloc cache resident.
#[derive(Clone, Copy, Default)]
struct Sample {
    rss_kib: usize,
    threads: usize,
}

impl Sample {
    fn take(pid: u32) -> Sample {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| -> usize {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Sample {
            rss_kib: field("VmRSS:"),
            threads: field("Threads:"),
        }
    }

    fn max_with(&mut self, other: Sample) {
        self.rss_kib = self.rss_kib.max(other.rss_kib);
        self.threads = self.threads.max(other.threads);
    }
}

impl std::fmt::Display for Sample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} threads", mib(self.rss_kib), self.threads)
    }
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
