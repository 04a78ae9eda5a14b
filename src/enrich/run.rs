//! One enrichment run over a catalog: plan every spec, generate concurrently, write each
//! enriched copy, and account for everything in a [`Summary`].
//!
//! Generation runs across all endpoints of all specs at once, bounded by `concurrency`
//! endpoints in flight (each asks its tasks in turn, so that is also the bound on requests).
//! A failed endpoint costs only itself: it is reported, the heuristic fills what it can,
//! and the rest completes. Only errors that every request would hit (a refused API key, a
//! wrong URL) stop the run, before any copy is written; the cache keeps what was finished.

use super::apply::{self, Field};
use super::batch::{self, BatchLimits};
use super::cache::Cache;
use super::carry::carry;
use super::check::{self as retrieval, Candidate, CheckConfig, Kind};
use super::generate::{generate, Generation, Outcome};
use super::llm::{LlmClient, LlmConfig};
use super::plan::{EndpointPlan, Placement};
use super::prompts::Prompts;
use super::rejections;
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
    /// Generated texts the retrieval checks refused: `api METHOD /path: field: reason`.
    pub rejected: Vec<String>,
    /// Generated values not written because a reviewer rejected them before:
    /// `api METHOD /path: field` (see [`super::rejections`]).
    pub rejected_before: Vec<String>,
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
    /// Rejection records carried over from the previous enriched copy.
    remembered: usize,
    plans: Vec<EndpointPlan>,
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
        carried,
        remembered,
        plans,
    })
}

