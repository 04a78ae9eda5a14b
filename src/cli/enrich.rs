//! `shortlist enrich`: fill in what a catalog's specs leave out, with an LLM or heuristics,
//! writing `name.enriched.ext` next to each spec; and `--degrade DIR`, its opposite, for
//! measuring what enrichment recovers.
//!
//! Exit codes: 0 when every spec was handled (endpoints the LLM failed on are reported and
//! filled heuristically, which is not an error), 2 when a spec could not be read or written
//! or the run stopped (a refused API key, an unreachable server).

use super::CatalogArgs;
use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use shortlist::catalog::{self, CatalogConfig, EnrichConfig};
use shortlist::enrich::llm::{ApiKey, JsonMode, LlmConfig};
use shortlist::enrich::prompts::Prompts;
use shortlist::enrich::run::{summary_json, Counts};
use shortlist::enrich::{self as en, EnrichOptions, Generator, Only, Progress, Summary, Task};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The variable read for the API key when neither the flag nor the config names one.
const DEFAULT_KEY_ENV: &str = "SHORTLIST_LLM_API_KEY";

#[derive(Args, Debug)]
pub struct EnrichArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1), or `none` for the
    /// heuristic enricher.
    #[arg(
        long = "llm-url",
        visible_alias = "llm",
        value_name = "URL|none",
        env = "SHORTLIST_LLM_URL"
    )]
    pub llm_url: Option<String>,
    /// Model name sent to the server.
    #[arg(long, value_name = "NAME", env = "SHORTLIST_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// Environment variable that holds the API key [default: SHORTLIST_LLM_API_KEY, if set].
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// What to fill.
    #[arg(long, value_enum, default_value_t = Only::default())]
    pub only: Only,
    /// Tasks to run, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub tasks: Vec<Task>,
    /// Folder of prompt templates replacing the built-in ones (same file names as
    /// enrich-prompts/).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Endpoints enriched at once [default: 4].
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// max_tokens of an answer (parameter tasks scale it with their parameter count).
    #[arg(long, default_value_t = 256)]
    pub max_tokens: u32,
    /// Seconds before a request times out (then retried).
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub timeout: u64,
    /// Retries of a request after 429, 5xx, a timeout or a dropped connection.
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
    /// How JSON answers are requested.
    #[arg(long, value_enum, default_value_t = JsonMode::default())]
    pub json_mode: JsonMode,
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Ask again where the cache remembers that the model gave no usable answer.
    #[arg(long)]
    pub retry_failed: bool,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Instead of enriching, write copies of the specs stripped to minimal metadata
    /// (operationId, method, path, parameter names and types) into DIR.
    #[arg(long, value_name = "DIR")]
    pub degrade: Option<PathBuf>,
}

