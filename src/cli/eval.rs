//! `shortlist eval`: measure retrieval on a benchmark with the product's own ranking code.
//!
//! ```text
//! shortlist eval SPEC_OR_FOLDER QUERIES.jsonl             # one index, one queries file
//! shortlist eval --pair A.json=A.jsonl --pair B.json=B.jsonl               # merged: one index
//! shortlist eval --pair A.json=A.jsonl --pair B.json=B.jsonl --separately  # one index each
//! shortlist eval --suite datasets/suite.toml          # every dataset of a suite, one table
//! ```
//!
//! Every ranking option is a flag (defaults: what `serve` uses), so an ablation is one
//! command line, and `docs/results.md` quotes the line that produced each row.

use super::model::ModelArgs;
use super::prepare::report_step;
use anyhow::Context;
use clap::Args;
use shortlist::eval::report;
use shortlist::eval::run::DEFAULT_KS;
use shortlist::eval::suite::{self, run_suite as run_suite_with, Suite};
use shortlist::eval::{run_setting, EvalConfig, Setting};
use shortlist::index::doc_text::DocVariant;
use shortlist::shortlist::{Fusion, Options, Retrieval};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// A spec file, or a folder of specs (gold entries then read `<spec_id> METHOD /path`).
    #[arg(value_name = "CATALOG", required_unless_present_any = ["pair", "suite"])]
    pub catalog: Option<PathBuf>,
    /// The queries file: JSON Lines of {"id", "query", "gold": ["METHOD /path", ...]}.
    #[arg(value_name = "QUERIES", required_unless_present_any = ["pair", "suite"])]
    pub queries: Option<PathBuf>,
    /// A suite file (TOML, `datasets/suite.toml`): run all its datasets and print one table
    /// of R@5, R@10 and the adaptive cut's F1@10 (at `--cut`, default 0.9) with their
    /// macro-average.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["catalog", "pair"])]
    pub suite: Option<PathBuf>,
    /// A spec and its queries, `SPEC=QUERIES`; repeat it to index several specs together
    /// (each file's plain gold entries belong to its spec).
    #[arg(long, value_name = "SPEC=QUERIES", value_parser = parse_pair, conflicts_with = "catalog")]
    pub pair: Vec<(PathBuf, PathBuf)>,
    /// With --pair: give each pair its own index instead of one shared index.
    #[arg(long, requires = "pair")]
    pub separately: bool,
    /// Cut-offs to report.
    #[arg(short, long = "k", value_delimiter = ',', default_values_t = DEFAULT_KS)]
    pub ks: Vec<usize>,
    /// Token budget of the default find_tools answer whose recall and size are reported
    /// (as `serve --answer-tokens`).
    #[arg(long, value_name = "N", default_value_t = shortlist::server::discovery::DEFAULT_ANSWER_TOKENS)]
    pub answer_tokens: usize,
    /// Which fields make up each endpoint's doc text.
    #[arg(long, value_enum, default_value_t = DocVariant::default())]
    pub variant: DocVariant,
    /// Which retrievers rank the endpoints.
    #[arg(long, value_enum)]
    pub retrieval: Option<Retrieval>,
    /// How dense and lexical rankings are fused (hybrid only).
    #[arg(long, value_enum)]
    pub fusion: Option<Fusion>,
    /// Reciprocal-rank-fusion constant.
    #[arg(long, value_name = "K")]
    pub rrf_k: Option<f32>,
    /// Weight of the dense scores in score fusion, 0 to 1.
    #[arg(long, value_name = "W")]
    pub dense_weight: Option<f32>,
    /// Rank the parts of multi-task queries separately (true/false).
    #[arg(long, value_name = "BOOL")]
    pub split: Option<bool>,
    /// Weight of each part against the whole query when merging.
    #[arg(long, value_name = "W")]
    pub part_weight: Option<f32>,
    /// Add endpoints that produce the identifiers of shortlisted ones (true/false).
    #[arg(long, value_name = "BOOL")]
    pub expand: Option<bool>,
    /// Prerequisite expansion and the name-list weight apply to requests of at most this
    /// many tasks.
    #[arg(long, value_name = "N")]
    pub chain_max_tasks: Option<usize>,
    /// When the query names something, weight of reads that need no identifier and look
    /// nothing up (1: no change).
    #[arg(long, value_name = "W")]
    pub name_list_weight: Option<f32>,
    /// When the query says one sibling's last path word and not another's, weight of the
    /// other (1: no change).
    #[arg(long, value_name = "W")]
    pub sibling_weight: Option<f32>,
    /// Adaptive cut: a share of the best confidence (0 to 1), or `off`. A request of more
    /// tasks than `--chain-max-tasks` keeps its first endpoint and each task's best.
    #[arg(long, value_name = "RATIO|off", value_parser = parse_cut)]
    pub cut: Option<Cut>,
    /// Print JSON (with every query's outcome) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// With --suite --json: every query's outcome too (its ranking and the evidence of
    /// whether anything fits it).
    #[arg(long, requires = "json")]
    pub per_query: bool,
    /// Also list the queries whose top K misses a gold endpoint (K defaults to 10).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "10")]
    pub misses: Option<usize>,
    /// Where benchmark indexes are kept (one per catalog and doc-text variant) [default:
    /// eval/ in the per-user cache folder]
    #[arg(long, value_name = "DIR", env = "SHORTLIST_EVAL_CACHE")]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// The cut ratio of the suite's cut columns when `--cut` gives none.
