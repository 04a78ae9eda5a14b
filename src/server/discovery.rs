//! What `find_tools` and `describe_tool` answer.
//!
//! `find_tools` follows the discovery pattern: one compact line of facts per endpoint (tool
//! name, method and path, one-line summary, required arguments with their types, score)
//! because its answer lands in the model's context. It still carries enough to call each
//! tool in the same turn, which is what clients that ignore `tools/list_changed` need.
//! `describe_tool` is the expensive, complete view, fetched only for the tool about to be
//! used.

use super::exposure::Exposure;
use crate::catalog::{ApiConfig, AuthConfig, AuthScheme, Endpoint, ParamLocation};
use crate::invoke::args::ArgTarget;
use crate::invoke::schema::{argument_schemas, input_schema};
use serde_json::{json, Map, Value};

/// Optional argument names listed per hit before "+N more".
const OPTIONAL_SHOWN: usize = 8;
/// Characters of the one-line purpose in the compact form.
const COMPACT_SUMMARY_CHARS: usize = 80;

/// Tokens (cl100k) the hits of a `find_tools` answer without `k` may take, by default: as
/// many hits as fit. Chosen on the development suite (`docs/results.md`, "Answers sized in
/// tokens").
pub const DEFAULT_ANSWER_TOKENS: usize = 400;
/// Enum values spelled out in a type summary before it says "…".
const ENUM_SHOWN: usize = 6;
/// Characters of the description `describe_tool` returns.
const FULL_DESCRIPTION_CHARS: usize = 2000;

/// One `find_tools` hit. With a score (the caller asked for a number of hits): an object
/// with the optional argument names and the score too. Without (an answer sized in
/// tokens): the compact form, one line of what calling it takes and no more, `name(required
/// arguments with their types and enum values) METHOD /path: purpose`, since keys and
/// quotes would cost a third of the budget; the order says the rest, and `describe_tool`
/// the optional arguments.
pub fn hit(ep: &Endpoint, score: Option<f32>) -> Value {
    let mut required = Map::new();
    let mut optional = Vec::new();
    for a in argument_schemas(ep) {
        if a.required {
            required.insert(a.spec.name.clone(), Value::String(type_summary(&a.schema)));
        } else {
            optional.push(a.spec.name.clone());
        }
    }
    let Some(score) = score else {
        let args: Vec<String> = required
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.as_str().unwrap_or("any")))
            .collect();
        let generated = if ep.one_line_generated() {
            " (generated)"
        } else {
            ""
        };
        return Value::String(format!(
            "{}({}) {}: {}{generated}",
            ep.tool_name,
            args.join(", "),
            ep.operation(),
            crate::text::clip_chars(&ep.one_line(), COMPACT_SUMMARY_CHARS),
        ));
    };
    let mut out = json!({
        "name": ep.tool_name,
        "call": ep.operation(),
        "summary": ep.one_line(),
    });
    if ep.one_line_generated() {
        out["summary_generated"] = Value::Bool(true);
    }
    if !required.is_empty() {
        out["required"] = Value::Object(required);
    }
    if !optional.is_empty() {
        let more = optional.len().saturating_sub(OPTIONAL_SHOWN);
        let mut shown: Vec<Value> = optional
            .into_iter()
            .take(OPTIONAL_SHOWN)
            .map(Value::String)
            .collect();
        if more > 0 {
            shown.push(Value::String(format!("+{more} more (describe_tool)")));
        }
        out["optional"] = Value::Array(shown);
    }
    if ep.deprecated {
        out["deprecated"] = Value::Bool(true);
    }
    // Four decimals separate fused ranks; more digits only cost tokens.
    out["score"] = json!((f64::from(score) * 10_000.0).round() / 10_000.0);
    out
}

/// How many of `hits` (best first) fit `budget` tokens together, at least one: the answer
/// of a `find_tools` call that did not ask for a number. Each hit is counted as the compact
/// JSON it travels as, plus its separator.
pub fn fitting(hits: &[Value], budget: usize) -> usize {
    let mut used = 2;
    for (i, h) in hits.iter().enumerate() {
        used += super::tokens::count_json(h).unwrap_or(budget) + 1;
        if used > budget {
            return i.max(1);
        }
    }
    hits.len()
}

/// What the model may do with the hits, true for the exposure the client has: only a
/// session-era client with the dynamic list gets them as tools of its own; everyone can call
/// them through `call_tool` by the names given.
pub fn note(exposure: Exposure) -> &'static str {
    match exposure {
        Exposure::Dynamic => {
            "These are now tools in your list: call them directly, or with \
             call_tool(name, arguments) if your tool list has not updated. describe_tool(name) \
             gives every parameter."
        }
        Exposure::Catalog => {
            "Every endpoint is a tool in your list: call it directly, or with \
             call_tool(name, arguments). describe_tool(name) gives every parameter."
        }
        Exposure::Meta => {
            "Call one with call_tool(name, arguments), passing its required arguments as \
             shown. describe_tool(name) gives every parameter."
        }
    }
}

