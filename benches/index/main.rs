//! Indexing and search benchmark: `cargo bench --bench index`.
//!
//! Measures, on the RestBench catalog (TMDB + Spotify, 94 endpoints) and on a synthetic
//! catalog of 10,000 endpoints: indexing throughput, search latency (embedding included,
//! p50/p99), peak memory, index size on disk and cold start (a fresh process opens the
//! index, loads the model and answers one query). Figures go to stdout as a Markdown table;
//! `docs/benchmarks.md` records a run.

mod process;
mod synthetic;

use process::{cold_start, dir_size, peak_rss_mb, process_cpu_seconds, server_rss_mb};
use serde_json::Value;
use shortlist::catalog::Catalog;
use shortlist::index::catalog_index;
use shortlist::index::doc_text::DocVariant;
use shortlist::index::vectors::TextSeeded;
use shortlist::index::{Embedder, EmbedderConfig};
use shortlist::shortlist::{Options, Shortlister, DENSE_CANDIDATES};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use synthetic::{synthetic_queries, synthetic_spec, synthetic_specs};

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

/// A second model instance for the shortlister (the first keeps indexing).
fn embedder_clone() -> Embedder {
    Embedder::load(&EmbedderConfig::locate()).expect("model")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
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
