//! The text that represents an endpoint for retrieval.
//!
//! Pesl et al. found that one chunk per endpoint beats any naive chunking, and that what goes
//! into that chunk matters: long shared boilerplate (a `market` parameter described in 300
//! words on every Spotify endpoint) drowns what makes an endpoint distinct. So the builder
//! puts the distinctive fields first, cleans them, and bounds the whole to what the model
//! reads (256 word pieces). Variants exist so the evaluation can compare them.

use crate::catalog::Endpoint;
use crate::text::{clean, split_identifier};
use serde::{Deserialize, Serialize};

/// Bumped whenever the text a variant produces changes, so stored vectors are re-embedded.
pub const DOC_TEXT_VERSION: u32 = 1;

/// Roughly how many words fit the model's 256 word pieces (English averages ~1.3 pieces
/// per word; identifiers split into more).
const WORD_BUDGET: usize = 180;

/// Which fields make up the doc text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum DocVariant {
    /// API title, method, path, operationId words, summary, description, generated summary
    /// and questions, and parameter names (no parameter descriptions).
    #[default]
    Relevant,
    /// `Relevant` plus parameter descriptions.
    WithParams,
    /// The whole operation (parameters with types, request body property names) without
    /// examples.
    Full,
    /// `Full` with parameter examples.
    FullExamples,
}

impl DocVariant {
    pub fn name(self) -> &'static str {
        match self {
            DocVariant::Relevant => "relevant",
            DocVariant::WithParams => "with-params",
            DocVariant::Full => "full",
            DocVariant::FullExamples => "full-examples",
        }
    }
}

/// Words of a path: `/movie/{movie_id}/credits` -> `movie movie id credits`.
pub fn path_words(path: &str) -> String {
    split_identifier(path).join(" ")
}

/// Builds the doc text of an endpoint.
pub fn build(ep: &Endpoint, variant: DocVariant) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut push = |s: String| {
        let s = s.trim().to_string();
        if !s.is_empty() {
            parts.push(s);
        }
    };
    if let Some(s) = &ep.summary {
        push(clean(s));
    }
    if let Some(s) = &ep.generated_summary {
        push(clean(s));
    }
    push(format!("{} {}", ep.method, ep.path));
    push(path_words(&ep.path));
    if let Some(op) = &ep.operation_id {
        push(split_identifier(op).join(" "));
    }
    if !ep.tags.is_empty() {
        push(ep.tags.join(", "));
    }
    if ep.api_title != ep.api {
        push(clean(&ep.api_title));
    }
    if let Some(d) = &ep.description {
        push(clip_words(&clean(d), 80));
    }
    for q in ep.generated_questions.iter().take(5) {
        push(clean(q));
    }
    match variant {
        DocVariant::Relevant => {
            let names: Vec<String> = ep
                .parameters
                .iter()
                .map(|p| split_identifier(&p.name).join(" "))
                .collect();
            if !names.is_empty() {
                push(format!("parameters: {}", names.join(", ")));
            }
        }
        DocVariant::WithParams => {
            for p in &ep.parameters {
                let d = p.description.as_deref().map(clean).unwrap_or_default();
                push(format!(
                    "{}: {}",
                    split_identifier(&p.name).join(" "),
                    clip_words(&d, 25)
                ));
            }
        }
        DocVariant::Full | DocVariant::FullExamples => {
            for p in &ep.parameters {
                let ty = p
                    .schema
                    .get("type")
                    .and_then(|t| t.as_str())
                    .unwrap_or("string");
                let d = p.description.as_deref().map(clean).unwrap_or_default();
                let mut s = format!(
                    "{} ({}, {}{}): {}",
                    p.name,
                    p.location.as_str(),
                    ty,
                    if p.required { ", required" } else { "" },
                    clip_words(&d, 25)
                );
                if variant == DocVariant::FullExamples {
                    if let Some(ex) = &p.example {
                        s.push_str(&format!(
                            " e.g. {}",
                            crate::text::clip_chars(&ex.to_string(), 40)
                        ));
                    }
                }
                push(s);
            }
            if let Some(b) = &ep.request_body {
                if let Some(props) = b.schema.get("properties").and_then(|p| p.as_object()) {
                    let names: Vec<&str> = props.keys().map(String::as_str).collect();
                    push(format!("body: {}", names.join(", ")));
                }
            }
        }
    }
    clip_words(&parts.join(". "), WORD_BUDGET)
}

/// The first `max` whitespace-separated words.
fn clip_words(s: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, w) in s.split_whitespace().enumerate() {
        if i == max {
            break;
        }
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_clean() {
        let mut ep: Endpoint = serde_json::from_value(serde_json::json!({
            "api": "tmdb", "api_title": "TMDB", "tool_name": "x", "method": "GET",
            "path": "/movie/{movie_id}/credits", "operation_id": "getMovieCredits",
            "summary": "Get the <b>cast</b> and crew", "description": "word ".repeat(10_000),
            "tags": [], "deprecated": false, "parameters": [], "request_body": null,
            "response_fields": [], "security": [], "servers": [], "generated_summary": null,
            "generated_questions": [], "description_provenance": null
        }))
        .unwrap();
        let t = build(&ep, DocVariant::Relevant);
        assert!(t.starts_with("Get the cast and crew. GET /movie/{movie_id}/credits. movie movie id credits. get movie credits"), "{t}");
        assert!(t.split_whitespace().count() <= WORD_BUDGET);
        ep.description = None;
        assert!(!build(&ep, DocVariant::Full).contains("word"));
    }
}
