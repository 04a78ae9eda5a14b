//! What an enrichment run did, counted per kind of value and per spec, and as the JSON
//! `shortlist enrich --json` prints.

use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

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

/// The summary as JSON (for `--json`).
pub fn summary_json(s: &Summary) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}
