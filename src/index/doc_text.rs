//! The text that represents an endpoint for retrieval.
//!
//! Pesl et al. found that one chunk per endpoint beats any naive chunking, and that what goes
//! into that chunk matters: long shared boilerplate (a `market` parameter described in 300
//! words on every Spotify endpoint) drowns what makes an endpoint distinct. So the builder
//! puts the distinctive fields first, cleans them, and bounds the whole to what the model
//! reads (256 word pieces). Variants exist so the evaluation can compare them.
//!
//! Two things the spec knows and a bare summary does not say:
//! - **what the endpoint returns**. "When is her birthday?" is answered by the endpoint whose
//!   response has `birthday`, and TMDB calls that endpoint "Get Details". The names of the
//!   response fields that are distinctive within the API (present in few of its endpoints,
//!   so not `id`, `page` or `poster_path`) are appended;
//! - only the **first section of a description**: what follows a markdown heading or table is
//!   changelogs and reference tables ("Recent Changes | July 17, 2018 | ...").
//!
//! And one thing it leaves out: descriptions the heuristic enricher wrote ([`authored`]).

use crate::catalog::{Endpoint, Parameter, Provenance};
use crate::enrich::HEURISTIC;
use crate::text::{clean, split_identifier};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Bumped whenever the text a variant produces changes, so stored vectors are re-embedded.
pub const DOC_TEXT_VERSION: u32 = 4;

/// Roughly how many words fit the model's 256 word pieces (English averages ~1.3 pieces
/// per word; identifiers split into more).
const WORD_BUDGET: usize = 180;

/// A response field is distinctive when at most this share of the API's endpoints return
/// it (and in any case when at most two do).
const DISTINCTIVE_SHARE: f32 = 0.2;

/// At most this many response fields are named in the `relevant` variants.
const MAX_RETURNED_FIELDS: usize = 20;

/// Which fields make up the doc text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum DocVariant {
    /// API title, method, path, operationId words, summary, the description's first
    /// section, generated summary and questions, parameter names (no parameter
    /// descriptions) and the distinctive response fields.
    Relevant,
    /// `Relevant` plus parameter descriptions.
    WithParams,
    /// The whole operation (parameters with types and descriptions, request body property
    /// names, every response field) without examples. The default: measured best on
    /// RestBench at k = 10 (docs/results.md), as Pesl et al. found for "endpoint split,
    /// examples removed".
    #[default]
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

/// What the doc text of one endpoint needs to know about the others: how common each
/// response field is within each API.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// (api, field) -> endpoints of that API returning the field.
    field_count: HashMap<(String, String), usize>,
    /// api -> endpoints.
    api_size: HashMap<String, usize>,
}

impl Context {
    /// The context of a whole catalog.
    pub fn of(endpoints: &[Endpoint]) -> Context {
        let mut c = Context::default();
        for ep in endpoints {
            *c.api_size.entry(ep.api.clone()).or_default() += 1;
            let mut fields: Vec<&String> = ep.response_fields.iter().collect();
            fields.sort_unstable();
            fields.dedup();
            for f in fields {
                *c.field_count
                    .entry((ep.api.clone(), f.clone()))
                    .or_default() += 1;
            }
        }
        c
    }

    fn distinctive(&self, ep: &Endpoint, field: &str) -> bool {
        let n = self
            .field_count
            .get(&(ep.api.clone(), field.to_string()))
            .copied()
            .unwrap_or(0);
        let size = self.api_size.get(&ep.api).copied().unwrap_or(1);
        n <= 2 || (n as f32) <= DISTINCTIVE_SHARE * size as f32
    }
}

/// Whether the doc text carries the API's title: a title of several words that is not
/// the API's id. A one-word title (`Soundcloud`) would add the same word to every
/// endpoint of the API, and in a catalog of one API to every endpoint: the model reads it
/// as part of what each endpoint does, and the texts drift together (measured: cut F1 -1.3
/// on TMDB). Such a title is searched lexically only ([`lexical_only`]).
fn title_in_text(ep: &Endpoint) -> bool {
    ep.api_title != ep.api && split_identifier(&ep.api_title).len() > 1
}

/// Words searched by BM25 but not embedded: the API's title where the doc text leaves it
/// out ([`title_in_text`]). BM25 weighs a word by its rarity, so a title every endpoint
/// shares weighs nothing, and in a catalog of many APIs a request that names one
/// ("a playlist from Soundcloud") finds its endpoints.
pub fn lexical_only(ep: &Endpoint) -> String {
    match title_in_text(ep) {
        true => String::new(),
        false => clean(&ep.api_title),
    }
}

/// Whether a description enters the doc text: any but the heuristic enricher's.
///
/// The heuristic writes its descriptions from the operationId's or the path's words and from
/// each parameter's name, location, type and constraints, all of which the doc text already
/// reads from the spec itself. Repeated as sentences they add nothing for ranking, and they
/// cost recall: longer texts of the same words, in stock phrases that many endpoints share
/// ("Maximum number of items to return"), drift the texts together (measured on the
/// development suite, docs/results.md). Clients still see them in tool definitions; what a
/// model wrote, and what the spec's author wrote, are read as before.
pub fn authored(provenance: Option<&Provenance>) -> bool {
    provenance.is_none_or(|p| p.generator != HEURISTIC)
}

