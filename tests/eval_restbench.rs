//! Guards the retrieval gains: runs the RestBench evaluation with the real embedding model
//! and the default ranking options (what `shortlist serve` uses) and fails when recall drops
//! below floors set a few points under the measured values (docs/results.md).
//!
//! A missing model fails the test with the fix; it never skips silently.

use shortlist::eval::run::DEFAULT_KS;
use shortlist::eval::{run_setting, EvalConfig, Setting, SettingReport};
use shortlist::index::doc_text::DocVariant;
use shortlist::index::{Embedder, EmbedderConfig};
use shortlist::shortlist::Options;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (setting, queries, R@5 floor, R@10 floor), recall in percent. Measured with the
/// defaults (docs/results.md): Spotify 82.2 / 92.0, TMDB 83.9 / 93.8, merged 84.6 / 93.4.
const FLOORS: [(&str, usize, f64, f64); 3] = [
    ("spotify_oas", 57, 78.0, 88.0),
    ("tmdb_oas", 100, 79.0, 88.0),
    ("spotify_oas+tmdb_oas", 157, 80.0, 88.0),
];

/// (setting, F1@10 floor) of the adaptive cut (`--split true --cut 0.9`), in percent.
/// Measured: Spotify 70.7, TMDB 62.2 (docs/results.md).
const CUT_FLOORS: [(&str, f64); 2] = [("spotify_oas", 66.0), ("tmdb_oas", 58.0)];

fn bench() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/restbench")
}

/// Indexes persist between runs under cargo's temp folder, so a rerun embeds only queries.
fn cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("eval-restbench")
}

fn embedder() -> Embedder {
    Embedder::load(&EmbedderConfig::locate())
        .unwrap_or_else(|e| panic!("{e} (run ./scripts/setup-models.sh)"))
}

fn pair(scenario: &str) -> (PathBuf, PathBuf) {
    (
        bench().join(format!("{scenario}_oas.json")),
        bench().join(format!("{scenario}_queries.jsonl")),
    )
}

fn recall(report: &SettingReport, k: usize) -> f64 {
    let at = report
        .overall
        .at
        .iter()
        .find(|a| a.k == k)
        .expect("k reported");
    100.0 * at.recall
}

fn check(report: &SettingReport) {
    let (_, queries, r5, r10) = FLOORS
        .iter()
        .find(|(name, ..)| *name == report.name)
        .unwrap_or_else(|| panic!("no floor for {}", report.name));
    assert_eq!(report.queries.len(), *queries, "{}", report.name);
    let (got5, got10) = (recall(report, 5), recall(report, 10));
    eprintln!("{}: R@5 {got5:.1} R@10 {got10:.1}", report.name);
    assert!(
        got10 >= *r10,
        "{}: recall@10 {got10:.1} < floor {r10}",
        report.name
    );
    assert!(
        got5 >= *r5,
        "{}: recall@5 {got5:.1} < floor {r5}",
        report.name
    );
}

#[test]
fn restbench_recall_stays_above_the_floors() {
    assert!(
        bench().join("tmdb_oas.json").is_file(),
        "RestBench not found at {}",
        bench().display()
    );
    let config = EvalConfig {
        variant: DocVariant::default(),
        options: Options::default(),
        ks: DEFAULT_KS.to_vec(),
        cache_dir: cache(),
    };
    let mut embedder = embedder();
    let (spotify, tmdb) = (pair("spotify"), pair("tmdb"));
    let settings = [
        Setting::single(&spotify.0, &spotify.1),
        Setting::single(&tmdb.0, &tmdb.1),
        Setting::merged(&[spotify, tmdb]),
    ];
    for setting in &settings {
        let (report, e) = run_setting(setting, &config, embedder, |_| {}).expect("evaluation runs");
        embedder = e;
        check(&report);
    }

    // The adaptive cut: short lists, F1 well above what any fixed k reaches.
    let cut = EvalConfig {
        options: Options {
            split: true,
            cut: Some(0.9),
            ..Options::default()
        },
        ..config
    };
    for setting in &settings[..2] {
        let (report, e) = run_setting(setting, &cut, embedder, |_| {}).expect("evaluation runs");
        embedder = e;
        let (_, floor) = CUT_FLOORS
            .iter()
            .find(|(name, _)| *name == report.name)
            .expect("a cut floor");
        let at = report.overall.at.iter().find(|a| a.k == 10).expect("k 10");
        let f1 = 100.0 * at.f1;
        eprintln!(
            "{} with the cut: F1@10 {f1:.1}, {:.2} endpoints returned",
            report.name, at.returned
        );
        assert!(
            f1 >= *floor,
            "{}: cut F1@10 {f1:.1} < floor {floor}",
            report.name
        );
        assert!(
            at.returned < 4.0,
            "the cut returned {:.2} endpoints",
            at.returned
        );
    }
}

#[test]
fn cli_reports_json_and_names_unknown_gold() {
    let dir = tempfile::tempdir().unwrap();
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        concat!(
            r#"{"id": "a", "query": "Who directed the top-1 rated movie?", "gold": ["GET /movie/top_rated", "GET /movie/{movie_id}/credits"]}"#,
            "\n",
            r#"{"id": "b", "query": "Search a person", "gold": ["GET /search/person"]}"#,
            "\n"
        ),
    )
    .unwrap();
    let spec = bench().join("tmdb_oas.json");
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
