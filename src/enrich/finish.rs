//! One spec after generation: the retrieval checks on its generated texts, the values
//! applied where the plan puts them (reviewed ones carried over, rejected ones left out),
//! and the enriched copy written and read back, all counted in the run's summary.

use super::apply::{self, Field};
use super::check::{self as retrieval, Candidate, CheckConfig, Kind};
use super::generate::Outcome;
use super::plan::{EndpointPlan, Placement};
use super::rejections;
use super::spec_file::{self, SpecDoc};
use super::summary::{Counts, SpecReport, Summary};
use super::HEURISTIC;
use crate::catalog::enriched::{self, Origin};
use crate::catalog::normalize::normalize;
use crate::catalog::{enriched_path, Provenance, SpecSource};
use serde_json::{json, Value};

/// A spec being enriched.
pub(super) struct Work {
    pub(super) source: SpecSource,
    pub(super) spec: SpecDoc,
    /// The digests of the original as read, which the copy records so that the loader
    /// serves its text only where the original has not changed since
    /// (`catalog::enriched`).
    pub(super) origin: Origin,
    pub(super) carried: usize,
    /// Rejection records carried over from the previous enriched copy.
    pub(super) remembered: usize,
    pub(super) plans: Vec<EndpointPlan>,
}

/// Applies one spec's outcomes, writes its enriched copy, and adds to the summary.
pub(super) fn finish(
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
    enriched::stamp(&mut work.spec.doc, &work.origin);
    match check_and_write(&work, &target) {
        Ok(()) => report.enriched = Some(target),
        Err(e) => summary.problems.push(e),
    }
    summary.specs.push(report);
}

/// The checks' verdicts on one endpoint's generated texts (`None`: not checked).
#[derive(Debug, Clone, Default)]
pub(super) struct FieldChecks {
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
pub(super) fn run_checks(
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
