//! The heuristic enricher: descriptions from what a spec always has, so enrichment works
//! with no model at all (`--llm none`), and so an endpoint the LLM failed on still gets
//! something.
//!
//! An endpoint's description comes from its operationId ("getMovieCredits" -> "Get movie
//! credits") or, when the operationId is only the method and path run together (TMDB's
//! `GET_movie-movie_id-credits`), from the path ("Get credits of the movie given by movie
//! id"). A parameter's description comes from its name, location and constraints.
//! Examples live in [`super::heuristic_examples`].

use super::context::type_name;
use crate::catalog::{Endpoint, Method, ParamLocation, Parameter};
use crate::text::{sentence_case, split_identifier};
use serde_json::Value;

/// Enum values named in a parameter description.
const MAX_ENUM: usize = 8;

/// Path words that are already verbs: no verb is put in front of them.
const VERBS: &[&str] = &[
    "search",
    "find",
    "play",
    "pause",
    "seek",
    "skip",
    "next",
    "previous",
    "repeat",
    "shuffle",
    "follow",
    "unfollow",
    "add",
    "remove",
    "transfer",
    "rate",
    "login",
    "logout",
    "validate",
    "verify",
    "send",
    "upload",
    "download",
    "export",
    "import",
    "check",
    "sync",
    "cancel",
    "approve",
    "reject",
    "start",
    "stop",
    "reset",
    "refresh",
    "subscribe",
    "unsubscribe",
];

/// Action words of RPC-style paths.
const CRUD: &[&str] = &[
    "get", "list", "create", "update", "delete", "set", "put", "post",
];

/// The description of an endpoint: what it does, in words.
///
/// No list of response fields is appended: measured on RestBench
/// (docs/history/2026-11.md), such a list diluted the doc text (every TMDB list endpoint
/// returns `page`, `results`, ...) and cost more recall than it gained; the doc text
/// already carries the distinctive fields.
pub fn endpoint_description(ep: &Endpoint) -> String {
    format!("{}.", action(ep))
}

/// What the endpoint does, as a sentence without the final period.
pub fn action(ep: &Endpoint) -> String {
    if let Some(op) = ep
        .operation_id
        .as_deref()
        .filter(|op| !is_path_dump(op, &ep.path))
    {
        let words = dedup(split_identifier(op));
        if !words.is_empty() {
            return sentence_case(&words);
        }
    }
    path_action(ep.method, &ep.path)
}

/// Is the operationId just the path spelled out (it contains a path parameter's name)?
fn is_path_dump(op: &str, path: &str) -> bool {
    let op_words = split_identifier(op).join(" ");
    path_params(path).any(|p| {
        let pw = split_identifier(p).join(" ");
        !pw.is_empty() && format!(" {op_words} ").contains(&format!(" {pw} "))
    })
}

fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('{').skip(1).filter_map(|s| s.split('}').next())
}

/// Drops a word that repeats the one before it ("movie movie id" -> "movie id").
fn dedup(words: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for w in words {
        if out.last() != Some(&w) {
            out.push(w);
        }
    }
    out
}

/// `GET /account/{account_id}/favorite/movies` -> "Get favorite movies of the account given
/// by account id".
pub fn path_action(method: Method, path: &str) -> String {
    // Groups of literal words, each with the parameter that follows it, if any.
    let mut groups: Vec<(Vec<String>, Option<String>)> = vec![(Vec::new(), None)];
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        if let Some(p) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            if let Some(last) = groups.last_mut() {
                last.1 = Some(split_identifier(p).join(" "));
            }
            groups.push((Vec::new(), None));
        } else {
            if let Some(last) = groups.last_mut() {
                last.0.extend(split_identifier(seg));
            }
        }
    }
    groups.retain(|(w, p)| !w.is_empty() || p.is_some());
    let Some((last_words, last_param)) = groups.pop() else {
        return format!("{} the root resource", verb(method));
    };
    let mut phrase = if last_words.is_empty() {
        "the item".to_string()
    } else {
        last_words.join(" ")
    };
    if let Some(p) = last_param {
        phrase = format!("the {phrase} given by {p}");
    }
    for (words, param) in groups.iter().rev() {
        if words.is_empty() {
            continue;
        }
        phrase.push_str(&format!(" of the {}", words.join(" ")));
        if let Some(p) = param {
            phrase.push_str(&format!(" given by {p}"));
        }
    }
    let words: Vec<&str> = phrase.split(' ').collect();
    let first = words.first().copied().unwrap_or("");
    let last = words.last().copied().unwrap_or("");
    if VERBS.contains(&first) {
        sentence_case(&[phrase])
    } else if words.len() > 1 && (VERBS.contains(&last) || CRUD.contains(&last)) {
        // RPC-style paths name the action last: `/track.lyrics.get` -> "Get track lyrics".
        sentence_case(&[format!("{last} {}", words[..words.len() - 1].join(" "))])
    } else {
        format!("{} {phrase}", verb(method))
    }
}

