//! A development suite: several benchmarks measured in one run, one table.
//!
//! A ranking rule that gains on one benchmark can lose on every catalog it was not tuned on.
//! The suite puts the datasets side by side (recall at 5 and 10, F1 of the adaptive cut)
//! with their macro-average, so a change is judged on all of them at once.
//!
//! The suite file is TOML; paths are relative to it:
//!
//! ```toml
//! [[dataset]]
//! name = "restbench-tmdb"
//! catalog = "restbench/tmdb_oas.json"          # a spec file or a folder of specs
//! queries = "restbench/tmdb_queries.jsonl"
//!
//! [[dataset]]
//! name = "restbench-merged"                     # several specs in one index
//! pairs = [["restbench/spotify_oas.json", "restbench/spotify_queries.jsonl"],
//!          ["restbench/tmdb_oas.json", "restbench/tmdb_queries.jsonl"]]
//!
//! [[dataset]]
//! name = "socbench-dev per domain"              # each query against its own catalog
//! catalog = "socbench-dev/specs"
//! queries = "socbench-dev/queries.jsonl"
//! per_catalog = true
//! ```
//!
//! With `per_catalog`, each query's `catalog` field (`run/domain`) names the specs of the
//! folder whose file stem starts with it, `/` written `__` (`run__domain__service.json`):
//! one index per catalog, and the dataset's figures are the mean over all its queries.

use super::metrics::{self, QueryMetrics};
use super::run::{run_setting, EvalConfig, EvalError, QueryFile, QueryOutcome, Setting};
use crate::catalog;
use crate::index::Embedder;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A suite file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("{dataset}: {source}")]
    Eval {
        dataset: String,
        #[source]
        source: EvalError,
    },
}

/// One dataset of a suite file, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct DatasetEntry {
    name: String,
    catalog: Option<PathBuf>,
    queries: Option<PathBuf>,
    #[serde(default)]
    pairs: Vec<(PathBuf, PathBuf)>,
    #[serde(default)]
    per_catalog: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    dataset: Vec<DatasetEntry>,
}

/// A dataset: the settings (index + queries) whose queries it averages over.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    pub name: String,
    pub settings: Vec<Setting>,
}

/// A loaded suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub datasets: Vec<Dataset>,
}

impl Suite {
    /// Reads a suite file; relative paths are resolved against its folder.
    pub fn load(path: &Path) -> Result<Suite, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|source| SuiteError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |reason: String| SuiteError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        let file: SuiteFile = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut datasets = Vec::new();
        for d in file.dataset {
            let settings = d
                .settings(base)
                .map_err(|r| invalid(format!("{}: {r}", d.name)))?;
            datasets.push(Dataset {
                name: d.name,
                settings,
            });
        }
        if datasets.is_empty() {
            return Err(invalid("no [[dataset]]".into()));
        }
        Ok(Suite { datasets })
    }
}

impl DatasetEntry {
    fn settings(&self, base: &Path) -> Result<Vec<Setting>, String> {
        match (&self.catalog, &self.queries, self.pairs.is_empty()) {
            (Some(c), Some(q), true) => {
                let (c, q) = (base.join(c), base.join(q));
                if self.per_catalog {
                    per_catalog(&c, &q)
                } else {
                    Ok(vec![Setting::single(&c, &q)])
                }
            }
            (None, None, false) if !self.per_catalog => {
                let pairs: Vec<(PathBuf, PathBuf)> = self
                    .pairs
                    .iter()
                    .map(|(s, q)| (base.join(s), base.join(q)))
                    .collect();
                Ok(vec![Setting::merged(&pairs)])
            }
            _ => Err(
                "give either `catalog` and `queries` (optionally `per_catalog`) or `pairs`".into(),
            ),
        }
    }
}

