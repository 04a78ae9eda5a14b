//! One enrichment run over a catalog: plan every spec, generate concurrently, write each
//! enriched copy, and account for everything in a [`Summary`].
//!
//! Generation runs across all endpoints of all specs at once, bounded by `concurrency`
//! endpoints in flight (each asks its tasks in turn, so that is also the bound on requests).
//! A failed endpoint costs only itself: it is reported, the heuristic fills what it can,
//! and the rest completes. Only errors that every request would hit (a refused API key, a
//! wrong URL) stop the run, before any copy is written; the cache keeps what was finished.

use super::batch::{self, BatchLimits};
use super::cache::Cache;
use super::carry::carry;
use super::check::CheckConfig;
use super::finish::{finish, run_checks, Work};
use super::generate::{generate, Generation, Outcome};
use super::llm::{LlmClient, LlmConfig};
use super::plan::EndpointPlan;
use super::prompts::Prompts;
use super::rejections;
use super::spec_file;
use super::summary::Summary;
use super::{Only, Task};
use crate::catalog::normalize::normalize;
use crate::catalog::{enriched_path, SpecSource};
use futures::StreamExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// Who fills the gaps.
#[derive(Debug, Clone)]
pub enum Generator {
    /// No model: the heuristic enricher only (`--llm none`).
    Heuristic,
    /// An OpenAI-compatible LLM, with the heuristic as fallback.
    Llm(LlmConfig),
}

/// How to run.
#[derive(Debug, Clone)]
pub struct EnrichOptions {
    pub generator: Generator,
    pub only: Only,
    pub tasks: Vec<Task>,
    pub prompts: Prompts,
    /// `<data_dir>/enrich-cache`.
    pub cache_dir: PathBuf,
    /// Endpoints generated at once.
    pub concurrency: usize,
    /// `max_tokens` of single-text answers (parameter tasks scale it).
    pub max_tokens: u32,
    /// Ask again where the cache remembers an unusable answer.
    pub retry_failed: bool,
    /// Several endpoints of one API per request, all their tasks in one answer; `None`
    /// asks each task of each endpoint on its own (`--per-task`).
    pub batch: Option<BatchLimits>,
    /// Print the requests that would be sent, with estimated tokens, and send nothing.
    pub dry_run: bool,
    /// Retrieval checks on generated texts (`check`); `None` writes them unchecked.
    pub check: Option<CheckConfig>,
}

/// What the caller hears while the run goes on.
#[derive(Debug)]
pub enum Progress<'a> {
    /// Generation starts for this many endpoints.
    Start { endpoints: usize },
    /// One endpoint is done; `failures` lists what the LLM failed on. `cached`: every
    /// task was answered from the cache and nothing was sent, so the endpoint says nothing
    /// about how long the ones still to send will take.
    Done {
        label: &'a str,
        failures: &'a [String],
        cached: bool,
    },
}