/// What the answer says when nothing in the catalog seems to fit the request.
pub const NO_MATCH_NOTE: &str = "Nothing in the catalog seems to fit this request: these \
    are only the closest endpoints. Do not call one unless it clearly does what was asked; \
    otherwise tell the user that no available API does this.";

/// The whole `find_tools` answer. `matched` says whether anything in the catalog fits the
/// request; when not, the hits are still listed (the closest ones) and the note says so
/// in words.
pub fn find_result(
    query: &str,
    hits: Vec<Value>,
    exposed: bool,
    matched: bool,
    mode_note: &str,
) -> Value {
    let note = if hits.is_empty() {
        "No endpoint matches; try other words or another api.".to_string()
    } else if !matched {
        format!("{NO_MATCH_NOTE} {mode_note}")
    } else {
        mode_note.to_string()
    };
    json!({
        "query": query,
        "matched": matched && !hits.is_empty(),
        "exposed": exposed,
        "tools": hits,
        "note": note,
    })
}

/// `describe_tool`'s full definition of one endpoint. `api_cfg` tells whether the server
/// holds credentials for it (the credentials themselves never appear).
pub fn describe(ep: &Endpoint, api_cfg: Option<&ApiConfig>, exposed: bool) -> Value {
    let arguments: Vec<Value> = argument_schemas(ep)
        .into_iter()
        .map(|a| {
            let mut v = json!({"argument": a.spec.name, "required": a.required});
            match a.spec.target {
                ArgTarget::Param(i) => {
                    if let Some(p) = ep.parameters.get(i) {
                        v["in"] = json!(p.location.as_str());
                        if p.name != a.spec.name {
                            v["name"] = json!(p.name);
                        }
                        if let Some(s) = &p.style {
                            v["style"] = json!(s);
                        }
                    }
                }
                ArgTarget::Body => {
                    if let Some(b) = &ep.request_body {
                        v["in"] = json!("body");
                        v["content_type"] = json!(b.content_type);
                    }
                }
            }
            v
        })
        .collect();
    let description = ep
        .description
        .as_deref()
        .map(|d| crate::text::clip_chars(&crate::text::clean(d), FULL_DESCRIPTION_CHARS))
        .filter(|d| !d.is_empty());
    let read_only = api_cfg.is_some_and(|c| c.read_only);
    let mut out = json!({
        "name": ep.tool_name,
        "title": super::tools::title(ep),
        "api": ep.api,
        "api_title": ep.api_title,
        "method": ep.method.as_str(),
        "path": ep.path,
        "summary": ep.one_line(),
        "description": description,
        "inputSchema": input_schema(ep),
        "arguments": arguments,
        "auth": auth(ep, api_cfg),
        "exposed": exposed,
    });
    if let Some(base) = ep.servers.first() {
        // Never the user info or query of a configured base URL: both may be credentials.
        out["base_url"] = json!(crate::invoke::request::shown_url_text(base));
    }
    if ep.deprecated {
        out["deprecated"] = json!(true);
    }
    if !ep.tags.is_empty() {
        out["tags"] = json!(ep.tags);
    }
    if read_only && !ep.method.is_safe() {
        out["blocked"] = json!("this API is configured read-only: the server refuses this method");
    }
    if let Some(g) = &ep.generated_summary {
        out["generated_summary"] = json!(g);
    }
    // Which texts no human wrote, with their provenance; parameters say it in their schema
    // (`x-generated`).
    let mut generated = Map::new();
    if let Some(p) = &ep.description_provenance {
        if ep
            .description
            .as_deref()
            .is_some_and(|d| !d.trim().is_empty())
        {
            generated.insert("description".into(), json!(p));
        }
    }
    if ep.one_line_generated() && ep.description_provenance.is_none() {
        generated.insert("summary".into(), json!({"template": "summary"}));
    }
    if !generated.is_empty() {
        out["generated"] = Value::Object(generated);
    }
    out
}

