//! Guards retrieval on the whole development suite (`datasets/suite.toml`: RestBench per
//! scenario and merged, toolbench-dev, socbench-dev as one catalog and per domain) with the
//! real embedding model and the default ranking options (what `shortlist serve` uses): it
//! fails when any dataset's recall or cut F1 drops below floors set a few points under the
//! measured values (docs/results.md).
//!
//! A missing model fails the test with the fix; it never skips silently.

use shortlist::eval::run::DEFAULT_KS;
use shortlist::eval::suite::{run_suite, Suite};
use shortlist::eval::EvalConfig;
use shortlist::index::doc_text::DocVariant;
use shortlist::index::{Embedder, EmbedderConfig};
use shortlist::shortlist::Options;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (dataset, queries, R@5, R@10, cut F1@10 floors), in percent. Measured with the defaults
/// (docs/results.md): see the comment of each row.
const FLOORS: [(&str, usize, f64, f64, f64); 6] = [
    ("restbench-spotify", 57, R5_SPOTIFY, R10_SPOTIFY, F1_SPOTIFY),
    ("restbench-tmdb", 100, R5_TMDB, R10_TMDB, F1_TMDB),
    ("restbench-merged", 157, R5_MERGED, R10_MERGED, F1_MERGED),
    (
        "toolbench-dev",
        187,
        R5_TOOLBENCH,
        R10_TOOLBENCH,
        F1_TOOLBENCH,
    ),
    ("socbench-dev", 175, R5_SOCBENCH, R10_SOCBENCH, F1_SOCBENCH),
    (
        "socbench-dev per domain",
        175,
        R5_DOMAIN,
        R10_DOMAIN,
        F1_DOMAIN,
    ),
];

// Measured 2026-11-24 with the defaults (`shortlist eval --suite datasets/suite.toml`).
const R5_SPOTIFY: f64 = 72.0;
const R10_SPOTIFY: f64 = 86.0;
const F1_SPOTIFY: f64 = 60.0;
const R5_TMDB: f64 = 60.0;
const R10_TMDB: f64 = 80.0;
const F1_TMDB: f64 = 39.0;
const R5_MERGED: f64 = 66.0;
const R10_MERGED: f64 = 83.0;
const F1_MERGED: f64 = 46.0;
const R5_TOOLBENCH: f64 = 62.0;
const R10_TOOLBENCH: f64 = 72.0;
const F1_TOOLBENCH: f64 = 40.0;
const R5_SOCBENCH: f64 = 65.0;
const R10_SOCBENCH: f64 = 81.0;
const F1_SOCBENCH: f64 = 56.0;
const R5_DOMAIN: f64 = 74.0;
const R10_DOMAIN: f64 = 92.0;
const F1_DOMAIN: f64 = 70.0;

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets")
}

/// Indexes persist between runs under cargo's temp folder, so a rerun embeds only queries.
fn cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("eval-suite")
}

fn embedder() -> Embedder {
    Embedder::load(&EmbedderConfig::locate())
        .unwrap_or_else(|e| panic!("{e} (run ./scripts/setup-models.sh)"))
}

#[test]
fn suite_recall_and_cut_stay_above_the_floors() {
    let suite = Suite::load(&datasets().join("suite.toml")).expect("the suite file loads");
    let config = EvalConfig {
        variant: DocVariant::default(),
        options: Options::default(),
        ks: DEFAULT_KS.to_vec(),
        cache_dir: cache(),
    };
    let (report, _) = run_suite(&suite, &config, 0.9, embedder(), |_| {}).expect("suite runs");
    eprintln!("{}", shortlist::eval::suite::table(&report));
    assert_eq!(report.rows.len(), FLOORS.len());
    let mut below = Vec::new();
    for row in &report.rows {
        let (_, queries, r5, r10, f1) = FLOORS
            .iter()
            .find(|(name, ..)| *name == row.name)
            .unwrap_or_else(|| panic!("no floor for {}", row.name));
        assert_eq!(row.queries, *queries, "{}", row.name);
        for (what, got, floor) in [
            ("R@5", row.r5, r5),
            ("R@10", row.r10, r10),
            ("cut F1@10", row.cut_f1, f1),
        ] {
            if got < *floor {
                below.push(format!("{}: {what} {got:.1} < floor {floor}", row.name));
            }
        }
        assert!(
            row.cut_returned < 6.0,
            "{}: the cut returned {:.2} endpoints",
            row.name,
            row.cut_returned
        );
    }
    assert!(below.is_empty(), "{}", below.join("\n"));
}

#[test]
fn cli_reports_json_and_names_unknown_gold() {
    let dir = tempfile::tempdir().unwrap();
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        concat!(
            r#"{"id": "a", "query": "Which films have the best ratings, and who acted in them?", "gold": ["GET /movie/top_rated", "GET /movie/{movie_id}/credits"]}"#,
            "\n",
            r#"{"id": "b", "query": "Search a person", "gold": ["GET /search/person"]}"#,
            "\n"
        ),
    )
    .unwrap();
    let spec = datasets().join("restbench/tmdb_oas.json");
    let run = |queries: &Path| {
        Command::new(env!("CARGO_BIN_EXE_shortlist"))
            .arg("eval")
            .arg(&spec)
            .arg(queries)
            .args(["--json", "--cache-dir"])
            .arg(cache())
            .output()
            .expect("the binary runs")
    };
    let out = run(&queries);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let setting = &json["settings"][0];
    assert_eq!(setting["queries"], 2);
    assert_eq!(setting["overall"]["at"].as_array().map(Vec::len), Some(5));
    assert_eq!(setting["per_query"][0]["id"], "a");

    std::fs::write(
        &queries,
        r#"{"id": "c", "query": "x", "gold": ["GET /movies/popular"]}"#,
    )
    .unwrap();
    let out = run(&queries);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("c: \"GET /movies/popular\""), "{err}");
}
