//! The three meta-tools every client sees, whatever else is exposed:
//!
//! - `find_tools(query?, k?, api?)`: shortlist endpoints for a task (and, in dynamic mode,
//!   expose them as tools of this client); without a query, list the catalog's APIs;
//! - `describe_tool(name)`: one endpoint's full definition, on demand;
//! - `call_tool(name, arguments)`: invoke any catalog endpoint by name.
//!
//! The last one is what keeps the server usable from clients that never refresh their tool
//! list (see notes/mcp-facts.md): with `find_tools` returning the required arguments and
//! `call_tool` taking them, a model can go from task to API call in one turn on any client.

use super::tools::mcp_annotations;
use crate::invoke::annotations::ToolAnnotations as Hints;
use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};
use std::sync::Arc;

pub const FIND_TOOLS: &str = "find_tools";
pub const DESCRIBE_TOOL: &str = "describe_tool";
pub const CALL_TOOL: &str = "call_tool";

/// Characters of a `find_tools` query that are used.
pub const MAX_QUERY_CHARS: usize = 2000;

/// Whether a name is one of the meta-tools. Endpoints never take these names
/// ([`crate::catalog::naming::RESERVED`]).
pub fn is_meta(name: &str) -> bool {
    matches!(name, FIND_TOOLS | DESCRIBE_TOOL | CALL_TOOL)
}

/// `find_tools` arguments. The input schema clients see is derived from this type (field
/// docs become descriptions); [`patch_find_schema`] adds what only the running server knows.
/// Nothing in it grows with the catalog: the API filter is free text matched by the server
/// ([`super::apis`]), so the definitions cost the same at 10 APIs or 10,000.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// The task, e.g. 'find the director of the movie Inception'. Omit it to list the APIs.
    #[serde(default, deserialize_with = "query_text")]
    #[schemars(with = "String", length(min = 1))]
    pub query: Option<String>,
    /// How many endpoints to return; without it, as many as fit a short answer.
    #[serde(default, deserialize_with = "count")]
    #[schemars(with = "u32", range(min = 1))]
    pub k: Option<usize>,
    /// Only this API: its id or title, any case, or part of it.
    #[serde(default, deserialize_with = "optional_text")]
    #[schemars(with = "String")]
    pub api: Option<String>,
}

/// `describe_tool` arguments.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DescribeArgs {
    /// A tool name returned by find_tools.
    #[serde(deserialize_with = "name_text")]
    #[schemars(length(min = 1))]
    pub name: String,
}

/// `call_tool` arguments.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallArgs {
    /// A tool name returned by find_tools.
    #[serde(deserialize_with = "name_text")]
    #[schemars(length(min = 1))]
    pub name: String,
    /// The tool's arguments, as its inputSchema describes.
    #[serde(default, deserialize_with = "tool_arguments")]
    pub arguments: JsonObject,
}

/// The schema derived from `T`, as a tool input schema (root type object, no title).
/// What says nothing to a model is dropped, since a client pays for every token of these
/// definitions on every turn: `$schema` (2020-12 is MCP's default), `"default": null` of
/// optional strings and schemars' `format: uint`.
fn input_schema<T: JsonSchema + 'static>() -> JsonObject {
    let mut schema = match schema_for_input::<T>() {
        Ok(s) => s.as_ref().clone(),
        // Only a type whose root is not an object fails, and the three above are structs.
        Err(e) => unreachable!("meta-tool argument type without an object schema: {e}"),
    };
    schema.remove("$schema");
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for p in props.values_mut().filter_map(Value::as_object_mut) {
            if p.get("default").is_some_and(Value::is_null) {
                p.remove("default");
            }
            if p.get("format").and_then(Value::as_str) == Some("uint") {
                p.remove("format");
            }
        }
    }
    schema
}

/// The runtime part of the `find_tools` schema, the one place it is patched in: the
/// server's bound on `k`.
fn patch_find_schema(schema: &mut JsonObject, max_k: usize) {
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return;
    };
    if let Some(Value::Object(k)) = props.get_mut("k") {
        k.insert("maximum".into(), json!(max_k));
    }
}