/// Enriches every spec of `sources` (their originals; an existing enriched copy is
/// replaced, keeping reviewed values).
pub async fn enrich(
    sources: &[SpecSource],
    opts: &EnrichOptions,
    embedder: Option<&crate::index::Embedder>,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    let tasks: Vec<Task> = match opts.generator {
        // Summaries and questions need a model; the heuristic would only repeat the name.
        Generator::Heuristic => opts
            .tasks
            .iter()
            .copied()
            .filter(|t| !matches!(t, Task::Summary | Task::Questions))
            .collect(),
        Generator::Llm(_) => opts.tasks.clone(),
    };
    let mut works = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        match prepare(i, src, opts.only, &tasks) {
            Ok(w) => works.push(w),
            Err(e) => summary.problems.push(e),
        }
    }
    let (client, cache) = match &opts.generator {
        Generator::Heuristic => (None, None),
        Generator::Llm(cfg) => (
            Some(LlmClient::new(cfg.clone())?),
            Some(Cache::open(&opts.cache_dir).map_err(|e| {
                anyhow::anyhow!(
                    "{}: cannot open the enrichment cache: {e}",
                    opts.cache_dir.display()
                )
            })?),
        ),
    };
    let g = Generation {
        client: client.as_ref(),
        prompts: &opts.prompts,
        cache: cache.as_ref(),
        max_tokens: opts.max_tokens,
        retry_failed: opts.retry_failed,
        today: super::date::today(),
    };
    let jobs: Vec<(usize, usize)> = works
        .iter()
        .enumerate()
        .flat_map(|(w, work)| {
            work.plans
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.is_empty())
                .map(move |(e, _)| (w, e))
        })
        .collect();
    if opts.dry_run {
        if let Some(c) = &client {
            dry_run(&works, &jobs, &g, c, opts, &mut summary);
        }
        return Ok(summary);
    }
    progress(Progress::Start {
        endpoints: jobs.len(),
    });
    // A job is one endpoint (per task) or up to a batch's endpoints of one spec.
    let per_job = opts.batch.map_or(1, |l| l.endpoints.max(1));
    let mut chunks: Vec<Vec<(usize, usize)>> = Vec::new();
    for (w, e) in jobs {
        match chunks.last_mut() {
            Some(c) if c.len() < per_job && c[0].0 == w => c.push((w, e)),
            _ => chunks.push(vec![(w, e)]),
        }
    }
    let works_ref = &works;
    let g_ref = &g;
    let limits = opts.batch;
    let mut stream = futures::stream::iter(chunks.into_iter().map(|chunk| async move {
        let plans: Vec<&EndpointPlan> =
            chunk.iter().map(|&(w, e)| &works_ref[w].plans[e]).collect();
        let result = match limits {
            Some(l) => batch::generate(&plans, g_ref, l).await,
            None => match generate(plans[0], g_ref).await {
                Ok(o) => Ok(vec![o]),
                Err(e) => Err(e),
            },
        };
        (chunk, result)
    }))
    .buffer_unordered(opts.concurrency.max(1));
    let mut outcomes: Vec<Vec<Option<Outcome>>> =
        works.iter().map(|w| vec![None; w.plans.len()]).collect();
    while let Some((chunk, result)) = stream.next().await {
        let outs = result.map_err(|err| anyhow::anyhow!("enrichment stopped: {err}"))?;
        for ((w, e), outcome) in chunk.into_iter().zip(outs) {
            let plan = &works[w].plans[e];
            let label = plan.label();
            progress(Progress::Done {
                label: &label,
                failures: &outcome.failures,
                cached: outcome.cache_hits >= plan.tasks().len(),
            });
            outcomes[w][e] = Some(outcome);
        }
    }
    drop(stream);
    let checks = match (opts.check, embedder) {
        (Some(cfg), Some(e)) if client.is_some() => run_checks(&works, &outcomes, e, cfg)?,
        (Some(_), None) if client.is_some() => {
            anyhow::bail!("the retrieval checks need the embedding model")
        }
        _ => works.iter().map(|w| vec![None; w.plans.len()]).collect(),
    };
    for ((work, outs), checks) in works.into_iter().zip(outcomes).zip(checks) {
        finish(work, outs, checks, &mut summary);
    }
    if let Some(c) = &client {
        summary.requests = c.usage.requests.load(Ordering::Relaxed);
        summary.retries = c.usage.retries.load(Ordering::Relaxed);
        summary.prompt_tokens = c.usage.prompt_tokens.load(Ordering::Relaxed);
        summary.completion_tokens = c.usage.completion_tokens.load(Ordering::Relaxed);
    }
    Ok(summary)
}

