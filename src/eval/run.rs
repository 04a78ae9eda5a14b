//! Running a benchmark: index a catalog, rank every query, score the rankings.
//!
//! The harness drives the same code the server uses ([`Shortlister`] over an index built by
//! [`catalog_index::build`]), so a measured number is a number of the product, not of a
//! replica. The index lives in a cache folder keyed by the specs and the doc-text variant;
//! the store's incremental build re-embeds nothing when neither changed, so ablations over
//! ranking options cost only the query embeddings.

use super::gold::{self, Case, GoldError};
use super::metrics::{self, QueryMetrics};
use crate::catalog::{self, Catalog};
use crate::index::catalog_index;
use crate::index::doc_text::DocVariant;
use crate::index::{Embedder, StoreError};
use crate::shortlist::matched::Judgement;
use crate::shortlist::{Options, ShortlistError, Shortlister};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Default cut-offs at which metrics are reported.
pub const DEFAULT_KS: [usize; 5] = [1, 3, 5, 10, 20];

/// Errors of an evaluation run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Gold(#[from] GoldError),
    #[error("the catalog could not be loaded completely: {0}")]
    Catalog(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Shortlist(#[from] ShortlistError),
}

/// A queries file, optionally bound to the API its unqualified gold entries belong to.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryFile {
    pub path: PathBuf,
    pub bound_api: Option<String>,
    /// Only the queries whose `catalog` field is this (all when `None`).
    pub catalog: Option<String>,
}

/// One benchmark setting: the specs that form one index and the queries run against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// Shown in reports: the API ids, joined.
    pub name: String,
    /// Spec files or folders (one catalog).
    pub specs: Vec<PathBuf>,
    pub queries: Vec<QueryFile>,
}

impl Setting {
    /// A catalog (spec file or folder) and one queries file whose gold entries are plain
    /// (single spec) or spec-qualified (folder).
    pub fn single(catalog: &Path, queries: &Path) -> Setting {
        Setting {
            name: catalog::stem_id(catalog),
            specs: vec![catalog.to_path_buf()],
            queries: vec![QueryFile {
                path: queries.to_path_buf(),
                bound_api: None,
                catalog: None,
            }],
        }
    }

    /// Several (spec, queries) pairs in one index: each queries file's plain gold entries
    /// belong to its own spec (the merged RestBench setting).
    pub fn merged(pairs: &[(PathBuf, PathBuf)]) -> Setting {
        Setting {
            name: pairs
                .iter()
                .map(|(s, _)| catalog::stem_id(s))
                .collect::<Vec<_>>()
                .join("+"),
            specs: pairs.iter().map(|(s, _)| s.clone()).collect(),
            queries: pairs
                .iter()
                .map(|(s, q)| QueryFile {
                    path: q.clone(),
                    bound_api: Some(catalog::stem_id(s)),
                    catalog: None,
                })
                .collect(),
        }
    }
}

/// How to run: the doc text, the ranking options, the ks and where indexes are cached.
#[derive(Debug, Clone)]
pub struct EvalConfig {
    pub variant: DocVariant,
    pub options: Options,
    /// Ascending, distinct, positive.
    pub ks: Vec<usize>,
    pub cache_dir: PathBuf,
    /// Token budget of the default `find_tools` answer (one without `k`), whose recall and
    /// size are measured beside the fixed cut-offs.
    pub answer_tokens: usize,
    /// Whether each request is also judged where nothing should fit (without its gold
    /// APIs, and in the two halves of the catalog); a pass that reads only the rankings
    /// (the suite's pass with the cut) skips it.
    pub no_match: bool,
}

/// The outcome of one query.
#[derive(Debug, Clone, Serialize)]
pub struct QueryOutcome {
    pub id: String,
    pub query: String,
    /// The queries file (or bound API) it came from.
    pub source: String,
    /// Gold endpoints as qualified keys (`api METHOD /path`).
    pub gold: Vec<String>,
    /// What was returned, up to the largest k, as qualified keys.
    pub returned: Vec<String>,
    /// Which of `returned` were added as phrase matches or prerequisites.
    pub added: Vec<bool>,
    /// The ranking's score of each of `returned` (for score fusion, what the cut compares).
    pub scores: Vec<f32>,
    /// 1-based rank of each gold endpoint in the full ranking (`None`: cut off).
    pub gold_ranks: Vec<Option<usize>>,
    pub metrics: QueryMetrics,
    /// The default `find_tools` answer: hits it holds, their tokens, and the share of gold
    /// endpoints among them.
    pub answer: Answer,
    /// Whether anything fits the request, as `find_tools` judges it (`None`: not judged).
    pub judged: Option<Judgement>,
    /// The same request put to the catalog without its gold APIs, where nothing should fit
    /// (`None`: the catalog has no other API).
    pub judged_without_gold: Option<Judgement>,
    /// The request put to each half of the catalog split by API (`None`: its gold APIs
    /// straddle the halves, or the catalog has one API).
    pub halves: Option<Halves>,
}

