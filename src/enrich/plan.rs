//! Deciding what each endpoint lacks, and where a generated value will go.
//!
//! The rules (`--only`):
//! - an empty description is filled in place, in `description` itself, so any OpenAPI tool
//!   shows it;
//! - a weak description (see `catalog::weak`) gets an alternative beside it, in
//!   `x-shortlist-description`, with `--only weak` (the default) or `all`; `all` also writes
//!   alternatives beside good human text, for review (the loader shows human text then);
//! - a missing example is filled (an existing one is never second-guessed), except for
//!   credentials and object-valued parameters;
//! - the document expansions (summary, questions) are written when absent.
//!
//! Values a reviewer adopted (an `x-shortlist-*` field without its marker) count as present.

use super::apply::find_param;
use super::context::EndpointContext;
use super::heuristic_examples::{exampleable, is_secret};
use super::rejections;
use super::{Only, Task, DESCRIPTION_BESIDE, QUESTIONS, SUMMARY};
use crate::catalog::weak::is_weak;
use crate::catalog::Endpoint;
use serde_json::Value;

/// Where a generated description goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Into the empty `description`.
    InPlace,
    /// Into `x-shortlist-description`, beside the human text.
    Beside,
}

/// What one endpoint needs.
#[derive(Debug, Clone)]
pub struct EndpointPlan {
    /// Index of the spec in the run.
    pub spec: usize,
    pub endpoint: Endpoint,
    pub context: EndpointContext,
    pub description: Option<Placement>,
    /// (index into `endpoint.parameters`, placement).
    pub param_descriptions: Vec<(usize, Placement)>,
    /// Indexes into `endpoint.parameters`.
    pub param_examples: Vec<usize>,
    pub summary: bool,
    pub questions: bool,
    /// Fields of the requested tasks that are already present (or cannot be filled, like
    /// a credential's example), so nothing is generated for them.
    pub skipped: usize,
}

impl EndpointPlan {
    /// Plans one endpoint of `doc` (the spec being enriched, reviewed values carried over).
    pub fn new(spec: usize, ep: Endpoint, doc: &Value, only: Only, tasks: &[Task]) -> Self {
        let op = doc
            .get("paths")
            .and_then(|p| p.get(&ep.path))
            .and_then(|i| i.get(ep.method.key()));
        let has = |k: &str| op.and_then(|o| o.get(k)).is_some_and(|v| !v.is_null());
        let want = |t: Task| tasks.contains(&t);
        let op_id = ep.operation_id.clone().unwrap_or_default();

        let description = if !want(Task::Description) || has(DESCRIPTION_BESIDE) {
            None
        } else {
            placement(ep.description.as_deref(), &[&op_id, &ep.path], only)
        };

        let mut skipped = usize::from(want(Task::Description) && description.is_none());
        let mut param_descriptions = Vec::new();
        let mut param_examples = Vec::new();
        for (i, p) in ep.parameters.iter().enumerate() {
            // Two parameters of one name (path and query `id`) would share one answer key;
            // the second is left alone rather than risk swapping their values.
            if ep.parameters[..i].iter().any(|q| q.name == p.name) {
                continue;
            }
            let raw = find_param(doc, &ep.path, ep.method, &p.name, p.location);
            let raw_has = |k: &str| raw.as_ref().and_then(|r| r.get(k)).is_some();
            if want(Task::ParamDescriptions) {
                match placement(p.description.as_deref(), &[&p.name, &ep.path, &op_id], only) {
                    Some(pl) if !raw_has(DESCRIPTION_BESIDE) => param_descriptions.push((i, pl)),
                    _ => skipped += 1,
                }
            }
            if want(Task::ParamExamples) {
                if p.example.is_none() && !is_secret(&p.name) && exampleable(&p.schema) {
                    param_examples.push(i);
                } else {
                    skipped += 1;
                }
            }
        }
        let summary = want(Task::Summary) && !has(SUMMARY);
        let questions = want(Task::Questions) && !has(QUESTIONS);
        skipped += usize::from(want(Task::Summary) && !summary);
        skipped += usize::from(want(Task::Questions) && !questions);
        let mut context = EndpointContext::of(&ep);
        context.rejected = rejections::of_endpoint(doc, &ep);
        EndpointPlan {
            spec,
            context,
            description,
            param_descriptions,
            param_examples,
            summary,
            questions,
            skipped,
            endpoint: ep,
        }
    }

    /// Is there anything to do?
    pub fn is_empty(&self) -> bool {
        self.description.is_none()
            && self.param_descriptions.is_empty()
            && self.param_examples.is_empty()
            && !self.summary
            && !self.questions
    }

    /// The tasks this endpoint needs, in order.
    pub fn tasks(&self) -> Vec<Task> {
        let mut t = Vec::new();
        if self.description.is_some() {
            t.push(Task::Description);
        }
        if !self.param_descriptions.is_empty() {
            t.push(Task::ParamDescriptions);
        }
        if !self.param_examples.is_empty() {
            t.push(Task::ParamExamples);
        }
        if self.summary {
            t.push(Task::Summary);
        }
        if self.questions {
            t.push(Task::Questions);
        }
        t
    }

    /// `api METHOD /path`, for reports.
    pub fn label(&self) -> String {
        self.endpoint.qualified_key()
    }
}

/// Where a description goes given the human text, or `None` when it is not needed.
fn placement(human: Option<&str>, names: &[&str], only: Only) -> Option<Placement> {
    match (human, only) {
        (None, _) => Some(Placement::InPlace),
        (Some(_), Only::Missing) => None,
        (Some(h), Only::Weak) => is_weak(h, names).then_some(Placement::Beside),
        (Some(_), Only::All) => Some(Placement::Beside),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_follow_only() {
        let n: &[&str] = &["getMovieCredits"];
        assert_eq!(placement(None, n, Only::Missing), Some(Placement::InPlace));
        assert_eq!(placement(Some("getMovieCredits"), n, Only::Missing), None);
        assert_eq!(
            placement(Some("getMovieCredits"), n, Only::Weak),
            Some(Placement::Beside)
        );
        assert_eq!(
            placement(Some("Lists the cast and crew."), n, Only::Weak),
            None
        );
        assert_eq!(
            placement(Some("Lists the cast and crew."), n, Only::All),
            Some(Placement::Beside)
        );
    }
}
