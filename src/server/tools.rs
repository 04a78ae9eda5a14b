//! Catalog endpoints as MCP tool definitions.
//!
//! A tool definition is what a model reads to decide whether to call a tool, and every
//! exposed tool costs context on every turn, so descriptions keep what helps choosing
//! (the summary, the first sentences of the description, the method and path) and leave
//! the rest to `describe_tool`. The `inputSchema` and annotations come from `invoke`, the
//! module that also validates and sends the arguments, so what a client is told and what
//! the server enforces cannot drift apart.

use crate::catalog::Endpoint;
use crate::invoke::annotations::ToolAnnotations as Hints;
use crate::invoke::schema::input_schema;
use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::Value;
use std::sync::Arc;

/// Characters of description kept in a tool definition.
const DESCRIPTION_CHARS: usize = 320;
/// Characters of a tool title.
const TITLE_CHARS: usize = 80;

/// The MCP tool for an endpoint.
pub fn endpoint_tool(ep: &Endpoint) -> Tool {
    let schema = match input_schema(ep) {
        Value::Object(o) => o,
        // input_schema always builds an object; an empty object schema is the safe fallback.
        _ => JsonObject::from_iter([("type".to_string(), Value::from("object"))]),
    };
    let tool = Tool::new(ep.tool_name.clone(), description(ep), Arc::new(schema))
        .with_title(title(ep))
        .with_annotations(mcp_annotations(
            crate::invoke::annotations::of_endpoint(ep),
            title(ep),
        ));
    match generated_meta(ep) {
        Some(meta) => tool.with_meta(MetaObject(meta)),
        None => tool,
    }
}

/// `_meta` key naming the generated parts of a tool definition, for clients that show
/// (or let a reviewer check) what no human wrote. Generated parameter descriptions and
/// examples are marked inside the input schema (`x-generated`).
pub const GENERATED_META_KEY: &str = "shortlist/generated";

/// `{"shortlist/generated": {"description": {generator, template, date}}}` when the tool's
/// description shows generated text.
fn generated_meta(ep: &Endpoint) -> Option<JsonObject> {
    if !shows_generated(ep) {
        return None;
    }
    let provenance = ep.description_provenance.as_ref().map_or_else(
        // A generated summary (document expansion) carries no provenance of its own.
        || serde_json::json!({"generator": "enrichment", "template": "summary"}),
        |p| serde_json::to_value(p).unwrap_or(Value::Null),
    );
    let mut meta = JsonObject::new();
    meta.insert(
        GENERATED_META_KEY.into(),
        serde_json::json!({ "description": provenance }),
    );
    Some(meta)
}

/// Whether [`description`] includes generated text.
fn shows_generated(ep: &Endpoint) -> bool {
    ep.one_line_generated()
        || (ep.description_provenance.is_some()
            && ep
                .description
                .as_deref()
                .is_some_and(|d| !d.trim().is_empty()))
}

/// A short human title: the endpoint's one-line summary.
pub fn title(ep: &Endpoint) -> String {
    crate::text::clip_chars(&ep.one_line(), TITLE_CHARS)
}

/// What helps a model choose this tool, in a few sentences, ending with the HTTP call it
/// makes and the API it belongs to (tool names alone are ambiguous across APIs).
pub fn description(ep: &Endpoint) -> String {
    let summary = ep.one_line();
    let mut text = summary.clone();
    if let Some(d) = ep.description.as_deref() {
        let cleaned = crate::text::clean(d);
        // The summary is often the description's first sentence: do not say it twice.
        let rest = cleaned
            .strip_prefix(summary.trim_end_matches('…'))
            .unwrap_or(&cleaned)
            .trim_start_matches(['.', ' '])
            .to_string();
        if !rest.is_empty() && !summary.contains(rest.as_str()) {
            text = format!("{}. {}", text.trim_end_matches('.'), rest);
        }
    }
    let mut text = crate::text::clip_chars(&text, DESCRIPTION_CHARS);
    if ep.deprecated {
        text = format!("Deprecated. {text}");
    }
    // Said in the text too: the model choosing a tool should know a description is a
    // generated guess, not the API author's word.
    let generated = if shows_generated(ep) {
        "; generated description"
    } else {
        ""
    };
    format!("{text}\n{} ({}{generated})", ep.operation(), ep.api_title)
}