/// Words of a path: `/movie/{movie_id}/credits` -> `movie movie id credits`.
pub fn path_words(path: &str) -> String {
    split_identifier(path).join(" ")
}

/// The doc texts of a catalog's endpoints, in order.
pub fn build_all(endpoints: &[Endpoint], variant: DocVariant) -> Vec<String> {
    let ctx = Context::of(endpoints);
    endpoints
        .iter()
        .map(|ep| build_in(ep, variant, &ctx))
        .collect()
}

/// The doc text of an endpoint on its own (every response field counts as distinctive).
pub fn build(ep: &Endpoint, variant: DocVariant) -> String {
    build_in(ep, variant, &Context::of(std::slice::from_ref(ep)))
}

/// The doc text of an endpoint within its catalog.
pub fn build_in(ep: &Endpoint, variant: DocVariant, ctx: &Context) -> String {
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
    if let Some(route) = ep.http_route() {
        push(route);
    }
    let path = path_words(&ep.path);
    push(path.clone());
    if let Some(op) = &ep.operation_id {
        // Generated operationIds (`GET_movie-movie_id-keywords`) only repeat the path.
        let words = split_identifier(op).join(" ");
        if !words.ends_with(&path) {
            push(words);
        }
    }
    if !ep.tags.is_empty() {
        push(ep.tags.join(", "));
    }
    if title_in_text(ep) {
        push(clean(&ep.api_title));
    }
    if let Some(d) = ranked_text(ep.description.as_ref(), ep.description_provenance.as_ref()) {
        push(clip_words(&clean(first_section(d)), 80));
    }
    for q in ep.generated_questions.iter().take(5) {
        push(clean(q));
    }
    match variant {
        DocVariant::Relevant | DocVariant::WithParams => {
            if variant == DocVariant::Relevant {
                let names: Vec<String> = ep
                    .parameters
                    .iter()
                    .map(|p| split_identifier(&p.name).join(" "))
                    .collect();
                if !names.is_empty() {
                    push(format!("parameters: {}", names.join(", ")));
                }
            } else {
                for p in &ep.parameters {
                    let d = param_description(p);
                    push(format!(
                        "{}: {}",
                        split_identifier(&p.name).join(" "),
                        clip_words(&d, 25)
                    ));
                }
            }
            let fields = returned(ep, |f| ctx.distinctive(ep, f), MAX_RETURNED_FIELDS);
            if !fields.is_empty() {
                push(format!("returns: {}", fields.join(", ")));
            }
        }
        DocVariant::Full | DocVariant::FullExamples => {
            for p in &ep.parameters {
                let ty = p
                    .schema
                    .get("type")
                    .and_then(|t| t.as_str())
                    .unwrap_or("string");
                let d = param_description(p);
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
            let fields = returned(ep, |_| true, usize::MAX);
            if !fields.is_empty() {
                push(format!("returns: {}", fields.join(", ")));
            }
        }
    }
    clip_words(&parts.join(". "), WORD_BUDGET)
}

/// A parameter's description as the doc text reads it: cleaned, empty when there is none
/// or when the heuristic wrote it ([`authored`]).
fn param_description(p: &Parameter) -> String {
    ranked_text(p.description.as_ref(), p.description_provenance.as_ref())
        .map(clean)
        .unwrap_or_default()
}

/// The description the ranking reads: the shown one unless the heuristic wrote it, and
/// then the author's own text it is shown instead of, if any ([`authored`]).
fn ranked_text<'a>(
    shown: Option<&'a String>,
    provenance: Option<&'a Provenance>,
) -> Option<&'a str> {
    if authored(provenance) {
        return shown.map(String::as_str);
    }
    provenance.and_then(|p| p.replaced.as_deref())
}

/// Response field names that pass `keep`, as words (`place_of_birth` -> `place of birth`),
/// in response order, without repeats, at most `max`.
fn returned(ep: &Endpoint, keep: impl Fn(&str) -> bool, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in &ep.response_fields {
        if out.len() >= max {
            break;
        }
        let words = split_identifier(f).join(" ");
        if !words.is_empty() && keep(f) && !out.contains(&words) {
            out.push(words);
        }
    }
    out
}