/// One setting per catalog named by the queries' `catalog` fields.
fn per_catalog(folder: &Path, queries: &Path) -> Result<Vec<Setting>, String> {
    let raw = super::gold::read_queries(queries).map_err(|e| e.to_string())?;
    let catalogs: BTreeSet<String> = raw.iter().filter_map(|q| q.catalog.clone()).collect();
    if catalogs.is_empty() {
        return Err(format!("{}: no query has a `catalog`", queries.display()));
    }
    let files: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| format!("{}: {e}", folder.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        // An enriched copy is read in place of its original, not as a spec of its own.
        .filter(|p| p.is_file() && !catalog::is_enriched(p))
        .collect();
    let mut settings = Vec::new();
    for c in catalogs {
        let prefix = format!("{}__", c.replace('/', "__"));
        let mut specs: Vec<PathBuf> = files
            .iter()
            .filter(|p| catalog::stem_id(p).starts_with(&prefix))
            .cloned()
            .collect();
        specs.sort();
        if specs.is_empty() {
            return Err(format!(
                "catalog {c:?}: no spec in {} starts with {prefix:?}",
                folder.display()
            ));
        }
        settings.push(Setting {
            name: c.clone(),
            specs,
            queries: vec![QueryFile {
                path: queries.to_path_buf(),
                bound_api: None,
                catalog: Some(c),
            }],
        });
    }
    Ok(settings)
}

/// One dataset's figures, in percent.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub name: String,
    pub queries: usize,
    pub endpoints: usize,
    pub r5: f64,
    pub r10: f64,
    pub r20: f64,
    /// F1 at 10 of the adaptive cut.
    pub cut_f1: f64,
    /// Endpoints the cut returns, on average.
    pub cut_returned: f64,
    /// Milliseconds per query, ranking without the cut (query embedding included).
    pub ms_per_query: f64,
    /// Recall within the default `find_tools` answer (sized in tokens), in percent.
    pub answer_recall: f64,
    /// Mean tokens (cl100k) of that answer's hits.
    pub answer_tokens: f64,
    /// Percent of the dataset's queries that `find_tools` would answer with `"matched":
    /// false` (each one has a gold endpoint, so each of these is a false flag).
    pub matchable_flagged: Option<f64>,
    /// Percent of the same queries flagged when put to the catalog without their gold APIs
    /// (where nothing should fit); `None` for a catalog of one API.
    pub no_match_flagged: Option<f64>,
    /// How many queries that no-match set holds.
    pub no_match_queries: usize,
    /// With the catalog split in two halves by API: percent of the queries flagged when put
    /// to the half without their gold APIs, and when put to the half with them.
    pub half_no_match_flagged: Option<f64>,
    pub half_matchable_flagged: Option<f64>,
}

/// The suite's figures: one row per dataset, then the macro-average.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteReport {
    pub rows: Vec<Row>,
    pub macro_avg: Row,
    /// The cut ratio of the cut columns.
    pub cut: f32,
    /// Every query's outcome without the cut, per dataset (for `--misses`, and in JSON
    /// when kept).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<(String, Vec<QueryOutcome>)>,
}