/// The rmcp form of the method-derived hints.
pub fn mcp_annotations(h: Hints, title: String) -> ToolAnnotations {
    let mut a = ToolAnnotations::with_title(title)
        .read_only(h.read_only_hint)
        .idempotent(h.idempotent_hint)
        .open_world(h.open_world_hint);
    // destructiveHint is meaningful only when readOnlyHint is false (MCP spec).
    if !h.read_only_hint {
        a = a.destructive(h.destructive_hint);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Method, ParamLocation, Parameter};

    fn ep(method: Method) -> Endpoint {
        Endpoint {
            api: "tmdb".into(),
            api_title: "TMDB".into(),
            tool_name: "getMovie".into(),
            method,
            path: "/movie/{movie_id}".into(),
            operation_id: Some("getMovie".into()),
            summary: Some("Get movie details".into()),
            description: Some(
                "Get movie details. Returns the <b>primary</b> information about a movie.".into(),
            ),
            tags: vec![],
            deprecated: false,
            parameters: vec![Parameter {
                name: "movie_id".into(),
                location: ParamLocation::Path,
                required: true,
                description: None,
                schema: serde_json::json!({"type": "integer"}),
                style: None,
                explode: None,
                example: None,
                deprecated: false,
                description_provenance: None,
                example_provenance: None,
            }],
            request_body: None,
            response_fields: vec![],
            security: vec![],
            servers: vec!["https://api.example/3".into()],
            generated_summary: None,
            generated_questions: vec![],
            description_provenance: None,
            mcp: None,
        }
    }

    #[test]
    fn description_is_short_and_names_the_call() {
        let d = description(&ep(Method::Get));
        assert_eq!(
            d,
            "Get movie details. Returns the primary information about a movie.\nGET /movie/{movie_id} (TMDB)"
        );
    }

    #[test]
    fn tool_carries_schema_title_and_hints() {
        let t = endpoint_tool(&ep(Method::Get));
        assert_eq!(t.name, "getMovie");
        assert_eq!(t.title.as_deref(), Some("Get movie details"));
        let a = t.annotations.expect("annotations");
        assert_eq!(a.read_only_hint, Some(true));
        assert_eq!(a.destructive_hint, None);
        assert_eq!(a.open_world_hint, Some(true));
        assert_eq!(t.input_schema["required"], serde_json::json!(["movie_id"]));

        let del = endpoint_tool(&ep(Method::Delete))
            .annotations
            .expect("hints");
        assert_eq!(del.read_only_hint, Some(false));
        assert_eq!(del.destructive_hint, Some(true));
        assert_eq!(del.idempotent_hint, Some(true));
    }

    #[test]
    fn generated_descriptions_are_marked_in_text_and_meta() {
        let human = endpoint_tool(&ep(Method::Get));
        assert!(human.meta.is_none());
        assert!(!human
            .description
            .as_deref()
            .unwrap_or("")
            .contains("generated"));

        let mut e = ep(Method::Get);
        e.summary = None;
        e.description = Some("Fetches one movie by its id.".into());
        e.description_provenance = Some(crate::catalog::Provenance {
            replaced: None,
            generator: "heuristic".into(),
            template: String::new(),
            date: "2026-11-22".into(),
        });
        let tool = endpoint_tool(&e);
        assert!(tool
            .description
            .as_deref()
            .is_some_and(|d| d.ends_with("(TMDB; generated description)")));
        let meta = serde_json::to_value(tool.meta.expect("meta")).unwrap();
        assert_eq!(
            meta[GENERATED_META_KEY]["description"]["generator"],
            "heuristic"
        );

        let mut e = ep(Method::Get);
        e.summary = None;
        e.description = None;
        e.generated_summary = Some("Details of a movie.".into());
        let tool = endpoint_tool(&e);
        assert!(tool.description.as_deref().is_some_and(
            |d| d.starts_with("Details of a movie.") && d.contains("generated description")
        ));
        assert!(tool.meta.is_some());
    }
}
