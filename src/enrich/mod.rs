//! Enrichment: filling in what a spec leaves out, the way ACE (IBM) did.
//!
//! Enterprise specs often carry an operationId and nothing else. Generating the missing
//! endpoint descriptions, parameter descriptions and parameter examples (and two document
//! expansions from Pesl et al.: a summary and questions a user might ask) makes endpoints
//! easier to find and to call. Generated values are checked, never trusted (ToolFactory):
//! every answer is parsed and validated, every example is checked against its schema.
//!
//! The pipeline for one catalog ([`run::enrich`]):
//!
//! 1. [`spec_file`] reads each original spec; reviewed values from an earlier enriched copy
//!    are carried over ([`carry`]) and [`plan`] decides what each endpoint lacks
//!    ([`Only`]: missing, weak, all).
//! 2. [`generate`] fills each endpoint's gaps, concurrently: with an OpenAI-compatible LLM
//!    ([`llm`], prompts from [`prompts`], answers parsed by [`llm_json`] and checked by
//!    [`answers`] and [`schema_check`]), or with the [`heuristic`] enricher, which is also the
//!    fallback for whatever the LLM failed on. Finished LLM work is kept in the [`cache`].
//! 3. [`apply`] writes the values into a copy of the spec, each marked with its provenance,
//!    never over human text, and [`spec_file`] writes it atomically next to the original as
//!    `name.enriched.ext`, which `Catalog::load` then prefers.
//!
//! [`degrade`] does the opposite, for measuring: it strips a spec to minimal metadata.

pub mod answers;
pub mod apply;
pub mod batch;
pub mod batch_prompt;
pub mod cache;
pub mod carry;
pub mod check;
pub mod context;
pub mod date;
pub mod degrade;
pub mod finish;
pub mod generate;
pub mod heuristic;
pub mod heuristic_examples;
pub mod llm;
pub mod llm_json;
pub mod mcp_servers;
pub mod plan;
pub mod prompts;
pub mod rejections;
pub mod run;
pub mod schema_check;
pub mod screen;
pub mod spec_file;
pub mod summary;
pub mod yaml_out;

pub use run::{enrich, EnrichOptions, Generator, Progress};
pub use summary::Summary;

use serde::{Deserialize, Serialize};

/// The marker key on operations and parameters: `{field: {generator, template, date}}`.
pub const MARKER: &str = "x-shortlist-generated";
/// Values a reviewer rejected, per field, so that no run writes them again
/// (see [`rejections`]).
pub const REJECTED: &str = "x-shortlist-rejected";
/// A generated description written beside a human one (which it never replaces).
pub const DESCRIPTION_BESIDE: &str = "x-shortlist-description";
/// The generated summary (document expansion).
pub const SUMMARY: &str = "x-shortlist-summary";
/// The generated questions (document expansion).
pub const QUESTIONS: &str = "x-shortlist-questions";
/// Where Swagger 2.0 parameters carry an example (2.0 has no `example` field there).
pub const X_EXAMPLE: &str = "x-example";
/// The `generator` of values from the heuristic enricher.
pub const HEURISTIC: &str = "heuristic";

/// What to fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Only {
    /// Only fields that are empty.
    Missing,
    /// Empty fields and weak ones: a description that only repeats the operationId, the path
    /// or the parameter name, or a placeholder (see `catalog::weak`).
    #[default]
    Weak,
    /// Every description, even beside good human text (for review and comparison; human
    /// text still wins where it is not weak).
    All,
}

/// One kind of generated value, with its own prompt template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// The endpoint's description.
    Description,
    /// Descriptions of its parameters.
    ParamDescriptions,
    /// Example values of its parameters.
    ParamExamples,
    /// A one-sentence summary (document expansion).
    Summary,
    /// Questions a user might ask that the endpoint answers (document expansion).
    Questions,
}

impl Task {
    /// All tasks, in the order they run for an endpoint.
    pub const ALL: [Task; 5] = [
        Task::Description,
        Task::ParamDescriptions,
        Task::ParamExamples,
        Task::Summary,
        Task::Questions,
    ];

    /// The template's file name without extension, also its name in provenance markers.
    pub fn template_name(self) -> &'static str {
        match self {
            Task::Description => "endpoint-description",
            Task::ParamDescriptions => "parameter-descriptions",
            Task::ParamExamples => "parameter-examples",
            Task::Summary => "endpoint-summary",
            Task::Questions => "endpoint-questions",
        }
    }

    /// The key of the JSON answer (`{"description": ...}`) and of the provenance marker.
    pub fn answer_key(self) -> &'static str {
        match self {
            Task::Description => "description",
            Task::ParamDescriptions => "parameters",
            Task::ParamExamples => "examples",
            Task::Summary => "summary",
            Task::Questions => "questions",
        }
    }
}
