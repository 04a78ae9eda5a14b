//! One enrichment run over a catalog: plan every spec, generate concurrently, write each
//! enriched copy, and account for everything in a [`Summary`].
//!
//! Generation runs across all endpoints of all specs at once, bounded by `concurrency`
//! endpoints in flight (each asks its tasks in turn, so that is also the bound on requests).
//! A failed endpoint costs only itself: it is reported, the heuristic fills what it can,
//! and the rest completes. Only errors that every request would hit (a refused API key, a
//! wrong URL) stop the run, before any copy is written; the cache keeps what was finished.

use super::apply::{self, Field};
use super::cache::Cache;
use super::carry::carry;
use super::generate::{generate, Generation, Outcome};
use super::llm::{LlmClient, LlmConfig};
use super::plan::{EndpointPlan, Placement};
use super::prompts::Prompts;
use super::spec_file::{self, SpecDoc};
use super::{Only, Task, HEURISTIC};
use crate::catalog::normalize::normalize;
use crate::catalog::{enriched_path, Provenance, SpecSource};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{json, Value};
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
}

/// What the caller hears while the run goes on.
#[derive(Debug)]
pub enum Progress<'a> {
    /// Generation starts for this many endpoints.
    Start { endpoints: usize },
    /// One endpoint is done; `failures` lists what the LLM failed on.
    Done {
        label: &'a str,
        failures: &'a [String],
    },
}

/// Counts of generated values.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub descriptions: usize,
    pub param_descriptions: usize,
    pub examples: usize,
    pub summaries: usize,
    pub questions: usize,
}

impl Counts {
    pub fn total(&self) -> usize {
        self.descriptions
            + self.param_descriptions
            + self.examples
            + self.summaries
            + self.questions
    }
}

/// One spec's result.
#[derive(Debug, Clone, Serialize)]
pub struct SpecReport {
    pub original: PathBuf,
    /// The enriched copy written, or `None` when nothing was generated.
    pub enriched: Option<PathBuf>,
    pub endpoints: usize,
    /// Reviewed values carried over from the previous enriched copy.
    pub carried: usize,
}

/// Everything a run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub specs: Vec<SpecReport>,
    pub endpoints: usize,
    /// Values written by the LLM.
    pub by_llm: Counts,
    /// Values written by the heuristic (all of them with `--llm none`).
    pub by_heuristic: Counts,
    /// Of `by_heuristic`, values the LLM was asked for first and failed on.
    pub fallbacks: usize,
    /// Fields already present (or not fillable) for the requested tasks.
    pub skipped: usize,
    /// `api METHOD /path: task: reason`, one per failed task.
    pub failures: Vec<String>,
    /// Endpoints with at least one failed task.
    pub failed_endpoints: usize,
    /// Generated examples dropped after failing their schema twice.
    pub dropped_examples: Vec<String>,
    pub cache_hits: usize,
    pub llm_answers: usize,
    pub requests: u64,
    pub retries: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Specs that could not be read or written.
    pub problems: Vec<String>,
}

/// A spec being enriched.
struct Work {
    source: SpecSource,
    spec: SpecDoc,
    carried: usize,
    plans: Vec<EndpointPlan>,
}

/// Enriches every spec of `sources` (their originals; an existing enriched copy is
/// replaced, keeping reviewed values).
pub async fn enrich(
    sources: &[SpecSource],
    opts: &EnrichOptions,
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
    progress(Progress::Start {
        endpoints: jobs.len(),
    });
    let works_ref = &works;
    let g_ref = &g;
    let mut stream = futures::stream::iter(jobs.into_iter().map(|(w, e)| async move {
        let plan = &works_ref[w].plans[e];
        (w, e, generate(plan, g_ref).await)
    }))
    .buffer_unordered(opts.concurrency.max(1));
    let mut outcomes: Vec<Vec<Option<Outcome>>> =
        works.iter().map(|w| vec![None; w.plans.len()]).collect();
    while let Some((w, e, result)) = stream.next().await {
        let outcome = result.map_err(|err| anyhow::anyhow!("enrichment stopped: {err}"))?;
        let label = works[w].plans[e].label();
        progress(Progress::Done {
            label: &label,
            failures: &outcome.failures,
        });
        outcomes[w][e] = Some(outcome);
    }
    drop(stream);
    for (work, outs) in works.into_iter().zip(outcomes) {
        finish(work, outs, &mut summary);
    }
    if let Some(c) = &client {
        summary.requests = c.usage.requests.load(Ordering::Relaxed);
        summary.retries = c.usage.retries.load(Ordering::Relaxed);
        summary.prompt_tokens = c.usage.prompt_tokens.load(Ordering::Relaxed);
        summary.completion_tokens = c.usage.completion_tokens.load(Ordering::Relaxed);
    }
    Ok(summary)
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
    let enriched = enriched_path(&src.original);
    let mut carried = 0;
    if enriched.is_file() {
        match spec_file::read(&enriched) {
            Ok(prev) => carried = carry(&mut spec.doc, &prev.doc, spec.family),
            Err(e) => tracing::warn!("ignoring the unreadable previous enriched copy: {e}"),
        }
    }
    let n = normalize(&src.original, &src.id, spec.doc.clone()).map_err(|p| p.to_string())?;
    let plans = n
        .endpoints
        .into_iter()
        .map(|ep| EndpointPlan::new(index, ep, &spec.doc, only, tasks))
        .collect();
    Ok(Work {
        source: src.clone(),
        spec,
        carried,
        plans,
    })
}

