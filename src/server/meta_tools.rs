//! The three meta-tools every client sees, whatever else is exposed:
//!
//! - `find_tools(query, k?, api?)`: shortlist endpoints for a task (and, in dynamic mode,
//!   expose them as tools of this client);
//! - `describe_tool(name)`: one endpoint's full definition, on demand;
//! - `call_tool(name, arguments)`: invoke any catalog endpoint by name.
//!
//! The last one is what keeps the server usable from clients that never refresh their tool
//! list (see notes/mcp-facts.md): with `find_tools` returning the required arguments and
//! `call_tool` taking them, a model can go from task to API call in one turn on any client.

use super::tools::mcp_annotations;
use crate::invoke::annotations::ToolAnnotations as Hints;
use rmcp::model::{JsonObject, Tool};
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub const FIND_TOOLS: &str = "find_tools";
pub const DESCRIBE_TOOL: &str = "describe_tool";
pub const CALL_TOOL: &str = "call_tool";

/// Characters of a `find_tools` query that are used.
pub const MAX_QUERY_CHARS: usize = 2000;

/// Shortlist size when the client does not say.
pub const DEFAULT_K: usize = 5;

/// Whether a name is one of the meta-tools. Endpoints never take these names
/// ([`crate::catalog::naming::RESERVED`]).
pub fn is_meta(name: &str) -> bool {
    matches!(name, FIND_TOOLS | DESCRIBE_TOOL | CALL_TOOL)
}

/// The meta-tool definitions. `apis` lists the catalog's API ids (offered as an enum for
/// `find_tools.api` when there is more than one); `max_k` bounds `k`; `exposes` says whether
/// `find_tools` adds tools to the client's list (dynamic mode) or only ranks.
pub fn definitions(apis: &[String], max_k: usize, exposes: bool) -> Vec<Tool> {
    let mut api = json!({
        "type": "string",
        "description": "Only endpoints of this API."
    });
    if apis.len() > 1 {
        api["enum"] = json!(apis);
    }
    let find_description = if exposes {
        "Find the API endpoints for a task and add them to your tools. Describe what you want \
         to do in plain words. Returns the best matches with their required arguments; call \
         them directly, or through call_tool if your tool list does not update."
    } else {
        "Find the API endpoints for a task. Describe what you want to do in plain words. \
         Returns the best matches with their required arguments; call them with call_tool."
    };
    let find = Tool::new(
        FIND_TOOLS,
        find_description,
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1,
                          "description": "The task, e.g. 'find the director of the movie Inception'."},
                "k": {"type": "integer", "minimum": 1, "maximum": max_k, "default": DEFAULT_K,
                      "description": "How many endpoints to return."},
                "api": api
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    )
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
        schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1,
                         "description": "A tool name returned by find_tools."}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
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
        schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1,
                         "description": "A tool name returned by find_tools."},
                "arguments": {"type": "object", "additionalProperties": true,
                              "description": "The tool's arguments, as its inputSchema describes."}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
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

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(o) => Arc::new(o),
        _ => Arc::new(Map::new()),
    }
}

/// Parsed `find_tools` arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct FindArgs {
    pub query: String,
    pub k: usize,
    pub api: Option<String>,
}

/// Parsed `call_tool` arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct CallArgs {
    pub name: String,
    pub arguments: JsonObject,
}

/// Reads `find_tools` arguments; the error is a message for the model.
pub fn find_args(args: &JsonObject, max_k: usize) -> Result<FindArgs, String> {
    // A task description longer than this is not a query any more; bounding it bounds the
    // ranking work one request can cause.
    let query: String = required_string(args, "query")?
        .chars()
        .take(MAX_QUERY_CHARS)
        .collect();
    let k = match args.get("k") {
        None | Some(Value::Null) => DEFAULT_K,
        Some(v) => match v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                .map(|f| f as u64)
        }) {
            Some(n) if n >= 1 => (n as usize).min(max_k),
            _ => return Err(format!("'k' must be an integer from 1 to {max_k}")),
        },
    };
    let api = match args.get("api") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(Value::String(_)) => None,
        Some(_) => return Err("'api' must be a string".into()),
    };
    reject_unknown(args, &["query", "k", "api"])?;
    Ok(FindArgs { query, k, api })
}

/// Reads the `describe_tool` name.
pub fn describe_args(args: &JsonObject) -> Result<String, String> {
    let name = required_string(args, "name")?;
    reject_unknown(args, &["name"])?;
    Ok(name)
}

/// Reads `call_tool` arguments. `arguments` may be omitted (tools without parameters) or,
/// as some clients do, sent as a JSON string.
pub fn call_args(args: &JsonObject) -> Result<CallArgs, String> {
    let name = required_string(args, "name")?;
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => JsonObject::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => o,
            _ => return Err("'arguments' must be an object of the tool's arguments".into()),
        },
        Some(_) => return Err("'arguments' must be an object of the tool's arguments".into()),
    };
    reject_unknown(args, &["name", "arguments"])?;
    Ok(CallArgs { name, arguments })
}

fn required_string(args: &JsonObject, key: &str) -> Result<String, String> {
    match args.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(Value::String(_)) | None | Some(Value::Null) => Err(format!(
            "'{key}' is required and must be a non-empty string"
        )),
        Some(_) => Err(format!("'{key}' must be a string")),
    }
}

fn reject_unknown(args: &JsonObject, known: &[&str]) -> Result<(), String> {
    let unknown: Vec<&str> = args
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "unknown argument(s) {}; expected {}",
            unknown.join(", "),
            known.join(", ")
        ))
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
                query: "movies".into(),
                k: 5,
                api: None
            }
        );
        assert_eq!(
            find_args(&obj(json!({"query": "x", "k": 99})), 20)
                .unwrap()
                .k,
            20
        );
        assert_eq!(
            find_args(&obj(json!({"query": "x", "k": 3.0})), 20)
                .unwrap()
                .k,
            3
        );
        assert!(find_args(&obj(json!({"query": "x", "k": "3"})), 20).is_err());
        assert!(find_args(&obj(json!({"query": "x", "k": 0})), 20).is_err());
        assert!(find_args(&obj(json!({"query": ""})), 20).is_err());
        assert!(find_args(&obj(json!({"q": "x"})), 20).is_err());
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
        let d = definitions(&["a".into(), "b".into()], 20, true);
        let names: Vec<&str> = d.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, [FIND_TOOLS, DESCRIBE_TOOL, CALL_TOOL]);
        assert_eq!(
            d[0].input_schema["properties"]["api"]["enum"],
            json!(["a", "b"])
        );
        assert_eq!(d[0].input_schema["properties"]["k"]["maximum"], json!(20));
    }
}