/// What the endpoint's security asks for and whether the server supplies it.
fn auth(ep: &Endpoint, api_cfg: Option<&ApiConfig>) -> Value {
    let alternatives: Vec<String> = ep
        .security
        .iter()
        .map(|req| {
            req.schemes
                .iter()
                .map(|(name, s)| scheme_text(name, s))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .filter(|s| !s.is_empty())
        .collect();
    let configured = api_cfg.and_then(|c| c.auth.as_ref()).map(|a| match a {
        AuthConfig::Bearer { .. } => "bearer token",
        AuthConfig::ApiKey { .. } => "API key",
        AuthConfig::Basic { .. } => "basic auth",
        AuthConfig::ClientCredentials { .. } => "OAuth client credentials",
        AuthConfig::TokenExchange { .. } => "your own token (exchanged for your sign-in)",
        AuthConfig::AuthorizationCode { .. } => "your own token (you consent once, by a link)",
    });
    json!({
        "requires": if alternatives.is_empty() { Value::Null } else { json!(alternatives) },
        "supplied_by_server": configured,
    })
}

fn scheme_text(name: &str, s: &AuthScheme) -> String {
    match s {
        AuthScheme::ApiKey {
            name: key,
            location,
        } => {
            let loc = match location {
                ParamLocation::Query => "query parameter",
                ParamLocation::Header => "header",
                ParamLocation::Cookie => "cookie",
                ParamLocation::Path => "path parameter",
                ParamLocation::Argument => "argument",
            };
            format!("{name}: API key in {loc} '{key}'")
        }
        AuthScheme::Bearer => format!("{name}: bearer token"),
        AuthScheme::Basic => format!("{name}: HTTP basic auth"),
        AuthScheme::OAuth2 { scopes } if scopes.is_empty() => format!("{name}: OAuth2"),
        AuthScheme::OAuth2 { scopes } => format!("{name}: OAuth2 ({})", scopes.join(", ")),
        AuthScheme::OpenIdConnect => format!("{name}: OpenID Connect"),
        AuthScheme::Other { description } => format!("{name}: {description}"),
    }
}

/// A short type for a schema: `integer`, `string (date)`, `string: day|week`,
/// `array of string`, `object {name, public}`.
pub fn type_summary(schema: &Value) -> String {
    let Some(o) = schema.as_object() else {
        return "any".into();
    };
    if let Some(Value::Array(values)) = o.get("enum") {
        let mut shown: Vec<String> = values
            .iter()
            .take(ENUM_SHOWN)
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        if values.len() > ENUM_SHOWN {
            shown.push("…".into());
        }
        return format!("{}: {}", base_type(o), shown.join("|"));
    }
    let base = base_type(o);
    match base.as_str() {
        "array" => match o.get("items") {
            Some(items) => format!("array of {}", type_summary(items)),
            None => "array".into(),
        },
        "object" => {
            let required: Vec<&str> = o
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if required.is_empty() {
                "object".into()
            } else {
                format!("object {{{}}}", required.join(", "))
            }
        }
        _ => match o.get("format").and_then(Value::as_str) {
            Some(f) => format!("{base} ({f})"),
            None => base,
        },
    }
}

fn base_type(o: &Map<String, Value>) -> String {
    match o.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join("|"),
        _ if o.contains_key("properties") => "object".into(),
        _ if o.contains_key("items") => "array".into(),
        _ => "any".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_sized_in_tokens_keeps_the_best_hits_that_fit() {
        let hits: Vec<Value> = (0..40)
            .map(|i| json!({"name": format!("tool_{i}"), "summary": "Does one thing well."}))
            .collect();
        let tokens =
            |n: usize| crate::server::tokens::count_json(&Value::Array(hits[..n].to_vec()));
        let n = fitting(&hits, 200);
        assert!(n > 1 && n < 40, "{n}");
        // Counted hit by hit (a little more than the array as a whole: never over budget).
        assert!(tokens(n) <= Some(200), "{:?} tokens in {n} hits", tokens(n));
        let by_hit: usize = hits[..=n]
            .iter()
            .map(|h| crate::server::tokens::count_json(h).unwrap() + 1)
            .sum();
        assert!(by_hit + 2 > 200, "one more would have fit: {by_hit}");
        // Everything fits a large budget; a tiny one still answers the best hit.
        assert_eq!(fitting(&hits, 100_000), 40);
        assert_eq!(fitting(&hits, 1), 1);
        assert_eq!(fitting(&[], 400), 0);
    }

    #[test]
    fn an_answer_says_whether_anything_fits() {
        let hits = vec![json!(
            "getTopTracks() GET /me/top/tracks: Get the user's top tracks"
        )];
        let fits = find_result(
            "top tracks",
            hits.clone(),
            false,
            true,
            note(Exposure::Meta),
        );
        assert_eq!(fits["matched"], true);
        assert_eq!(fits["note"], note(Exposure::Meta));
        // Nothing fits: the closest hits are still listed, and the note says it in words.
        let none = find_result(
            "top rated movies",
            hits.clone(),
            false,
            false,
            note(Exposure::Meta),
        );
        assert_eq!(none["matched"], false);
        assert_eq!(none["tools"], json!(hits));
        let said = none["note"].as_str().unwrap();
        assert!(
            said.starts_with(NO_MATCH_NOTE) && said.ends_with(note(Exposure::Meta)),
            "{said}"
        );
        // No hits at all is no match either.
        let empty = find_result("x", Vec::new(), false, true, note(Exposure::Meta));
        assert_eq!(empty["matched"], false);
    }

    #[test]
    fn type_summaries_are_short() {
        assert_eq!(type_summary(&json!({"type": "integer"})), "integer");
        assert_eq!(
            type_summary(&json!({"type": "string", "format": "date"})),
            "string (date)"
        );
        assert_eq!(
            type_summary(&json!({"type": "string", "enum": ["day", "week"]})),
            "string: day|week"
        );
        assert_eq!(
            type_summary(&json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            type_summary(&json!({"type": "object", "required": ["name"], "properties": {}})),
            "object {name}"
        );
        assert_eq!(type_summary(&json!({"type": ["string", "null"]})), "string");
    }
}