const SUITE_CUT: f32 = 0.9;

/// A parsed `--cut`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cut(Option<f32>);

fn parse_cut(s: &str) -> Result<Cut, String> {
    if matches!(s, "off" | "none" | "no") {
        return Ok(Cut(None));
    }
    match s.parse::<f32>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(Cut(Some(r))),
        _ => Err(format!(
            "{s:?} is neither a ratio between 0 and 1 nor `off`"
        )),
    }
}

fn parse_pair(s: &str) -> Result<(PathBuf, PathBuf), String> {
    match s.split_once('=') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a.into(), b.into())),
        _ => Err(format!("{s:?} is not SPEC=QUERIES")),
    }
}

impl EvalArgs {
    /// The default options with the flags given applied.
    fn options(&self) -> Options {
        let d = Options::default();
        Options {
            retrieval: self.retrieval.unwrap_or(d.retrieval),
            fusion: self.fusion.unwrap_or(d.fusion),
            rrf_k: self.rrf_k.unwrap_or(d.rrf_k),
            dense_weight: self.dense_weight.unwrap_or(d.dense_weight),
            split: self.split.unwrap_or(d.split),
            part_weight: self.part_weight.unwrap_or(d.part_weight),
            expand: self.expand.unwrap_or(d.expand),
            chain_max_tasks: self.chain_max_tasks.unwrap_or(d.chain_max_tasks),
            name_list_weight: self.name_list_weight.unwrap_or(d.name_list_weight),
            sibling_weight: self.sibling_weight.unwrap_or(d.sibling_weight),
            cut: self.cut.map_or(d.cut, |c| c.0),
        }
    }

    fn settings(&self) -> Vec<Setting> {
        match (&self.catalog, &self.queries) {
            (Some(c), Some(q)) => vec![Setting::single(c, q)],
            _ if self.separately => self
                .pair
                .iter()
                .map(|(s, q)| Setting::single(s, q))
                .collect(),
            _ => vec![Setting::merged(&self.pair)],
        }
    }
}

pub fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let mut ks = args.ks.clone();
    ks.retain(|&k| k > 0);
    ks.sort_unstable();
    ks.dedup();
    if ks.is_empty() {
        anyhow::bail!("--k needs at least one positive cut-off");
    }
    let config = EvalConfig {
        variant: args.variant,
        options: args.options(),
        ks,
        answer_tokens: args.answer_tokens,
        no_match: true,
        cache_dir: match &args.cache_dir {
            Some(d) => d.clone(),
            None => shortlist::places::user_cache_dir()
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no per-user cache folder (HOME is not set): pass --cache-dir DIR"
                    )
                })?
                .join("eval"),
        },
    };
    let mut embedder = args.model.load(None)?;
    if let Some(path) = &args.suite {
        return run_suite(&args, path, config, embedder);
    }
    let mut reports = Vec::new();
    for setting in args.settings() {
        let (report, e) = run_setting(&setting, &config, embedder, |m| {
            report_step(&format!("{}: {m}", setting.name), m)
        })
        .with_context(|| format!("evaluating {}", setting.name))?;
        embedder = e;
        reports.push(report);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::json(&reports, true))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for (i, r) in reports.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", report::text(r));
        if let Some(k) = args.misses {
            println!();
            print!("{}", report::misses(r, k));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--suite`: every dataset, one table (or JSON).
fn run_suite(
    args: &EvalArgs,
    path: &std::path::Path,
    config: EvalConfig,
    embedder: shortlist::index::Embedder,
) -> anyhow::Result<ExitCode> {
    let suite = Suite::load(path)?;
    let cut = args.cut.and_then(|c| c.0).unwrap_or(SUITE_CUT);
    let (mut r, _) = run_suite_with(&suite, &config, cut, embedder, |m| report_step(m, m))?;
    if args.json {
        if !args.per_query {
            r.outcomes.clear();
        }
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{}",
        report::describe_options(config.variant, &config.options)
    );
    print!("{}", suite::table(&r));
    if let Some(k) = args.misses {
        for (name, outcomes) in &r.outcomes {
            println!();
            print!("{}", report::misses_of(name, outcomes, k));
        }
    }
    Ok(ExitCode::SUCCESS)
}