/// Applies one spec's outcomes, writes its enriched copy, and adds to the summary.
fn finish(
    mut work: Work,
    outcomes: Vec<Option<Outcome>>,
    checks: Vec<Option<FieldChecks>>,
    summary: &mut Summary,
) {
    let family = work.spec.family;
    let mut written = 0;
    let mut problems = Vec::new();
    let mut rejected = Vec::new();
    let mut rejected_before = Vec::new();
    summary.endpoints += work.plans.len();
    for ((plan, out), check) in work.plans.iter().zip(outcomes).zip(checks) {
        summary.skipped += plan.skipped;
        let Some(mut out) = out else { continue };
        // Questions that failed the checks leave the set; the set fails when none is left.
        let check = check.unwrap_or_default();
        let questions_check = check.questions.as_ref().map(|qs| {
            let failed: Vec<&String> = qs.iter().filter_map(|r| r.as_ref().err()).collect();
            if let Some(g) = &mut out.questions {
                let mut verdicts = qs.iter();
                let all = std::mem::take(&mut g.value);
                let rejected: Vec<String> = all
                    .iter()
                    .zip(qs)
                    .filter(|(_, r)| r.is_err())
                    .map(|(q, _)| q.clone())
                    .collect();
                g.value = all
                    .into_iter()
                    .filter(|_| verdicts.next().is_some_and(Result::is_ok))
                    .collect();
                if g.value.is_empty() {
                    g.value = rejected;
                }
            }
            let reasons: Vec<String> = failed.iter().map(|r| r.to_string()).collect();
            if failed.len() == qs.len() {
                Verdict::Failed(reasons.join("; "))
            } else if failed.is_empty() {
                Verdict::Passed(None)
            } else {
                Verdict::Passed(Some(format!(
                    "{} of {} questions dropped: {}",
                    failed.len(),
                    qs.len(),
                    reasons.join("; ")
                )))
            }
        });
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
        let to_verdict = |r: &Option<Result<(), String>>| {
            r.as_ref().map(|r| match r {
                Ok(()) => Verdict::Passed(None),
                Err(why) => Verdict::Failed(why.clone()),
            })
        };
        let writes = [
            (
                description_field,
                to_verdict(&check.description),
                out.description
                    .as_ref()
                    .map(|g| (json!(g.value), &g.provenance)),
                (|c| c.descriptions += 1) as fn(&mut Counts),
            ),
            (
                Some(Field::Summary),
                to_verdict(&check.summary),
                out.summary
                    .as_ref()
                    .map(|g| (json!(g.value), &g.provenance)),
                |c| c.summaries += 1,
            ),
            (
                Some(Field::Questions),
                questions_check,
                out.questions
                    .as_ref()
                    .map(|g| (json!(g.value), &g.provenance)),
                |c| c.questions += 1,
            ),
        ];
        for (field, verdict, generated, counter) in writes {
            if let (Some(field), Some((value, provenance))) = (field, generated) {
                if rejections::rejected_in(doc, route, method, None, field, &value) {
                    rejected_before.push(format!("{}: {}", plan.label(), field.marker()));
                    continue;
                }
                let record = verdict.as_ref().map(Verdict::record);
                if matches!(verdict, Some(Verdict::Failed(_))) {
                    rejected.push(format!(
                        "{}: {}: {}",
                        plan.label(),
                        field.marker(),
                        record
                            .as_ref()
                            .and_then(|r| r.get("reason"))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                    ));
                    note(apply::reject_op_field(
                        doc, route, method, field, value, provenance, record,
                    ));
                    continue;
                }
                note(apply::set_op_field_checked(
                    doc,
                    family,
                    route,
                    method,
                    field,
                    value,
                    Some(provenance),
                    record,
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
            let value = json!(g.value);
            let param = Some((p.name.as_str(), p.location));
            if rejections::rejected_in(doc, route, method, param, field, &value) {
                rejected_before.push(format!("{}: {} {}", plan.label(), p.name, field.marker()));
                continue;
            }
            note(apply::set_param_field(
                doc,
                family,
                route,
                method,
                &p.name,
                p.location,
                field,
                value,
                Some(&g.provenance),
            ));
            count(&g.provenance, |c| c.param_descriptions += 1);
        }
        for (i, g) in &out.param_examples {
            let Some(p) = ep.parameters.get(*i) else {
                continue;
            };
            let param = Some((p.name.as_str(), p.location));
            if rejections::rejected_in(doc, route, method, param, Field::Example, &g.value) {
                rejected_before.push(format!("{}: {} example", plan.label(), p.name));
                continue;
            }
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
    summary.rejected.extend(rejected);
    summary.rejected_before.extend(rejected_before);
    let target = enriched_path(&work.source.original);
    let mut report = SpecReport {
        original: work.source.original.clone(),
        enriched: None,
        endpoints: work.plans.len(),
        carried: work.carried,
    };
    if written == 0 && work.carried == 0 && work.remembered == 0 {
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

/// The checks' verdicts on one endpoint's generated texts (`None`: not checked).
#[derive(Debug, Clone, Default)]
struct FieldChecks {
    description: Option<Result<(), String>>,
    summary: Option<Result<(), String>>,
    /// One per question, in order.
    questions: Option<Vec<Result<(), String>>>,
}

/// A field's check record.
enum Verdict {
    /// Passed; the note says what was dropped on the way (questions).
    Passed(Option<String>),
    Failed(String),
}

impl Verdict {
    /// `{"passed": true}` or `{"passed": false, "reason": ...}`, as the marker holds it.
    fn record(&self) -> Value {
        match self {
            Verdict::Passed(None) => json!({"passed": true}),
            Verdict::Passed(Some(note)) => json!({"passed": true, "note": note}),
            Verdict::Failed(why) => json!({"passed": false, "reason": why}),
        }
    }
}

/// Runs the retrieval checks over the whole run's catalog: every generated description,
/// summary and question, against the doc texts of all endpoints without generated text.
fn run_checks(
    works: &[Work],
    outcomes: &[Vec<Option<Outcome>>],
    embedder: &crate::index::Embedder,
    cfg: CheckConfig,
) -> anyhow::Result<Vec<Vec<Option<FieldChecks>>>> {
    let endpoints: Vec<crate::catalog::Endpoint> = works
        .iter()
        .flat_map(|w| w.plans.iter().map(|p| p.endpoint.clone()))
        .collect();
    let labels: Vec<String> = endpoints.iter().map(|e| e.qualified_key()).collect();
    let docs =
        crate::index::doc_text::build_all(&endpoints, crate::index::doc_text::DocVariant::Full);
    let mut cands: Vec<Candidate> = Vec::new();
    // (work, endpoint, kind, question index) of each candidate.
    let mut owners: Vec<(usize, usize, Kind, usize)> = Vec::new();
    let mut pos = 0;
    for (w, outs) in outcomes.iter().enumerate() {
        for (e, out) in outs.iter().enumerate() {
            let here = pos + e;
            let Some(out) = out else { continue };
            let mut add = |kind, text: &String, q| {
                cands.push(Candidate {
                    endpoint: here,
                    kind,
                    text: text.clone(),
                });
                owners.push((w, e, kind, q));
            };
            // The heuristic's fallbacks for what the model failed on are checked too. The
            // index no longer reads them (`doc_text::authored`), but they are the tool
            // description a client and a host's own tool search read, and one that fits
            // another endpoint better would mislead there. A run with `--llm none` is not
            // checked.
            if let Some(g) = &out.description {
                add(Kind::Description, &g.value, 0);
            }
            if let Some(g) = &out.summary {
                add(Kind::Summary, &g.value, 0);
            }
            if let Some(g) = &out.questions {
                for (i, q) in g.value.iter().enumerate() {
                    add(Kind::Question, q, i);
                }
            }
        }
        pos += works[w].plans.len();
    }
    let lexical: Vec<String> = endpoints
        .iter()
        .map(crate::index::doc_text::lexical_only)
        .collect();
    let verdicts = retrieval::check(&docs, &lexical, &labels, &cands, embedder, cfg)?;
    let mut out: Vec<Vec<Option<FieldChecks>>> =
        works.iter().map(|w| vec![None; w.plans.len()]).collect();
    for ((w, e, kind, _), v) in owners.into_iter().zip(verdicts) {
        let c = out[w][e].get_or_insert_with(FieldChecks::default);
        match kind {
            Kind::Description => c.description = Some(v),
            Kind::Summary => c.summary = Some(v),
            Kind::Question => c.questions.get_or_insert_with(Vec::new).push(v),
        }
    }
    Ok(out)
}

/// The copy must load as the original does (same endpoints) before it replaces anything.
fn check_and_write(work: &Work, target: &std::path::Path) -> Result<(), String> {
    let reloaded =
        normalize(target, &work.source.id, work.spec.doc.clone(), false).map_err(|p| {
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