pub fn run(args: EnrichArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.catalog.config()?;
    let mut problems = Vec::new();
    let sources = catalog::expand_sources(&cfg, &mut problems);
    for p in &problems {
        eprintln!("{p}");
    }
    if sources.is_empty() {
        anyhow::bail!("the catalog holds no spec file");
    }
    if let Some(dir) = &args.degrade {
        return degrade(&sources, dir);
    }
    let opts = options(&args, &cfg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(
                "enriching {bar:40} {pos}/{len} endpoints ({elapsed}, eta {eta}) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let on_progress = |p: Progress<'_>| match p {
        Progress::Start { endpoints } => {
            if let Some(b) = &bar {
                b.set_length(endpoints as u64);
            }
        }
        Progress::Done { label, failures } => {
            for f in failures {
                let line = format!("failed: {label}: {f}");
                match &bar {
                    Some(b) => b.println(line),
                    None => eprintln!("{line}"),
                }
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
    };
    let result = runtime.block_on(en::enrich(&sources, &opts, &on_progress));
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = result?;
    report(&summary, matches!(opts.generator, Generator::Llm(_)));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary_json(&summary))?);
    }
    Ok(if summary.problems.is_empty() && problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// Flags first, then the config's `[enrich]` table, then defaults.
fn options(args: &EnrichArgs, cfg: &CatalogConfig) -> anyhow::Result<EnrichOptions> {
    let file = cfg.enrich.clone().unwrap_or_default();
    let EnrichConfig {
        llm_url,
        llm_model,
        api_key_env,
        concurrency,
        prompts,
    } = file;
    let url = args.llm_url.clone().or(llm_url).ok_or_else(|| {
        anyhow::anyhow!("no LLM given: pass --llm-url URL (an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1) or --llm none for the heuristic enricher")
    })?;
    let generator = if url.trim().eq_ignore_ascii_case("none") {
        Generator::Heuristic
    } else {
        let model = args
            .llm_model
            .clone()
            .or(llm_model)
            .ok_or_else(|| anyhow::anyhow!("--llm-model is required with --llm-url"))?;
        let named = args.api_key_env.clone().or(api_key_env);
        let api_key = match &named {
            Some(var) => Some(ApiKey::from_env(var).ok_or_else(|| {
                anyhow::anyhow!("the API key variable {var} is not set (or empty)")
            })?),
            None => ApiKey::from_env(DEFAULT_KEY_ENV),
        };
        let mut llm = LlmConfig::new(&url, &model);
        llm.api_key = api_key;
        llm.timeout = Duration::from_secs(args.timeout.max(1));
        llm.retries = args.retries;
        llm.temperature = args.temperature;
        llm.json_mode = args.json_mode;
        Generator::Llm(llm)
    };
    let prompts_dir = args.prompts.clone().or(prompts);
    if let Some(d) = &prompts_dir {
        if !d.is_dir() {
            anyhow::bail!("{}: no such prompt folder", d.display());
        }
    }
    let data_dir = args.catalog.data_dir(Some(cfg))?;
    Ok(EnrichOptions {
        generator,
        only: args.only,
        tasks: if args.tasks.is_empty() {
            Task::ALL.to_vec()
        } else {
            args.tasks.clone()
        },
        prompts: Prompts::load(prompts_dir.as_deref())?,
        cache_dir: data_dir.join("enrich-cache"),
        concurrency: args.concurrency.or(concurrency).unwrap_or(4).max(1),
        max_tokens: args.max_tokens.max(16),
        retry_failed: args.retry_failed,
    })
}

/// The final summary, on stderr.
fn report(s: &Summary, llm: bool) {
    let written: Vec<&PathBuf> = s.specs.iter().filter_map(|r| r.enriched.as_ref()).collect();
    for p in &s.problems {
        eprintln!("shortlist: {p}");
    }
    for d in &s.dropped_examples {
        eprintln!("dropped example: {d}");
    }
    let both = add(&s.by_llm, &s.by_heuristic);
    eprintln!(
        "enriched {} of {} spec(s), {} endpoint(s): filled {} description(s), {} parameter description(s), {} example(s), {} summar(ies), {} question set(s); skipped {} already present",
        written.len(),
        s.specs.len(),
        s.endpoints,
        both.descriptions,
        both.param_descriptions,
        both.examples,
        both.summaries,
        both.questions,
        s.skipped
    );
    if llm {
        eprintln!(
            "by the LLM {}, by the heuristic {} ({} as fallback); failed {} endpoint(s); dropped {} example(s) that failed their schema after a retry",
            s.by_llm.total(),
            s.by_heuristic.total(),
            s.fallbacks,
            s.failed_endpoints,
            s.dropped_examples.len()
        );
        eprintln!(
            "{} request(s), {} retried, {} cached answer(s) reused; tokens used: {} prompt + {} completion",
            s.requests, s.retries, s.cache_hits, s.prompt_tokens, s.completion_tokens
        );
    } else {
        eprintln!("heuristic enricher: summaries and questions need an LLM (--llm-url)");
    }
    for p in written {
        eprintln!("wrote {}", p.display());
    }
}

fn add(a: &Counts, b: &Counts) -> Counts {
    Counts {
        descriptions: a.descriptions + b.descriptions,
        param_descriptions: a.param_descriptions + b.param_descriptions,
        examples: a.examples + b.examples,
        summaries: a.summaries + b.summaries,
        questions: a.questions + b.questions,
    }
}

/// `--degrade DIR`: a minimal-metadata copy of each spec, same file name, in `dir`.
fn degrade(sources: &[catalog::SpecSource], dir: &Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{}: cannot create folder", dir.display()))?;
    let mut failed = false;
    for src in sources {
        let name = src.original.file_name().unwrap_or_default();
        let target = dir.join(name);
        let same = |a: &Path, b: &Path| {
            a.canonicalize()
                .ok()
                .zip(b.canonicalize().ok())
                .is_some_and(|(x, y)| x == y)
        };
        if same(&target, &src.original) {
            eprintln!(
                "shortlist: {}: refusing to degrade a spec in place; pick another folder",
                target.display()
            );
            failed = true;
            continue;
        }
        let result = en::spec_file::read(&src.original).and_then(|mut spec| {
            en::degrade::degrade(&mut spec.doc);
            en::spec_file::write(&target, &spec.doc)
        });
        match result {
            Ok(()) => eprintln!("wrote {}", target.display()),
            Err(e) => {
                eprintln!("shortlist: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