/// The meta-tool definitions. `max_k` bounds `k`; `exposes` says whether `find_tools` adds
/// tools to the client's list (dynamic mode) or only ranks.
pub fn definitions(max_k: usize, exposes: bool) -> Vec<Tool> {
    let mut find_schema = input_schema::<FindArgs>();
    patch_find_schema(&mut find_schema, max_k);
    let find_description = if exposes {
        "Find the API endpoints for a task and add them to your tools. Describe what you want \
         to do in plain words. Returns the best matches with their required arguments; call \
         them directly, or through call_tool if your tool list does not update."
    } else {
        "Find the API endpoints for a task. Describe what you want to do in plain words. \
         Returns the best matches with their required arguments; call them with call_tool."
    };
    let find = Tool::new(FIND_TOOLS, find_description, Arc::new(find_schema))
        .with_title("Find API tools")
        .with_annotations(mcp_annotations(
            Hints {
                read_only_hint: true,
                destructive_hint: false,
                idempotent_hint: true,
                open_world_hint: false,
            },
            "Find API tools".into(),
        ));
    let describe = Tool::new(
        DESCRIBE_TOOL,
        "The full definition of one API tool: every parameter with its type, constraints and \
         examples, the request body schema, and the authentication it needs.",
        Arc::new(input_schema::<DescribeArgs>()),
    )
    .with_title("Describe an API tool")
    .with_annotations(mcp_annotations(
        Hints {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        },
        "Describe an API tool".into(),
    ));
    let call = Tool::new(
        CALL_TOOL,
        "Call any API tool by name with its arguments, exactly as if it were called directly. \
         Use it for tools found with find_tools that are not (yet) in your tool list.",
        Arc::new(input_schema::<CallArgs>()),
    )
    .with_title("Call an API tool")
    .with_annotations(mcp_annotations(
        // It may call any endpoint, so it carries the most cautious hints.
        Hints {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        },
        "Call an API tool".into(),
    ));
    vec![find, describe, call]
}

/// Parses arguments into `T`; the error is a message for the model.
fn parse<T: for<'de> Deserialize<'de>>(args: &JsonObject) -> Result<T, String> {
    serde_json::from_value(Value::Object(args.clone())).map_err(|e| {
        // serde names unknown and missing fields itself; the field parsers below name
        // theirs. "unknown field `q`, expected ..." reads as an argument error as it is.
        e.to_string().replace("field", "argument")
    })
}

/// Reads `find_tools` arguments; `k` above `max_k` is lowered to it.
pub fn find_args(args: &JsonObject, max_k: usize) -> Result<FindArgs, String> {
    let mut a: FindArgs = parse(args)?;
    a.k = a.k.map(|k| k.min(max_k));
    Ok(a)
}

/// Reads the `describe_tool` name.
pub fn describe_args(args: &JsonObject) -> Result<String, String> {
    parse::<DescribeArgs>(args).map(|a| a.name)
}

/// Reads `call_tool` arguments. `arguments` may be omitted (tools without parameters) or,
/// as some clients do, sent as a JSON string.
pub fn call_args(args: &JsonObject) -> Result<CallArgs, String> {
    parse(args)
}

/// A required non-empty string, trimmed.
fn required_text<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Value::String(_) | Value::Null => Err(serde::de::Error::custom(format!(
            "'{key}' is required and must be a non-empty string"
        ))),
        _ => Err(serde::de::Error::custom(format!(
            "'{key}' must be a string"
        ))),
    }
}

/// The task text, `None` when left out (a request for the API listing). A description
/// longer than [`MAX_QUERY_CHARS`] is not a query any more; bounding it bounds the ranking
/// work one request can cause. An empty or blank query is an error rather than a listing:
/// it is more likely a model's slip than a request to browse.
fn query_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    Ok(Some(
        required_text(v, "query")
            .map_err(serde::de::Error::custom)?
            .chars()
            .take(MAX_QUERY_CHARS)
            .collect(),
    ))
}

fn name_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    required_text(d, "name")
}

/// `k`: a positive integer; `3.0` counts as 3 (some clients send every number as a float),
/// `null` as not given.
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    match v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
            .map(|f| f as u64)
    }) {
        Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        _ => Err(serde::de::Error::custom("'k' must be a positive integer")),
    }
}

/// `api`: an empty string means no filter, like leaving it out.
fn optional_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.trim().to_string())),
        _ => Err(serde::de::Error::custom("'api' must be a string")),
    }
}