/// A request judged against the two halves of its catalog, split by API ([`split_halves`]):
/// its own half holds every gold API (a matchable request in a catalog half the size), the
/// other none (a request nothing should fit, as a team's catalog without the API a person
/// asks about).
#[derive(Debug, Clone, Serialize)]
pub struct Halves {
    /// Endpoints in the half that holds the gold APIs.
    pub own_endpoints: usize,
    /// Endpoints in the other half.
    pub other_endpoints: usize,
    pub own: Option<Judgement>,
    pub other: Option<Judgement>,
    /// The best hit in the other half, as a qualified key: what an assistant would be
    /// offered there (reading a sample of these tells how many "no-match" requests the
    /// other half does serve).
    pub other_best: Option<String>,
}

/// What the default `find_tools` answer (sized in tokens, no `k`) held for one query.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Answer {
    pub hits: usize,
    pub tokens: usize,
    pub recall: f64,
}

/// Hits a `find_tools` answer considers at most (its largest `k`).
const ANSWER_POOL: usize = 50;

/// The default answer for a ranking, rendered as the server renders it.
fn answer_of(
    shortlister: &Shortlister,
    positions: &[usize],
    gold: &[usize],
    budget: usize,
) -> Answer {
    use crate::server::{discovery, tokens};
    let rendered: Vec<serde_json::Value> = positions
        .iter()
        .take(ANSWER_POOL)
        .filter_map(|&p| shortlister.endpoint(p).map(|e| discovery::hit(e, None)))
        .collect();
    let n = discovery::fitting(&rendered, budget);
    let shown = &positions[..n.min(positions.len())];
    let found = gold.iter().filter(|g| shown.contains(g)).count();
    Answer {
        hits: n,
        tokens: tokens::count_json(&serde_json::Value::Array(rendered[..n].to_vec())).unwrap_or(0),
        recall: if gold.is_empty() {
            0.0
        } else {
            found as f64 / gold.len() as f64
        },
    }
}

/// The outcome of one setting.
#[derive(Debug, Clone, Serialize)]
pub struct SettingReport {
    pub name: String,
    pub apis: usize,
    pub endpoints: usize,
    pub variant: DocVariant,
    pub options: Options,
    /// Mean over all queries.
    pub overall: QueryMetrics,
    /// Mean per queries source (one entry per queries file), in file order.
    pub by_source: Vec<(String, usize, QueryMetrics)>,
    pub queries: Vec<QueryOutcome>,
    /// Seconds spent ranking (query embedding included), all queries.
    pub ranking_seconds: f64,
}

/// Runs one setting with a loaded model, which is handed back for the next setting.
/// `progress(message)` reports the slow steps; embedding, the slowest, starts with
/// [`EMBEDDING`].
/// The first word of the progress message that says how many endpoints are being embedded.
pub const EMBEDDING: &str = "embedding";

/// The catalog of a setting: spec paths, and any client config file (`mcpServers`) among
/// them, whose servers are started once and listed.
fn load(paths: &[std::path::PathBuf]) -> Catalog {
    let mut cfg = crate::catalog::CatalogConfig::default();
    let problems = match crate::catalog::client_file::entries_of(paths, &|k| std::env::var(k).ok())
    {
        Ok(imported) => {
            cfg.apis = imported.entries;
            imported.errors
        }
        Err(e) => vec![format!("{e:#}")],
    };
    let mut catalog = Catalog::load_listed(&cfg, &crate::upstream::list_once(&cfg));
    for p in problems {
        catalog.problems.push(crate::catalog::Problem::error(
            std::path::Path::new("mcpServers"),
            None,
            p,
        ));
    }
    catalog
}