/// `--dry-run`: prints every first request (what the cache does not answer) on stdout,
/// with its estimated tokens, and counts them in the summary. Nothing is sent.
fn dry_run(
    works: &[Work],
    jobs: &[(usize, usize)],
    g: &Generation<'_>,
    client: &LlmClient,
    opts: &EnrichOptions,
    summary: &mut Summary,
) {
    let mut endpoints = 0;
    for (w, work) in works.iter().enumerate() {
        let plans: Vec<&EndpointPlan> = jobs
            .iter()
            .filter(|(jw, _)| *jw == w)
            .map(|&(_, e)| &work.plans[e])
            .collect();
        if plans.is_empty() {
            continue;
        }
        let mut outs = vec![Outcome::default(); plans.len()];
        let requests: Vec<(Vec<super::llm::Message>, usize, u32)> = match opts.batch {
            Some(limits) => {
                let items = batch::pending(&plans, g, client, &mut outs);
                endpoints += items.len();
                batch::group(items, &plans, g, limits)
                    .iter()
                    .map(|group| {
                        let r = batch::request(group, &plans, g);
                        let t = r.prompt_tokens();
                        (r.messages, t, r.max_tokens)
                    })
                    .collect()
            }
            None => {
                endpoints += plans.len();
                plans
                    .iter()
                    .flat_map(|p| {
                        p.tasks().into_iter().map(|task| {
                            let ask = super::generate::ask_for(p, task);
                            let r = opts.prompts.get(task).render(&p.context, &ask.names());
                            let chars = r.system.len() + r.user.len() + 16;
                            let t = (chars as f64 / 3.5).ceil() as usize;
                            let msgs = vec![
                                super::llm::Message::system(r.system),
                                super::llm::Message::user(r.user),
                            ];
                            (msgs, t, opts.max_tokens)
                        })
                    })
                    .collect()
            }
        };
        for (messages, tokens, max_tokens) in requests {
            summary.requests += 1;
            summary.prompt_tokens += tokens as u64;
            println!(
                "=== request {} ({}): about {tokens} prompt tokens, at most {max_tokens} answer tokens",
                summary.requests,
                work.source.original.display()
            );
            for m in &messages {
                println!("--- {}\n{}", m.role, m.content);
            }
        }
    }
    summary.endpoints = endpoints;
    println!(
        "=== {} request(s) for {endpoints} endpoint(s) not in the cache: about {} prompt tokens ({:.0} per endpoint); nothing sent",
        summary.requests,
        summary.prompt_tokens,
        summary.prompt_tokens as f64 / endpoints.max(1) as f64
    );
}

/// Reads a spec, carries reviewed values over, and plans each endpoint.
fn prepare(index: usize, src: &SpecSource, only: Only, tasks: &[Task]) -> Result<Work, String> {
    let stem = src
        .original
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    if stem.ends_with(crate::catalog::ENRICHED_INFIX) {
        return Err(format!(
            "{}: is an enriched copy; enrich its original instead",
            src.original.display()
        ));
    }
    let mut spec = spec_file::read(&src.original)?;
    // Taken before anything is carried in: the copy records the original as it is now.
    let origin = crate::catalog::enriched::origin(&spec.doc);
    let enriched = enriched_path(&src.original);
    let (mut carried, mut remembered) = (0, 0);
    if enriched.is_file() {
        match spec_file::read(&enriched) {
            Ok(prev) => {
                carried = carry(&mut spec.doc, &prev.doc, spec.family);
                remembered = rejections::carry(&mut spec.doc, &prev.doc, spec.family);
            }
            Err(e) => tracing::warn!("ignoring the unreadable previous enriched copy: {e}"),
        }
    }
    let n =
        normalize(&src.original, &src.id, spec.doc.clone(), false).map_err(|p| p.to_string())?;
    let plans = n
        .endpoints
        .into_iter()
        .map(|ep| EndpointPlan::new(index, ep, &spec.doc, only, tasks))
        .collect();
    Ok(Work {
        source: src.clone(),
        spec,
        origin,
        carried,
        remembered,
        plans,
    })
}
