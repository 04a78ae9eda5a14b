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
use shortlist::enrich::summary::{summary_json, Counts};
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
    /// Endpoints of one API asked in one request (all their tasks in one answer).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub batch: usize,
    /// Estimated prompt plus answer tokens of a batched request at most: keep it under the
    /// server's context (a small local model's is often 2048).
    #[arg(long, value_name = "N", default_value_t = 1900)]
    pub batch_tokens: usize,
    /// Ask each task of each endpoint in a request of its own (the per-task templates).
    #[arg(long, conflicts_with = "batch")]
    pub per_task: bool,
    /// Print the requests that would be sent (the cache's answers left out) with their
    /// estimated tokens, and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Retrieval checks on generated descriptions, summaries and questions: a text that
    /// does not make its endpoint easier to find is not indexed, and its marker says why
    /// (`off` writes every generated text unchecked).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub check: bool,
    /// A checked text must rank its own endpoint within this many of the catalog.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub check_top: usize,
    /// Two endpoints' generated texts of one field at least this similar (cosine) are
    /// near-duplicates and fail (above 1: never).
    #[arg(long, value_name = "COSINE", default_value_t = 0.85)]
    pub check_duplicate: f32,
    /// A checked text must add a distinctive word to its endpoint's text.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    pub check_new_words: bool,
    /// Embedding model folder for the checks [default: as `shortlist index` finds it].
    #[arg(long, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Instead of enriching, write copies of the specs stripped to minimal metadata
    /// (operationId, method, path, parameter names and types) into DIR.
    #[arg(long, value_name = "DIR")]
    pub degrade: Option<PathBuf>,
    /// With --degrade: give each operation back its own summary and description (the
    /// oracle of an enrichment measurement: what a perfect enricher could recover).
    #[arg(long, requires = "degrade")]
    pub keep_endpoint_texts: bool,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(format!("{s:?} is neither on nor off")),
    }
}