/// Runs every dataset twice: ranked in full (recall) and with the adaptive cut at `cut` (F1).
/// Recall is reported at 5, 10 and 20, whatever `config.ks` says.
pub fn run_suite(
    suite: &Suite,
    config: &EvalConfig,
    cut: f32,
    mut embedder: Embedder,
    mut progress: impl FnMut(&str),
) -> Result<(SuiteReport, Embedder), SuiteError> {
    let mut full = config.clone();
    full.options.cut = None;
    for k in [5, 10, 20] {
        if !full.ks.contains(&k) {
            full.ks.push(k);
        }
    }
    full.ks.sort_unstable();
    let mut cutting = config.clone();
    cutting.options.cut = Some(cut);
    cutting.no_match = false;
    if !cutting.ks.contains(&10) {
        cutting.ks.push(10);
        cutting.ks.sort_unstable();
    }
    let mut rows = Vec::new();
    let mut outcomes = Vec::new();
    for d in &suite.datasets {
        let mut all: Vec<QueryOutcome> = Vec::new();
        let mut cut_metrics: Vec<QueryMetrics> = Vec::new();
        let (mut seconds, mut endpoints) = (0.0, 0usize);
        for s in &d.settings {
            progress(&format!("{}: {}", d.name, s.name));
            let wrap = |source| SuiteError::Eval {
                dataset: d.name.clone(),
                source,
            };
            // The first pass builds the dataset's index; the second reuses it.
            let (r, e) = run_setting(s, &full, embedder, |m| {
                if m.starts_with(super::run::EMBEDDING) {
                    progress(m)
                }
            })
            .map_err(wrap)?;
            seconds += r.ranking_seconds;
            endpoints = endpoints.max(r.endpoints);
            all.extend(r.queries);
            let (c, e) = run_setting(s, &cutting, e, |_| {}).map_err(wrap)?;
            cut_metrics.extend(c.queries.into_iter().map(|q| q.metrics));
            embedder = e;
        }
        let m = metrics::mean(&all.iter().map(|q| &q.metrics).collect::<Vec<_>>());
        let c = metrics::mean(&cut_metrics.iter().collect::<Vec<_>>());
        let at = |m: &QueryMetrics, k: usize| m.at.iter().find(|a| a.k == k).cloned();
        let recall = |k| at(&m, k).map_or(0.0, |a| 100.0 * a.recall);
        let cut10 = at(&c, 10);
        rows.push(Row {
            name: d.name.clone(),
            queries: all.len(),
            endpoints,
            r5: recall(5),
            r10: recall(10),
            r20: recall(20),
            cut_f1: cut10.as_ref().map_or(0.0, |a| 100.0 * a.f1),
            cut_returned: cut10.map_or(0.0, |a| a.returned),
            ms_per_query: 1000.0 * seconds / all.len().max(1) as f64,
            answer_recall: 100.0 * all.iter().map(|q| q.answer.recall).sum::<f64>()
                / all.len().max(1) as f64,
            answer_tokens: all.iter().map(|q| q.answer.tokens as f64).sum::<f64>()
                / all.len().max(1) as f64,
            matchable_flagged: flagged(all.iter().map(|q| q.judged)),
            no_match_flagged: flagged(all.iter().map(|q| q.judged_without_gold)),
            no_match_queries: all
                .iter()
                .filter(|q| q.judged_without_gold.is_some())
                .count(),
            half_no_match_flagged: flagged(
                all.iter().map(|q| q.halves.as_ref().and_then(|h| h.other)),
            ),
            half_matchable_flagged: flagged(
                all.iter().map(|q| q.halves.as_ref().and_then(|h| h.own)),
            ),
        });
        outcomes.push((d.name.clone(), all));
    }
    let n = rows.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Row) -> f64| rows.iter().map(f).sum::<f64>() / n;
    let macro_avg = Row {
        name: "macro-average".into(),
        queries: rows.iter().map(|r| r.queries).sum(),
        endpoints: 0,
        r5: mean(&|r| r.r5),
        r10: mean(&|r| r.r10),
        r20: mean(&|r| r.r20),
        cut_f1: mean(&|r| r.cut_f1),
        cut_returned: mean(&|r| r.cut_returned),
        ms_per_query: mean(&|r| r.ms_per_query),
        answer_recall: mean(&|r| r.answer_recall),
        answer_tokens: mean(&|r| r.answer_tokens),
        matchable_flagged: mean_of(rows.iter().map(|r| r.matchable_flagged)),
        no_match_flagged: mean_of(rows.iter().map(|r| r.no_match_flagged)),
        no_match_queries: rows.iter().map(|r| r.no_match_queries).sum(),
        half_no_match_flagged: mean_of(rows.iter().map(|r| r.half_no_match_flagged)),
        half_matchable_flagged: mean_of(rows.iter().map(|r| r.half_matchable_flagged)),
    };
    Ok((
        SuiteReport {
            rows,
            macro_avg,
            cut,
            outcomes,
        },
        embedder,
    ))
}