/// A description up to its first markdown heading or table: what comes after is reference
/// material (changelogs, field tables) rather than what the endpoint does.
pub fn first_section(d: &str) -> &str {
    let mut end = d.len();
    let mut offset = 0;
    for line in d.split_inclusive('\n') {
        let t = line.trim_start();
        if offset > 0 && (t.starts_with('#') || t.starts_with('|')) {
            end = offset;
            break;
        }
        offset += line.len();
    }
    &d[..end]
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

    fn endpoint(path: &str, fields: &[&str]) -> Endpoint {
        serde_json::from_value(serde_json::json!({
            "api": "tmdb", "api_title": "API", "tool_name": path, "method": "GET",
            "path": path, "operation_id": "getMovieCredits",
            "summary": "Get the <b>cast</b> and crew", "description": null,
            "tags": [], "deprecated": false, "parameters": [], "request_body": null,
            "response_fields": fields, "security": [], "servers": [], "generated_summary": null,
            "generated_questions": [], "description_provenance": null
        }))
        .unwrap()
    }

    #[test]
    fn bounded_and_clean() {
        let mut ep = endpoint("/movie/{movie_id}/credits", &[]);
        ep.description = Some("word ".repeat(10_000));
        let t = build(&ep, DocVariant::Relevant);
        assert!(t.starts_with("Get the cast and crew. GET /movie/{movie_id}/credits. movie movie id credits. get movie credits"), "{t}");
        assert!(!t.contains("API"), "a one-word title is not embedded: {t}");
        assert_eq!(lexical_only(&ep), "API", "it is searched lexically");
        ep.api_title = "The Movie Database".into();
        assert!(build(&ep, DocVariant::Relevant).contains("The Movie Database"));
        assert_eq!(lexical_only(&ep), "", "a title in the text is not repeated");
        assert!(t.split_whitespace().count() <= WORD_BUDGET);
        ep.description = None;
        assert!(!build(&ep, DocVariant::Full).contains("word"));
    }

    #[test]
    fn descriptions_stop_at_the_first_heading_or_table() {
        let d = "Get the primary person details by id.\n\n#### Recent Changes\n\n| Date |";
        assert_eq!(
            first_section(d).trim(),
            "Get the primary person details by id."
        );
        assert_eq!(first_section("# Title\nbody"), "# Title\nbody");
        assert_eq!(first_section(""), "");
    }

    #[test]
    fn names_distinctive_response_fields() {
        let common = ["id", "name", "poster_path"];
        let mut eps: Vec<Endpoint> = (0..10)
            .map(|i| endpoint(&format!("/list/{i}"), &common))
            .collect();
        eps.push(endpoint(
            "/person/{person_id}",
            &["id", "name", "birthday", "place_of_birth", "poster_path"],
        ));
        let texts = build_all(&eps, DocVariant::Relevant);
        assert!(
            texts[10].ends_with("returns: birthday, place of birth"),
            "{}",
            texts[10]
        );
        assert!(!texts[0].contains("returns"), "{}", texts[0]);
        assert!(build_all(&eps, DocVariant::Full)[0].ends_with("returns: id, name, poster path"));
    }

    #[test]
    fn heuristic_descriptions_stay_out_of_the_doc_text() {
        let by = |generator: &str| {
            Some(Provenance {
                replaced: None,
                generator: generator.into(),
                template: String::new(),
                date: "2026-11-26".into(),
            })
        };
        let param = |description: &str, provenance| Parameter {
            name: "q".into(),
            location: crate::catalog::ParamLocation::Query,
            required: false,
            description: Some(description.into()),
            schema: serde_json::json!({"type": "string"}),
            style: None,
            explode: None,
            example: None,
            deprecated: false,
            description_provenance: provenance,
            example_provenance: None,
        };
        let mut ep = endpoint("/movie/{movie_id}/credits", &[]);
        ep.parameters = vec![
            param("heuristicparam text", by(HEURISTIC)),
            param("modelparam text", by("gpt-4o-mini")),
            param("humanparam text", None),
        ];
        for (provenance, kept) in [
            (by(HEURISTIC), false),
            (by("gpt-4o-mini"), true),
            (None, true),
        ] {
            ep.description = Some("Lists everyone credited on a film.".into());
            ep.description_provenance = provenance;
            for variant in [
                DocVariant::Full,
                DocVariant::WithParams,
                DocVariant::Relevant,
            ] {
                let t = build(&ep, variant);
                assert_eq!(t.contains("credited on a film"), kept, "{variant:?}: {t}");
                assert!(!t.contains("heuristicparam"), "{variant:?}: {t}");
                let params_read = variant != DocVariant::Relevant;
                assert_eq!(t.contains("modelparam"), params_read, "{variant:?}: {t}");
                assert_eq!(t.contains("humanparam"), params_read, "{variant:?}: {t}");
            }
        }
        assert!(authored(None) && authored(by("m").as_ref()) && !authored(by(HEURISTIC).as_ref()));

        // Shown instead of the author's weak text, the heuristic's gives the ranking that
        // text back; a model's replaces it.
        let instead = |generator: &str| {
            by(generator).map(|p| Provenance {
                replaced: Some("Search for movies.".into()),
                ..p
            })
        };
        ep.description = Some("Get credits of the movie.".into());
        ep.description_provenance = instead(HEURISTIC);
        ep.parameters = vec![param("Heuristic words.", instead(HEURISTIC))];
        let t = build(&ep, DocVariant::Full);
        assert!(
            !t.contains("Get credits of the movie") && !t.contains("Heuristic words"),
            "{t}"
        );
        assert_eq!(t.matches("Search for movies").count(), 2, "{t}");
        ep.description_provenance = instead("gpt-4o-mini");
        let t = build(&ep, DocVariant::Full);
        assert!(t.contains("Get credits of the movie"), "{t}");
    }
}