pub fn run_setting(
    setting: &Setting,
    config: &EvalConfig,
    embedder: Embedder,
    mut progress: impl FnMut(&str),
) -> Result<(SettingReport, Embedder), EvalError> {
    let catalog = load(&setting.specs);
    let errors: Vec<String> = catalog.errors().map(ToString::to_string).collect();
    if !errors.is_empty() || catalog.endpoints.is_empty() {
        return Err(EvalError::Catalog(if errors.is_empty() {
            "no endpoints".into()
        } else {
            errors.join("; ")
        }));
    }
    let dir = index_dir(&config.cache_dir, &setting.specs, config.variant);
    progress(&format!(
        "indexing {} endpoint(s) in {}",
        catalog.endpoints.len(),
        dir.display()
    ));
    let (index, _) =
        catalog_index::build(&catalog, &dir, &embedder, config.variant, |done, total| {
            if total > 0 && done == 0 {
                progress(&format!("{EMBEDDING} {total} new or changed endpoint(s)…"));
            }
        })?;
    let shortlister = Shortlister::new(index, embedder, config.options.clone())?;

    let mut cases: Vec<Case> = Vec::new();
    for qf in &setting.queries {
        let mut raw = gold::read_queries(&qf.path)?;
        if let Some(c) = &qf.catalog {
            raw.retain(|q| q.catalog.as_ref() == Some(c));
        }
        cases.extend(gold::resolve(
            &qf.path,
            &raw,
            &catalog.endpoints,
            qf.bound_api.as_deref(),
        )?);
    }
    progress(&format!("ranking {} queries", cases.len()));
    let key = |p: usize| {
        shortlister
            .endpoint(p)
            .map(|e| e.qualified_key())
            .unwrap_or_default()
    };
    let halves = split_halves(&shortlister);
    let max_k = config.ks.iter().copied().max().unwrap_or(10);
    // Ranking time only: the no-match variant of each query is the harness's, not a search's.
    let mut ranking_time = std::time::Duration::ZERO;
    let mut queries = Vec::with_capacity(cases.len());
    for case in cases {
        let started = std::time::Instant::now();
        let (ranking, judged) = shortlister.rank_judged(&case.query, None)?;
        ranking_time += started.elapsed();
        let (judged_without_gold, halves) = if config.no_match {
            (
                without_gold(&shortlister, &case.query, &case.gold)?,
                judge_halves(&shortlister, &halves, &case.query, &case.gold)?,
            )
        } else {
            (None, None)
        };
        let positions: Vec<usize> = ranking.iter().map(|h| h.position).collect();
        let metrics = metrics::score_query(&positions, &case.gold, &config.ks);
        let answer = answer_of(&shortlister, &positions, &case.gold, config.answer_tokens);
        let top = &ranking[..ranking.len().min(max_k)];
        queries.push(QueryOutcome {
            gold_ranks: case
                .gold
                .iter()
                .map(|g| positions.iter().position(|p| p == g).map(|r| r + 1))
                .collect(),
            gold: case.gold.iter().map(|&g| key(g)).collect(),
            returned: top.iter().map(|h| key(h.position)).collect(),
            added: top
                .iter()
                .map(|h| h.source != crate::shortlist::Source::Query)
                .collect(),
            scores: top.iter().map(|h| h.score).collect(),
            id: case.id,
            query: case.query,
            source: case.source,
            metrics,
            answer,
            judged,
            judged_without_gold,
            halves,
        });
    }
    let ranking_seconds = ranking_time.as_secs_f64();
    let overall = metrics::mean(&queries.iter().map(|q| &q.metrics).collect::<Vec<_>>());
    let mut sources: Vec<String> = queries.iter().map(|q| q.source.clone()).collect();
    sources.dedup();
    let by_source = if sources.len() > 1 {
        sources
            .into_iter()
            .map(|s| {
                let of: Vec<&QueryMetrics> = queries
                    .iter()
                    .filter(|q| q.source == s)
                    .map(|q| &q.metrics)
                    .collect();
                let n = of.len();
                (s, n, metrics::mean(&of))
            })
            .collect()
    } else {
        Vec::new()
    };
    let report = SettingReport {
        name: setting.name.clone(),
        apis: shortlister.tables().apis.len(),
        endpoints: shortlister.len(),
        variant: config.variant,
        options: config.options.clone(),
        overall,
        by_source,
        queries,
        ranking_seconds,
    };
    let (_, embedder) = shortlister.into_parts();
    Ok((report, embedder))
}

/// The judgement of `query` put to the APIs of the catalog that hold none of `gold`: a
/// request nothing should fit. `None` when every API holds a gold endpoint.
fn without_gold(
    shortlister: &Shortlister,
    query: &str,
    gold: &[usize],
) -> Result<Option<Judgement>, ShortlistError> {
    let tables = shortlister.tables();
    let gold_apis: Vec<&str> = gold.iter().map(|&g| tables.api(g)).collect();
    let others: Vec<&str> = tables
        .apis
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| !gold_apis.contains(id))
        .collect();
    if others.is_empty() {
        return Ok(None);
    }
    Ok(shortlister.search_judged(query, 1, Some(&others))?.1)
}