/// `arguments`: an object, or the same object sent as a JSON string.
fn tool_arguments<'de, D: Deserializer<'de>>(d: D) -> Result<JsonObject, D::Error> {
    let bad = || serde::de::Error::custom("'arguments' must be an object of the tool's arguments");
    match Value::deserialize(d)? {
        Value::Null => Ok(JsonObject::new()),
        Value::Object(o) => Ok(o),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(o)) => Ok(o),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_meta_tool_name_is_reserved_from_endpoints() {
        for name in [FIND_TOOLS, DESCRIBE_TOOL, CALL_TOOL] {
            assert!(is_meta(name));
            assert!(crate::catalog::naming::RESERVED.contains(&name), "{name}");
        }
        assert_eq!(crate::catalog::naming::RESERVED.len(), 3);
    }

    fn obj(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn find_args_defaults_and_bounds() {
        let a = find_args(&obj(json!({"query": " movies "})), 20).unwrap();
        assert_eq!(
            a,
            FindArgs {
                query: Some("movies".into()),
                k: None,
                api: None
            }
        );
        assert_eq!(
            find_args(&obj(json!({"query": "x", "k": 99})), 20)
                .unwrap()
                .k,
            Some(20)
        );
        assert_eq!(
            find_args(&obj(json!({"query": "x", "k": 3.0})), 20)
                .unwrap()
                .k,
            Some(3)
        );
        assert!(find_args(&obj(json!({"query": "x", "k": "3"})), 20).is_err());
        assert!(find_args(&obj(json!({"query": "x", "k": 0})), 20).is_err());
        let e = find_args(&obj(json!({"query": " "})), 20).unwrap_err();
        assert!(e.contains("'query'"), "{e}");
        assert!(find_args(&obj(json!({"query": 3})), 20).is_err());
        assert!(find_args(&obj(json!({"q": "x"})), 20).is_err());
        // No query: the API listing, optionally narrowed.
        let a = find_args(&obj(json!({})), 20).unwrap();
        assert_eq!((a.query, a.api), (None, None));
        let a = find_args(&obj(json!({"query": null, "api": " pay "})), 20).unwrap();
        assert_eq!((a.query, a.api.as_deref()), (None, Some("pay")));
    }

    #[test]
    fn call_args_accept_object_string_or_nothing() {
        let a = call_args(&obj(json!({"name": "t", "arguments": {"a": 1}}))).unwrap();
        assert_eq!(a.arguments["a"], json!(1));
        let a = call_args(&obj(json!({"name": "t", "arguments": "{\"a\": 2}"}))).unwrap();
        assert_eq!(a.arguments["a"], json!(2));
        assert!(call_args(&obj(json!({"name": "t"})))
            .unwrap()
            .arguments
            .is_empty());
        assert!(call_args(&obj(json!({"name": "t", "arguments": [1]}))).is_err());
        assert!(call_args(&obj(json!({"arguments": {}}))).is_err());
    }

    #[test]
    fn definitions_are_three_valid_tools() {
        let d = definitions(20, true);
        let names: Vec<&str> = d.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, [FIND_TOOLS, DESCRIBE_TOOL, CALL_TOOL]);
        assert_eq!(d[0].input_schema["properties"]["k"]["maximum"], json!(20));
        // Nothing of the catalog is in them: no enum of API ids, whatever the catalog.
        assert!(d[0].input_schema["properties"]["api"].get("enum").is_none());
        // A client pays for these on every turn, so they stay under 500 tokens (cl100k, as
        // `benches/mcp_server.rs` counts them in `tools/list`), in every mode.
        let bpe = tiktoken_rs::cl100k_base().unwrap();
        for exposes in [true, false] {
            let text = serde_json::to_string(&definitions(20, exposes)).unwrap();
            let tokens = bpe.encode_with_special_tokens(&text).len();
            println!("{tokens} tokens: {text}");
            assert!(tokens <= 500, "{tokens} tokens");
        }
    }

    /// The derived schemas say what the parsers accept: the same properties, the same
    /// required ones, nothing else allowed, and the documented descriptions and bounds.
    #[test]
    fn derived_schemas_match_the_parsers() {
        let d = definitions(20, true);
        let props = |i: usize| -> Vec<String> {
            d[i].input_schema["properties"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(props(0), ["query", "k", "api"]);
        assert_eq!(props(1), ["name"]);
        assert_eq!(props(2), ["name", "arguments"]);
        for (i, required) in [(0, Value::Null), (1, json!(["name"])), (2, json!(["name"]))] {
            let s = &d[i].input_schema;
            assert_eq!(s["type"], json!("object"));
            assert_eq!(
                s.get("required").cloned().unwrap_or_default(),
                required,
                "{}",
                d[i].name
            );
            assert_eq!(s["additionalProperties"], json!(false), "{}", d[i].name);
            assert!(s.get("title").is_none());
        }
        let find = &d[0].input_schema["properties"];
        assert_eq!(find["query"]["type"], json!("string"));
        assert_eq!(find["query"]["minLength"], json!(1));
        assert!(find["query"]["description"]
            .as_str()
            .is_some_and(|t| t.contains("Inception")));
        assert_eq!(find["k"]["type"], json!("integer"));
        assert_eq!(find["k"]["minimum"], json!(1));
        assert!(find["k"].get("default").is_none());
        assert_eq!(find["api"]["type"], json!("string"));
        assert_eq!(
            d[2].input_schema["properties"]["arguments"]["type"],
            json!("object")
        );
        // Every property the schema offers is accepted; anything else is refused by name.
        assert!(find_args(&obj(json!({"query": "q", "k": 2, "api": "a"})), 20).is_ok());
        assert!(call_args(&obj(json!({"name": "t", "arguments": {}}))).is_ok());
        let e = find_args(&obj(json!({"query": "q", "limit": 2})), 20).unwrap_err();
        assert!(e.contains("unknown argument `limit`"), "{e}");
        let e = describe_args(&obj(json!({}))).unwrap_err();
        assert!(e.contains("missing argument `name`"), "{e}");
        let e = find_args(&obj(json!({"query": "q", "k": "3"})), 20).unwrap_err();
        assert!(e.contains("'k'"), "{e}");
    }
}