pub fn run(args: EnrichArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.catalog.config()?;
    let mut problems = Vec::new();
    let mut sources = catalog::expand_sources(&cfg, &mut problems);
    if cfg.apis.iter().any(|a| a.mcp.is_some()) && args.degrade.is_none() {
        // Each server's tools, as it lists them now, written out for the run.
        let listings = shortlist::upstream::list_once(&cfg);
        let data_dir = args.catalog.data_dir(Some(&cfg))?;
        sources.extend(en::mcp_servers::documents(
            &cfg,
            &listings,
            &data_dir,
            &mut problems,
        ));
    }
    for p in &problems {
        eprintln!("{p}");
    }
    if sources.is_empty() {
        anyhow::bail!("the catalog holds no spec file and no MCP server that could be listed");
    }
    if let Some(dir) = &args.degrade {
        return degrade(&sources, dir, args.keep_endpoint_texts);
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
                "enriching {bar:40} {pos}/{len} endpoints ({elapsed}) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let tally = std::sync::Mutex::new(Tally::default());
    let on_progress = |p: Progress<'_>| {
        let Ok(mut t) = tally.lock() else { return };
        match p {
            Progress::Start { endpoints } => {
                t.total = endpoints;
                t.started = Some(std::time::Instant::now());
                if let Some(b) = &bar {
                    b.set_length(endpoints as u64);
                }
            }
            Progress::Done {
                label,
                failures,
                cached,
            } => {
                for f in failures {
                    let line = format!("failed: {label}: {f}");
                    match &bar {
                        Some(b) => b.println(line),
                        None => eprintln!("{line}"),
                    }
                }
                t.done += 1;
                t.cached += usize::from(cached);
                t.failed += usize::from(!failures.is_empty());
                match &bar {
                    Some(b) => {
                        b.inc(1);
                        b.set_message(format!("{} failed, eta {}", t.failed, t.eta()));
                    }
                    None => t.report(),
                }
            }
        }
    };
    let by_model = matches!(opts.generator, Generator::Llm(_));
    let embedder =
        match opts.check.is_some() && by_model && !opts.dry_run {
            true => {
                let given = shortlist::index::ModelOptions {
                    model_dir: args.model_dir.clone(),
                    ..Default::default()
                };
                let config = shortlist::index::EmbedderConfig::locate_with(&given);
                Some(shortlist::index::Embedder::load(&config).context(
                    "the retrieval checks need the embedding model (or pass --check off)",
                )?)
            }
            false => None,
        };
    let result = runtime.block_on(en::enrich(&sources, &opts, embedder.as_ref(), &on_progress));
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = result?;
    if opts.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
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

/// Progress as lines on stderr when it is not a terminal (a log file): endpoints done,
/// endpoints with a failure, and the time left, every 10 endpoints. The time left is at
/// the rate of the endpoints that went to the model: a re-run answers its first hundreds
/// from the cache in a second, and counting those would promise minutes for hours.
#[derive(Default)]
struct Tally {
    total: usize,
    done: usize,
    /// Endpoints answered from the cache alone.
    cached: usize,
    failed: usize,
    started: Option<std::time::Instant>,
}

impl Tally {
    fn elapsed(&self) -> f64 {
        self.started.map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    /// The time left, or `?` before any endpoint went to the model.
    fn eta(&self) -> String {
        let sent = self.done - self.cached.min(self.done);
        let left = self.total.saturating_sub(self.done);
        match (sent, left) {
            (_, 0) => "0 s".to_string(),
            (0, _) => "?".to_string(),
            (n, l) => format!("{:.0} s", self.elapsed() / n as f64 * l as f64),
        }
    }

    fn report(&self) {
        if self.done % 10 != 0 && self.done != self.total {
            return;
        }
        let cached = match self.cached {
            0 => String::new(),
            n => format!(" ({n} from the cache)"),
        };
        eprintln!(
            "enriched {}/{} endpoints{cached}, {} with failures, {:.0} s so far, eta {}",
            self.done,
            self.total,
            self.failed,
            self.elapsed(),
            self.eta()
        );
    }
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
        batch: (!args.per_task).then_some(en::batch::BatchLimits {
            endpoints: args.batch.max(1),
            tokens: args.batch_tokens.max(256),
        }),
        dry_run: args.dry_run,
        check: args.check.then_some(en::check::CheckConfig {
            top: args.check_top.max(1),
            duplicate: args.check_duplicate,
            new_words: args.check_new_words,
        }),
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
    for r in &s.rejected {
        eprintln!("not indexed: {r}");
    }
    for r in &s.rejected_before {
        eprintln!("rejected in review, not written again: {r}");
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
    if !s.rejected.is_empty() {
        eprintln!(
            "{} generated text(s) failed the retrieval checks and were not indexed (reasons in their markers)",
            s.rejected.len()
        );
    }
    if !s.rejected_before.is_empty() {
        eprintln!(
            "{} generated value(s) not written: a reviewer rejected them before (x-shortlist-rejected)",
            s.rejected_before.len()
        );
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
fn degrade(
    sources: &[catalog::SpecSource],
    dir: &Path,
    keep_endpoint_texts: bool,
) -> anyhow::Result<ExitCode> {
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
            if keep_endpoint_texts {
                en::degrade::degrade_keeping_endpoint_texts(&mut spec.doc);
            } else {
                en::degrade::degrade(&mut spec.doc);
            }
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

#[cfg(test)]
mod tests {
    use super::Tally;
    use std::time::{Duration, Instant};

    fn tally(total: usize, done: usize, cached: usize, secs: u64) -> Tally {
        Tally {
            total,
            done,
            cached,
            failed: 0,
            started: Instant::now().checked_sub(Duration::from_secs(secs)),
        }
    }

    #[test]
    fn the_time_left_ignores_endpoints_answered_from_the_cache() {
        // 100 s for 10 endpoints sent (90 more came from the cache): 10 s each, 100 left.
        assert_eq!(tally(200, 100, 90, 100).eta(), "1000 s");
        assert_eq!(tally(200, 100, 0, 100).eta(), "100 s");
        assert_eq!(tally(200, 50, 50, 1).eta(), "?", "nothing sent yet");
        assert_eq!(tally(50, 50, 10, 100).eta(), "0 s");
    }
}