/// Applies one spec's outcomes, writes its enriched copy, and adds to the summary.
fn finish(mut work: Work, outcomes: Vec<Option<Outcome>>, summary: &mut Summary) {
    let family = work.spec.family;
    let mut written = 0;
    let mut problems = Vec::new();
    summary.endpoints += work.plans.len();
    for (plan, out) in work.plans.iter().zip(outcomes) {
        summary.skipped += plan.skipped;
        let Some(out) = out else { continue };
        let ep = &plan.endpoint;
        let (route, method) = (ep.path.as_str(), ep.method);
        let mut count = |p: &Provenance, f: fn(&mut Counts)| {
            if p.generator == HEURISTIC {
                f(&mut summary.by_heuristic);
            } else {
                f(&mut summary.by_llm);
            }
            written += 1;
        };
        let mut note = |r: Result<(), String>| {
            if let Err(e) = r {
                problems.push(format!("{}: {e}", work.source.original.display()));
            }
        };
        let doc = &mut work.spec.doc;
        // The description where the plan puts it; the document expansions beside the spec's
        // own texts, never over them.
        let description_field = plan.description.map(|pl| {
            if pl == Placement::InPlace {
                Field::Description
            } else {
                Field::DescriptionBeside
            }
        });
        let writes = [
            (
                description_field,
                out.description
                    .as_ref()
                    .map(|g| (json!(g.value), &g.provenance)),
                (|c| c.descriptions += 1) as fn(&mut Counts),
            ),
            (
                Some(Field::Summary),
                out.summary
                    .as_ref()
                    .map(|g| (json!(g.value), &g.provenance)),
                |c| c.summaries += 1,
            ),
            (
                Some(Field::Questions),
                out.questions
                    .as_ref()
                    .map(|g| (json!(g.value), &g.provenance)),
                |c| c.questions += 1,
            ),
        ];
        for (field, generated, counter) in writes {
            if let (Some(field), Some((value, provenance))) = (field, generated) {
                note(apply::set_op_field(
                    doc,
                    family,
                    route,
                    method,
                    field,
                    value,
                    Some(provenance),
                ));
                count(provenance, counter);
            }
        }
        for (i, g) in &out.param_descriptions {
            let (Some(p), Some((_, pl))) = (
                ep.parameters.get(*i),
                plan.param_descriptions.iter().find(|(j, _)| j == i),
            ) else {
                continue;
            };
            let field = if *pl == Placement::InPlace {
                Field::Description
            } else {
                Field::DescriptionBeside
            };
            note(apply::set_param_field(
                doc,
                family,
                route,
                method,
                &p.name,
                p.location,
                field,
                json!(g.value),
                Some(&g.provenance),
            ));
            count(&g.provenance, |c| c.param_descriptions += 1);
        }
        for (i, g) in &out.param_examples {
            let Some(p) = ep.parameters.get(*i) else {
                continue;
            };
            note(apply::set_param_field(
                doc,
                family,
                route,
                method,
                &p.name,
                p.location,
                Field::Example,
                g.value.clone(),
                Some(&g.provenance),
            ));
            count(&g.provenance, |c| c.examples += 1);
        }
        summary.fallbacks += out.fallbacks;
        summary.cache_hits += out.cache_hits;
        summary.llm_answers += out.llm_answers;
        summary.dropped_examples.extend(out.dropped.iter().cloned());
        if !out.failures.is_empty() {
            summary.failed_endpoints += 1;
            summary.failures.extend(
                out.failures
                    .iter()
                    .map(|f| format!("{}: {f}", plan.label())),
            );
        }
    }
    summary.problems.extend(problems);
    let target = enriched_path(&work.source.original);
    let mut report = SpecReport {
        original: work.source.original.clone(),
        enriched: None,
        endpoints: work.plans.len(),
        carried: work.carried,
    };
    if written == 0 && work.carried == 0 {
        // Nothing to add: a stale copy from an earlier run would hide the original's
        // current text from the index, so it goes.
        if target.is_file() {
            if let Err(e) = std::fs::remove_file(&target) {
                summary.problems.push(format!(
                    "{}: cannot remove the stale enriched copy: {e}",
                    target.display()
                ));
            }
        }
        summary.specs.push(report);
        return;
    }
    match check_and_write(&work, &target) {
        Ok(()) => report.enriched = Some(target),
        Err(e) => summary.problems.push(e),
    }
    summary.specs.push(report);
}

/// The copy must load as the original does (same endpoints) before it replaces anything.
fn check_and_write(work: &Work, target: &std::path::Path) -> Result<(), String> {
    let reloaded = normalize(target, &work.source.id, work.spec.doc.clone()).map_err(|p| {
        format!(
            "{}: the enriched copy does not load ({p}); not written",
            target.display()
        )
    })?;
    if reloaded.endpoints.len() != work.plans.len() {
        return Err(format!(
            "{}: the enriched copy has {} endpoints, the original {}; not written",
            target.display(),
            reloaded.endpoints.len(),
            work.plans.len()
        ));
    }
    spec_file::write(target, &work.spec.doc)
}

/// The summary as JSON (for `--json`).
pub fn summary_json(s: &Summary) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}