fn verb(method: Method) -> &'static str {
    match method {
        Method::Get => "Get",
        Method::Post => "Create",
        Method::Put => "Replace",
        Method::Patch => "Update",
        Method::Delete => "Delete",
        Method::Head => "Check",
        Method::Options => "Describe options of",
        Method::Trace => "Trace",
    }
}

/// The description of a parameter.
pub fn param_description(p: &Parameter) -> String {
    let mut s = meaning(p);
    let location = match p.location {
        ParamLocation::Path => "path",
        ParamLocation::Query => "query",
        ParamLocation::Header => "header",
        ParamLocation::Cookie => "cookie",
        ParamLocation::Argument => "tool",
    };
    s.push_str(&format!(
        " ({location} parameter, {}{}).",
        type_name(&p.schema),
        if p.required { ", required" } else { "" }
    ));
    let c = constraint_sentence(&p.schema);
    if !c.is_empty() {
        s.push(' ');
        s.push_str(&c);
    }
    s
}

/// What a parameter name means, for names every API uses; words of the name otherwise.
fn meaning(p: &Parameter) -> String {
    let words = split_identifier(&p.name);
    let joined = words.join(" ");
    let known = match joined.as_str() {
        "page" | "page number" => Some("Page of results to return"),
        "limit" | "per page" | "page size" | "size" | "count" | "max results" => {
            Some("Maximum number of items to return")
        }
        "offset" | "skip" | "start" => Some("Index of the first item to return"),
        "cursor" | "after" | "before" | "page token" | "next token" => {
            Some("Pagination cursor from a previous response")
        }
        "q" | "query" | "search" | "keyword" | "keywords" | "term" => Some("Text to search for"),
        "sort" | "sort by" | "order by" => Some("Field to sort the results by"),
        "order" | "sort order" | "direction" => Some("Sort direction"),
        "language" | "lang" | "locale" => Some("Language of the returned texts"),
        "region" | "country" => Some("Country to restrict the results to"),
        "market" => Some("Market (country) to restrict the results to"),
        "fields" => Some("Fields to include in the response"),
        "include" | "expand" | "embed" => Some("Related data to include in the response"),
        "id" => Some("Identifier of the item"),
        "api key" | "apikey" | "key" => Some("API key"),
        "authorization" => Some("Credentials for the request"),
        _ => None,
    };
    if let Some(k) = known {
        return k.to_string();
    }
    let is_bool = type_name(&p.schema) == "boolean";
    match words.last().map(String::as_str) {
        Some("id") | Some("ids") if words.len() > 1 => {
            let what = words[..words.len() - 1].join(" ");
            let plural = words.last().is_some_and(|w| w == "ids");
            if plural {
                format!("Identifiers of the {what} items")
            } else {
                format!("Identifier of the {what}")
            }
        }
        _ if is_bool => format!("Whether to {}", joined),
        _ if words.is_empty() => format!("The {} value", p.name),
        _ => sentence_case(&words),
    }
}