/// Percent of the judged requests judged unmatched; `None` when none was judged.
fn flagged(
    judged: impl Iterator<Item = Option<crate::shortlist::matched::Judgement>>,
) -> Option<f64> {
    let (mut n, mut flagged) = (0usize, 0usize);
    for j in judged.flatten() {
        n += 1;
        flagged += usize::from(!j.matched);
    }
    (n > 0).then(|| 100.0 * flagged as f64 / n as f64)
}

/// The mean of the values that are there; `None` when none is.
fn mean_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The suite table as Markdown (what `docs/results.md` quotes).
pub fn table(r: &SuiteReport) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "| dataset | queries | endpoints | R@5 | R@10 | R@20 | cut F1@10 (cut {}) | returned | answer R | answer tokens | no match flagged | matchable flagged | halves: no match flagged | halves: matchable flagged | ms/query |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        r.cut
    );
    for row in r.rows.iter().chain(std::iter::once(&r.macro_avg)) {
        let endpoints = if row.endpoints == 0 {
            String::new()
        } else {
            row.endpoints.to_string()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} | {:.0} | {} | {} | {} | {} | {:.1} |",
            row.name,
            row.queries,
            endpoints,
            row.r5,
            row.r10,
            row.r20,
            row.cut_f1,
            row.cut_returned,
            row.answer_recall,
            row.answer_tokens,
            percent(row.no_match_flagged),
            percent(row.matchable_flagged),
            percent(row.half_no_match_flagged),
            percent(row.half_matchable_flagged),
            row.ms_per_query
        );
    }
    out
}

/// A share for the table: one decimal, or `-` when there is none.
fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_the_three_kinds_of_dataset() {
        let dir = tempfile::tempdir().unwrap();
        let specs = dir.path().join("specs");
        std::fs::create_dir(&specs).unwrap();
        // `r1__shop__a.enriched.json` is read in place of its original, not beside it.
        for f in [
            "r1__shop__a.json",
            "r1__shop__a.enriched.json",
            "r1__shop__b.json",
            "r1__bank__a.json",
        ] {
            write(&specs, f, "{}");
        }
        write(
            dir.path(),
            "q.jsonl",
            concat!(
                r#"{"id":"1","query":"x","gold":["r1__shop__a GET /x"],"catalog":"r1/shop"}"#,
                "\n",
                r#"{"id":"2","query":"y","gold":["r1__bank__a GET /y"],"catalog":"r1/bank"}"#,
                "\n"
            ),
        );
        let suite = write(
            dir.path(),
            "suite.toml",
            r#"
[[dataset]]
name = "one"
catalog = "specs"
queries = "q.jsonl"

[[dataset]]
name = "merged"
pairs = [["a.json", "a.jsonl"], ["b.json", "b.jsonl"]]

[[dataset]]
name = "per catalog"
catalog = "specs"
queries = "q.jsonl"
per_catalog = true
"#,
        );
        let s = Suite::load(&suite).unwrap();
        assert_eq!(s.datasets.len(), 3);
        assert_eq!(
            s.datasets[0].settings[0].specs,
            std::slice::from_ref(&specs)
        );
        assert_eq!(s.datasets[1].settings[0].queries.len(), 2);
        let per = &s.datasets[2].settings;
        assert_eq!(per.len(), 2);
        assert_eq!(per[0].name, "r1/bank");
        assert_eq!(per[0].specs, [specs.join("r1__bank__a.json")]);
        assert_eq!(
            per[1].specs,
            [
                specs.join("r1__shop__a.json"),
                specs.join("r1__shop__b.json")
            ]
        );
        assert_eq!(per[1].queries[0].catalog.as_deref(), Some("r1/shop"));
    }

    #[test]
    fn a_bad_suite_names_the_file_and_the_dataset() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "s.toml",
            "[[dataset]]\nname = \"half\"\ncatalog = \"x\"\n",
        );
        let e = Suite::load(&p).unwrap_err().to_string();
        assert!(e.contains("s.toml") && e.contains("half"), "{e}");
        let p = write(dir.path(), "t.toml", "[[dataset]]\nnam = 1\n");
        assert!(Suite::load(&p).is_err());
    }
}