/// The catalog's APIs in two halves of equal count, each API's side fixed by a hash of its
/// id (so a half does not depend on which other APIs are there), with each half's endpoint
/// count. Empty halves when the catalog has fewer than two APIs.
fn split_halves(shortlister: &Shortlister) -> [(Vec<String>, usize); 2] {
    let tables = shortlister.tables();
    let mut ids: Vec<(String, String)> = tables
        .apis
        .iter()
        .map(|(id, _)| {
            let h = hex::encode(Sha256::digest(format!("shortlist-halves:{id}").as_bytes()));
            (h, id.clone())
        })
        .collect();
    if ids.len() < 2 {
        return [(Vec::new(), 0), (Vec::new(), 0)];
    }
    ids.sort();
    let second = ids.split_off(ids.len().div_ceil(2));
    let count = |half: &[(String, String)]| {
        let ids: Vec<String> = half.iter().map(|(_, id)| id.clone()).collect();
        let n = (0..shortlister.len())
            .filter(|&p| ids.iter().any(|id| id == tables.api(p)))
            .count();
        (ids, n)
    };
    [count(&ids), count(&second)]
}

/// `query` judged against the half of the catalog that holds all its gold APIs and against
/// the other; `None` when the gold APIs straddle the halves.
fn judge_halves(
    shortlister: &Shortlister,
    halves: &[(Vec<String>, usize); 2],
    query: &str,
    gold: &[usize],
) -> Result<Option<Halves>, ShortlistError> {
    let tables = shortlister.tables();
    let in_half = |h: &(Vec<String>, usize)| {
        !gold.is_empty()
            && gold
                .iter()
                .all(|&g| h.0.iter().any(|id| id == tables.api(g)))
    };
    let Some(own) = (0..2).find(|&i| in_half(&halves[i])) else {
        return Ok(None);
    };
    let (own, other) = (&halves[own], &halves[1 - own]);
    if other.0.is_empty() {
        return Ok(None);
    }
    let judge = |h: &(Vec<String>, usize)| {
        let ids: Vec<&str> = h.0.iter().map(String::as_str).collect();
        shortlister.search_judged(query, 1, Some(&ids))
    };
    let (_, own_judged) = judge(own)?;
    let (best, other_judged) = judge(other)?;
    Ok(Some(Halves {
        own_endpoints: own.1,
        other_endpoints: other.1,
        own: own_judged,
        other: other_judged,
        other_best: best
            .first()
            .and_then(|h| shortlister.endpoint(h.position))
            .map(|e| e.qualified_key()),
    }))
}

/// Longest spec-stem part of an index folder's name.
const MAX_NAME: usize = 80;

/// `<cache>/<spec stems>-<hash of their absolute paths>/<variant>`: one index per catalog
/// and variant, so switching variants back and forth re-embeds nothing.
pub fn index_dir(cache: &Path, specs: &[PathBuf], variant: DocVariant) -> PathBuf {
    let mut h = Sha256::new();
    for s in specs {
        let abs = std::path::absolute(s).unwrap_or_else(|_| s.clone());
        h.update(abs.to_string_lossy().as_bytes());
        h.update([0]);
    }
    let stems: Vec<String> = specs.iter().map(|s| catalog::stem_id(s)).collect();
    let mut name = stems.join("+");
    // Folder names are limited (255 bytes on most file systems); the hash keeps them apart.
    if name.len() > MAX_NAME {
        let mut end = MAX_NAME;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    let hash = hex::encode(h.finalize());
    cache
        .join(format!("{name}-{}", &hash[..12]))
        .join(variant.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_and_cache_folders() {
        let m = Setting::merged(&[
            ("b/spotify_oas.json".into(), "q/s.jsonl".into()),
            ("b/tmdb_oas.json".into(), "q/t.jsonl".into()),
        ]);
        assert_eq!(m.name, "spotify_oas+tmdb_oas");
        assert_eq!(m.queries[1].bound_api.as_deref(), Some("tmdb_oas"));
        let s = Setting::single(Path::new("b/tmdb_oas.json"), Path::new("q/t.jsonl"));
        assert_eq!(
            (s.name.as_str(), s.queries[0].bound_api.as_deref()),
            ("tmdb_oas", None)
        );
        let a = index_dir(Path::new("/c"), &s.specs, DocVariant::Relevant);
        let b = index_dir(Path::new("/c"), &s.specs, DocVariant::Full);
        assert_eq!(a.parent(), b.parent());
        assert!(a.ends_with("relevant") && a.to_string_lossy().contains("tmdb_oas-"));
        assert_ne!(
            index_dir(Path::new("/c"), &m.specs, DocVariant::Relevant),
            a
        );
    }
}