/// Constraints as a sentence: "One of: a, b. Between 1 and 1000. Defaults to 1."
fn constraint_sentence(schema: &Value) -> String {
    let mut parts = Vec::new();
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let s = if schema.get("type").and_then(Value::as_str) == Some("array") {
        schema.get("items").unwrap_or(schema)
    } else {
        schema
    };
    if let Some(Value::Array(e)) = s.get("enum") {
        let shown: Vec<String> = e.iter().take(MAX_ENUM).map(text).collect();
        let more = if e.len() > MAX_ENUM { ", ..." } else { "" };
        parts.push(format!("One of: {}{more}.", shown.join(", ")));
    }
    match (s.get("minimum"), s.get("maximum")) {
        (Some(a), Some(b)) => parts.push(format!("Between {} and {}.", text(a), text(b))),
        (Some(a), None) => parts.push(format!("At least {}.", text(a))),
        (None, Some(b)) => parts.push(format!("At most {}.", text(b))),
        _ => {}
    }
    if let Some(f) = s.get("format").and_then(Value::as_str) {
        let hint = match f {
            "date" => "a date (YYYY-MM-DD)",
            "date-time" => "a date and time (RFC 3339)",
            "email" => "an email address",
            "uuid" => "a UUID",
            "uri" | "url" => "a URL",
            _ => "",
        };
        if !hint.is_empty() {
            parts.push(format!("Format: {hint}."));
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        parts.push(format!("Must match {p}."));
    }
    if let Some(d) = schema.get("default") {
        parts.push(format!("Defaults to {}.", text(d)));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ep(method: Method, path: &str, op: Option<&str>, fields: &[&str]) -> Endpoint {
        let mut e: Endpoint = serde_json::from_value(json!({
            "api": "t", "api_title": "T", "tool_name": "x", "method": "GET", "path": path,
            "operation_id": op, "summary": null, "description": null, "tags": [],
            "deprecated": false, "parameters": [], "request_body": null,
            "response_fields": fields, "security": [], "servers": [],
            "generated_summary": null, "generated_questions": [], "description_provenance": null
        }))
        .unwrap();
        e.method = method;
        e
    }

    #[test]
    fn from_operation_id() {
        let e = ep(
            Method::Get,
            "/movie/{movie_id}/credits",
            Some("getMovieCredits"),
            &["cast", "crew"],
        );
        assert_eq!(endpoint_description(&e), "Get movie credits.");
    }

    #[test]
    fn from_path_when_the_operation_id_is_the_path() {
        let e = ep(
            Method::Get,
            "/movie/{movie_id}/keywords",
            Some("GET_movie-movie_id-keywords"),
            &[],
        );
        assert_eq!(
            endpoint_description(&e),
            "Get keywords of the movie given by movie id."
        );
        let e = ep(
            Method::Get,
            "/account/{account_id}/favorite/movies",
            None,
            &[],
        );
        assert_eq!(
            action(&e),
            "Get favorite movies of the account given by account id"
        );
        assert_eq!(path_action(Method::Get, "/search/movie"), "Search movie");
        assert_eq!(
            path_action(Method::Get, "/track.lyrics.get"),
            "Get track lyrics"
        );
        assert_eq!(
            path_action(Method::Delete, "/lists/{list_id}"),
            "Delete the lists given by list id"
        );
    }

    #[test]
    fn parameters_from_names_locations_constraints() {
        let p: Parameter = serde_json::from_value(json!({
            "name": "page", "location": "query", "required": false, "description": null,
            "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 1},
            "style": null, "explode": null, "example": null, "deprecated": false,
            "description_provenance": null, "example_provenance": null
        }))
        .unwrap();
        assert_eq!(
            param_description(&p),
            "Page of results to return (query parameter, integer). Between 1 and 1000. Defaults to 1."
        );
        let mut q = p.clone();
        q.name = "movie_id".into();
        q.location = ParamLocation::Path;
        q.required = true;
        q.schema = json!({"type": "integer"});
        assert_eq!(
            param_description(&q),
            "Identifier of the movie (path parameter, integer, required)."
        );
        q.name = "include_adult".into();
        q.schema = json!({"type": "boolean", "enum": [true, false]});
        assert!(param_description(&q).starts_with("Whether to include adult"));
    }
}
