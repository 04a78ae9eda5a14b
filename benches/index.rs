//! Indexing and search benchmark: `cargo bench --bench index`.
//!
//! Measures, on the RestBench catalog (TMDB + Spotify, 94 endpoints) and on a synthetic
//! catalog of 10,000 endpoints: indexing throughput, search latency (embedding included,
//! p50/p99), peak memory, index size on disk and cold start (a fresh process opens the
//! index, loads the model and answers one query). Figures go to stdout as a Markdown table;
//! `docs/benchmarks.md` records a run.

use serde_json::{json, Map, Value};
use shortlist::catalog::Catalog;
use shortlist::index::catalog_index;
use shortlist::index::doc_text::DocVariant;
use shortlist::index::vectors::TextSeeded;
use shortlist::index::{Embedder, EmbedderConfig};
use shortlist::shortlist::{Options, Shortlister, DENSE_CANDIDATES};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Usage: `cargo bench --bench index [-- OPTIONS]`
///
/// - no options: RestBench, then the synthetic catalog of 10,000 endpoints, each in a child
///   process of its own so that peak memory is per catalog;
/// - `--only restbench|synthetic|corpus`: one catalog, in this process;
/// - `--synthetic N`: size of the synthetic catalog (any N; above 10,000 the operations are
///   spread over API domains, `/billing/...`, `/logistics/...`);
/// - `--corpus DIR`: also the real-world corpus (a folder of specs, e.g. `../shared/corpus`);
/// - `--reuse DIR`: keep the index in DIR and reuse what is there (an unchanged catalog
///   embeds nothing, so the throughput column then says `reused`);
/// - `--synthetic-vectors`: store deterministic stand-in vectors with word structure
///   (`shortlist::index::vectors::worded_row`) instead of running the model over the doc
///   texts (queries are still embedded by the real model), to measure the
///   store, start and search of catalogs too large to embed on a small machine in reasonable
///   time; the throughput column then says `synthetic vectors`;
/// - `--queries FILE`: time these requests (JSON Lines with a `query` field, such as the
///   suite's `datasets/socbench-dev/queries.jsonl`) instead of the catalog's own set: the
///   latency of long multi-task requests, whose task parts are embedded and ranked too;
/// - `--write-synthetic N FILE`: only write the synthetic spec;
/// - `--open DIR[,DIR...]`: only time search over the indexes already in these folders (no
///   catalog is loaded, nothing is indexed), the synthetic requests or `--queries`,
///   `--rounds N` times (default 5), the folders taking turns query by query so that a
///   noisy machine weighs on each alike; `DIR:every` ranks a graph-served index by scoring
///   every endpoint, as before candidate ranking (`src/shortlist/pool.rs`).
fn main() {
    // `RUST_LOG=info` shows how long each step of writing the index took.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let size: usize = value("--synthetic")
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(i) = args.iter().position(|a| a == "--write-synthetic") {
        let (Some(n), Some(file)) = (args.get(i + 1), args.get(i + 2)) else {
            eprintln!("--write-synthetic N FILE");
            std::process::exit(2)
        };
        let n: usize = n.parse().unwrap_or(10_000);
        let spec = synthetic_spec(&std::env::temp_dir(), n);
        std::fs::rename(&spec, file)
            .or_else(|_| std::fs::copy(&spec, file).map(|_| ()))
            .expect("write the synthetic spec");
        return;
    }
    let reuse = value("--reuse").map(PathBuf::from);
    let given_queries = value("--queries").map(|f| {
        let q = queries_in(Path::new(&f));
        if q.is_empty() {
            eprintln!("--queries {f}: no JSON line with a \"query\" field");
            std::process::exit(2)
        }
        q
    });
    if let Some(dirs) = value("--open") {
        let rounds = value("--rounds").and_then(|r| r.parse().ok()).unwrap_or(5);
        let queries = given_queries.unwrap_or_else(synthetic_queries);
        time_open(&dirs, &queries, rounds);
        return;
    }
    let Some(only) = value("--only") else {
        println!("| catalog | endpoints | index time | endpoints/s | search p50 | search p99 | index on disk | cold start | peak RSS | server RSS |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        let mut children = vec!["restbench".to_string(), "synthetic".to_string()];
        if value("--corpus").is_some() {
            children.push("corpus".into());
        }
        let me = std::env::current_exe().expect("bench executable");
        for c in children {
            let status = std::process::Command::new(&me)
                .args(&args[1..])
                .args(["--only", &c])
                .status()
                .expect("run the bench for one catalog");
            assert!(status.success(), "{c}: {status}");
        }
        return;
    };
    let embedder = Embedder::load(&EmbedderConfig::locate()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    match only.as_str() {
        "restbench" => {
            let restbench = vec![
                root.join("catalogs/tmdb.json"),
                root.join("catalogs/spotify.json"),
            ];
            run(
                "RestBench (TMDB+Spotify)",
                &restbench,
                &embedder,
                given_queries.unwrap_or_else(|| restbench_queries(root)),
                reuse.as_deref(),
            );
        }
        "synthetic" => {
            let dir = tempfile::tempdir().expect("temp dir");
            let specs = synthetic_specs(dir.path(), size);
            run(
                &format!("synthetic {size}"),
                &specs,
                &embedder,
                given_queries.unwrap_or_else(synthetic_queries),
                reuse.as_deref(),
            );
        }
        "corpus" => {
            let dir = PathBuf::from(value("--corpus").expect("--corpus DIR"));
            let queries = given_queries.unwrap_or_else(|| {
                let mut q = restbench_queries(root);
                q.extend(synthetic_queries());
                q
            });
            run(
                &format!("corpus ({})", dir.display()),
                &[dir],
                &embedder,
                queries,
                reuse.as_deref(),
            );
        }
        other => {
            eprintln!("--only {other}: expected restbench, synthetic or corpus");
            std::process::exit(2)
        }
    }
}

fn run(
    name: &str,
    specs: &[PathBuf],
    embedder: &Embedder,
    queries: Vec<String>,
    reuse: Option<&Path>,
) {
    let t = Instant::now();
    let catalog = Catalog::load_paths(specs);
    eprintln!(
        "{name}: catalog loaded in {:.1} s ({} endpoints)",
        t.elapsed().as_secs_f64(),
        catalog.endpoints.len()
    );
    let temp = tempfile::tempdir().expect("temp dir");
    let data = reuse.unwrap_or(temp.path());
    let synthetic_vectors = std::env::args().any(|a| a == "--synthetic-vectors");
    let t = Instant::now();
    let (index, report) = if synthetic_vectors {
        catalog_index::build(
            &catalog,
            data,
            &TextSeeded(embedder),
            DocVariant::default(),
            |_, _| {},
        )
    } else {
        catalog_index::build(&catalog, data, embedder, DocVariant::default(), |_, _| {})
    }
    .expect("index");
    let build = t.elapsed();
    let embedded = report.embedded;
    let n = index.len();
    let disk = dir_size(data);
    let shortlister =
        Shortlister::new(index, embedder_clone(), Options::default()).expect("shortlister");
    // Warm up, then time every query several times over.
    for q in queries.iter().take(5) {
        let _ = shortlister.search(q, 10, None);
    }
    let mut times = Vec::new();
    let cpu_before = process_cpu_seconds();
    for _ in 0..3 {
        for q in &queries {
            let t = Instant::now();
            let hits = shortlister.search(q, 10, None).expect("search");
            times.push(t.elapsed());
            assert!(!hits.is_empty());
        }
    }
    // On a shared machine wall times swing with the neighbours' load; the CPU a query
    // costs (every thread of the process) is the steadier figure to compare.
    if let (Some(a), Some(b)) = (cpu_before, process_cpu_seconds()) {
        eprintln!(
            "{name}: {:.2} ms of CPU per query ({} timed queries)",
            (b - a) * 1e3 / times.len().max(1) as f64,
            times.len()
        );
    }
    times.sort();
    let pct = |p: f64| percentile(&times, p);
    let cold = cold_start(data, &queries[0]);
    let server = server_rss_mb(specs, data);
    let throughput = if synthetic_vectors {
        "synthetic vectors".to_string()
    } else if embedded == n {
        format!("{:.0}", n as f64 / build.as_secs_f64())
    } else {
        format!("reused ({embedded} embedded)")
    };
    println!(
        "| {name} | {n} | {:.1} s | {throughput} | {:.2} ms | {:.2} ms | {:.1} MB | {:.0} ms | {:.0} MB | {server} |",
        build.as_secs_f64(),
        ms(pct(0.5)),
        ms(pct(0.99)),
        disk as f64 / 1e6,
        ms(cold),
        peak_rss_mb()
    );
}

/// `--open`: search latency over existing indexes, one row per folder. A request's
/// texts (the whole request and its task parts) are also embedded on their own, so the row
/// says how much of a search is the model and how much the ranking.
fn time_open(dirs: &str, queries: &[String], rounds: usize) {
    use shortlist::index::catalog_index::EndpointIndex;
    let shortlisters: Vec<(&str, Shortlister)> = dirs
        .split(',')
        .map(|name| {
            let (d, every) = match name.strip_suffix(":every") {
                Some(d) => (d, true),
                None => (name, false),
            };
            let index = EndpointIndex::open(Path::new(d))
                .unwrap_or_else(|e| panic!("{d}: {e}"))
                .unwrap_or_else(|| panic!("{d}: no index"));
            let mut s =
                Shortlister::new(index, embedder_clone(), Options::default()).expect("shortlister");
            s.set_graph_ranking(DENSE_CANDIDATES, !every);
            (name, s)
        })
        .collect();
    let texts = |q: &String| {
        let mut t = vec![q.clone()];
        t.extend(shortlist::shortlist::tasks::split(q));
        t
    };
    let mut search = vec![Vec::new(); shortlisters.len()];
    let mut embed = vec![Vec::new(); shortlisters.len()];
    let mut dense = vec![Vec::new(); shortlisters.len()];
    for round in 0..=rounds {
        for q in queries {
            for (i, (_, s)) in shortlisters.iter().enumerate() {
                let t = Instant::now();
                let hits = s.search(q, 10, None).expect("search");
                let took = t.elapsed();
                assert!(!hits.is_empty());
                let t = Instant::now();
                let vectors = s.embedder().embed(&texts(q)).expect("embed");
                let embedded = t.elapsed();
                // The dense scores as ranking gets them: the graph's nearest, or every row
                // scanned.
                let t = Instant::now();
                for v in &vectors {
                    if s.index().vectors().has_ann() {
                        s.index().search(v, DENSE_CANDIDATES).expect("graph search");
                    } else {
                        s.index().similarity_all(v).expect("scan");
                    }
                }
                // Round 0 warms up.
                if round > 0 {
                    search[i].push(took);
                    embed[i].push(embedded);
                    dense[i].push(t.elapsed());
                }
            }
        }
    }
    println!("| index | endpoints | search p50 | search p99 | of which: embedding p50 | dense scores p50 |");
    println!("|---|---|---|---|---|---|");
    for (i, (d, s)) in shortlisters.iter().enumerate() {
        let pct = |v: &mut Vec<Duration>, p: f64| {
            v.sort();
            ms(percentile(v, p))
        };
        println!(
            "| {d} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
            s.len(),
            pct(&mut search[i], 0.5),
            pct(&mut search[i], 0.99),
            pct(&mut embed[i], 0.5),
            pct(&mut dense[i], 0.5)
        );
    }
}

/// The `p` quantile (0..=1) of sorted, non-empty times.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// A `shortlist serve` (stdio) on the same catalog and index: its peak and settled RSS
/// once it says it is ready, as `peak / settled MB`.
fn server_rss_mb(specs: &[PathBuf], data: &Path) -> String {
    use std::io::{BufRead, BufReader};
    let bin = env!("CARGO_BIN_EXE_shortlist");
    let mut child = match std::process::Command::new(bin)
        .arg("serve")
        .args(specs)
        .arg("--data-dir")
        .arg(data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return format!("cannot start: {e}"),
    };
    let stderr = child.stderr.take().expect("stderr");
    let mut ready = false;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("ready in") {
            ready = true;
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    let out = if ready {
        format!("{:.0} / {:.0} MB", field("VmHWM:"), field("VmRSS:"))
    } else {
        "not ready".to_string()
    };
    let _ = child.kill();
    let _ = child.wait();
    out
}

/// A second model instance for the shortlister (the first keeps indexing).
fn embedder_clone() -> Embedder {
    Embedder::load(&EmbedderConfig::locate()).expect("model")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A fresh `shortlist search` process: open the index, load the model, answer one query.
fn cold_start(data: &Path, query: &str) -> Duration {
    let bin = env!("CARGO_BIN_EXE_shortlist");
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let out = std::process::Command::new(bin)
            .args(["search", query, "-k", "5", "--data-dir"])
            .arg(data)
            .output()
            .expect("run shortlist");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        best = best.min(t.elapsed());
    }
    best
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn dir_size(p: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let path = e.path();
            total += if path.is_dir() {
                dir_size(&path)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    total
}

/// CPU time of this process so far (user + system, every thread), from `/proc/self/stat`;
/// `None` where that file does not exist.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// The `query` field of every JSON line of `file` (none if it cannot be read).
fn queries_in(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_string))
        .collect()
}

fn restbench_queries(root: &Path) -> Vec<String> {
    let bench = root.join("datasets/restbench");
    let mut out = Vec::new();
    for f in ["tmdb_queries.jsonl", "spotify_queries.jsonl"] {
        out.extend(queries_in(&bench.join(f)));
    }
    if out.is_empty() {
        out = synthetic_queries();
    }
    out
}

const RESOURCES: &[&str] = &[
    "invoice",
    "customer",
    "order",
    "shipment",
    "product",
    "warehouse",
    "employee",
    "payroll",
    "ticket",
    "incident",
    "device",
    "sensor",
    "alert",
    "report",
    "budget",
    "contract",
    "vendor",
    "payment",
    "refund",
    "subscription",
    "playlist",
    "track",
    "album",
    "artist",
    "movie",
    "series",
    "episode",
    "review",
    "comment",
    "user",
    "group",
    "role",
    "permission",
    "token",
    "webhook",
    "repository",
    "branch",
    "commit",
    "pipeline",
    "deployment",
];
const QUALIFIERS: &[&str] = &[
    "",
    "archived",
    "draft",
    "shared",
    "public",
    "private",
    "regional",
    "scheduled",
    "recurring",
    "external",
    "internal",
    "pending",
    "approved",
    "rejected",
    "historical",
    "summary",
    "detailed",
    "audit",
    "bulk",
    "tagged",
    "favorite",
    "recent",
    "legacy",
    "premium",
    "trial",
];
const ACTIONS: &[(&str, &str, bool)] = &[
    ("get", "Retrieve a single", true),
    ("get", "List all", false),
    ("post", "Create a new", false),
    ("put", "Replace an existing", true),
    ("patch", "Update fields of a", true),
    ("delete", "Delete a", true),
    ("post", "Export the", true),
    ("get", "Count the", false),
    ("post", "Import a batch of", false),
    ("get", "Show the change history of a", true),
];

/// API domains that prefix paths once a catalog outgrows one domain's 10,000 operations.
const DOMAINS: &[&str] = &[
    "",
    "billing",
    "logistics",
    "hr",
    "support",
    "iot",
    "finance",
    "media",
    "identity",
    "devops",
    "sales",
    "marketing",
    "legal",
    "research",
    "facilities",
    "procurement",
];

/// A deterministic OpenAPI 3.0 spec with `size` distinct, realistic-looking operations
/// (up to 160,000).
/// Operations per synthetic spec file: a catalog larger than this is written as several
/// APIs (`synthetic-0.json`, `synthetic-1.json`, ... under path prefixes `/r1`, `/r2`), as
/// a platform's catalog would be, and each file stays under the 64 MiB spec limit.
const PER_FILE: usize = 100_000;

/// The synthetic catalog of `size` operations: one file up to [`PER_FILE`], else several.
fn synthetic_specs(dir: &Path, size: usize) -> Vec<PathBuf> {
    if size <= PER_FILE {
        return vec![synthetic_spec(dir, size)];
    }
    (0..size.div_ceil(PER_FILE))
        .map(|k| {
            let n = PER_FILE.min(size - k * PER_FILE);
            let one = synthetic_spec_in(dir, n, &format!("/r{k}"), &format!("synthetic-{k}.json"));
            eprintln!("wrote {} ({n} operations)", one.display());
            one
        })
        .collect()
}

fn synthetic_spec(dir: &Path, size: usize) -> PathBuf {
    synthetic_spec_in(dir, size, "", "synthetic.json")
}

fn synthetic_spec_in(dir: &Path, size: usize, prefix: &str, file: &str) -> PathBuf {
    let mut paths = Map::new();
    let mut made = 0;
    'outer: for d in DOMAINS {
        for (qi, q) in QUALIFIERS.iter().enumerate() {
            for r in RESOURCES {
                for (ai, (method, verb, by_id)) in ACTIONS.iter().enumerate() {
                    if made == size {
                        break 'outer;
                    }
                    let base = match (d.is_empty(), q.is_empty()) {
                        (true, true) => format!("{prefix}/{r}s"),
                        (true, false) => format!("{prefix}/{q}/{r}s"),
                        (false, true) => format!("{prefix}/{d}/{r}s"),
                        (false, false) => format!("{prefix}/{d}/{q}/{r}s"),
                    };
                    let path = match (*by_id, ai) {
                        (true, 6) => format!("{base}/{{{r}_id}}/export"),
                        (true, 9) => format!("{base}/{{{r}_id}}/history"),
                        (true, _) => format!("{base}/{{{r}_id}}"),
                        (false, 7) => format!("{base}/count"),
                        (false, 8) => format!("{base}/import"),
                        _ => base.clone(),
                    };
                    let label = [*d, *q, *r]
                        .iter()
                        .filter(|w| !w.is_empty())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ");
                    let item = paths.entry(path.clone()).or_insert_with(|| json!({}));
                    let mut params = vec![];
                    if path.contains('{') {
                        params.push(json!({"name": format!("{r}_id"), "in": "path", "required": true, "schema": {"type": "string"}, "description": format!("Identifier of the {label}.")}));
                    }
                    if *method == "get" && !by_id {
                        params.push(json!({"name": "page", "in": "query", "schema": {"type": "integer"}, "description": "Page number."}));
                    }
                    item[*method] = json!({
                        "operationId": format!("{method}_{}{}", label.replace(' ', "_"), ai),
                        "summary": format!("{verb} {label}"),
                        "description": format!("{verb} {label} records of the {d} {q} {r} service. Variant {qi}."),
                        "parameters": params,
                        "responses": {"200": {"description": "OK"}},
                    });
                    made += 1;
                }
            }
        }
    }
    let spec = json!({"openapi": "3.0.0", "info": {"title": "Synthetic Enterprise API", "version": "1"},
        "servers": [{"url": "https://api.example.com"}], "paths": paths});
    let p = dir.join(file);
    std::fs::write(&p, spec.to_string()).expect("write synthetic spec");
    p
}

fn synthetic_queries() -> Vec<String> {
    let mut q = Vec::new();
    for (i, r) in RESOURCES.iter().enumerate() {
        let qual = QUALIFIERS[i % QUALIFIERS.len()];
        q.push(format!(
            "show me the change history of the {qual} {r} with id 42"
        ));
        q.push(format!("how many {r}s are there"));
        q.push(format!("create a {r}"));
    }
    q
}
