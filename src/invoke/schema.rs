//! The MCP tool `inputSchema` of an endpoint.
//!
//! Shape: `{"type": "object", "properties": {...}, "required": [...],
//! "additionalProperties": false}` with one property per argument of
//! [`arguments`](super::args::arguments): parameters by name (clashes renamed, see
//! `args`), then `body` holding the request body schema as-is. Each property is the
//! parameter's schema made strict ([`strict_schema`]) plus:
//!
//! - `description`: the parameter's description, cleaned and clipped; a renamed argument
//!   says which parameter it is (`Query parameter 'id'.`);
//! - `examples: [example]` when the parameter has an example;
//! - `x-generated: ["description", "example"]` naming the fields an enricher generated
//!   rather than the spec's author wrote, so a client can weigh them accordingly;
//! - `deprecated: true` when the parameter is deprecated.
//!
//! Path parameters are always required (OpenAPI requires it, and a missing one would
//! leave a `{placeholder}` in the URL); `body` is required when the spec says so.

use super::args::{arguments, ArgSpec, ArgTarget};
use super::strict::{clean_text, strict_schema};
use crate::catalog::{Endpoint, ParamLocation, Parameter, RequestBody};
use serde_json::{json, Map, Value};

/// One argument with its strict schema: what [`input_schema`] lists and what
/// [`validate`](super::validate::validate) enforces.
#[derive(Debug, Clone)]
pub struct ArgSchema {
    pub spec: ArgSpec,
    pub schema: Value,
    pub required: bool,
}

/// The endpoint's arguments with their schemas, in schema order.
pub fn argument_schemas(ep: &Endpoint) -> Vec<ArgSchema> {
    arguments(ep)
        .into_iter()
        .filter_map(|spec| {
            let (schema, required) = match spec.target {
                ArgTarget::Param(i) => {
                    let p = ep.parameters.get(i)?;
                    (
                        param_schema(p, &spec.name),
                        p.required || p.location == ParamLocation::Path,
                    )
                }
                ArgTarget::Body => {
                    let b = ep.request_body.as_ref()?;
                    (body_schema(b), b.required)
                }
            };
            Some(ArgSchema {
                spec,
                schema,
                required,
            })
        })
        .collect()
}

/// The tool's `inputSchema` (see the module docs for its shape).
pub fn input_schema(ep: &Endpoint) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for a in argument_schemas(ep) {
        if a.required {
            required.push(Value::String(a.spec.name.clone()));
        }
        properties.insert(a.spec.name, a.schema);
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema["additionalProperties"] = Value::Bool(false);
    schema
}

fn param_schema(p: &Parameter, arg_name: &str) -> Value {
    let mut s = strict_schema(&p.schema);
    let Value::Object(obj) = &mut s else {
        return s;
    };
    // Parameters travel as text, so a parameter without a schema takes a string: strict
    // clients (and models) do better with a type than with "anything".
    if obj.is_empty() {
        obj.insert("type".into(), json!("string"));
    }
    let mut description = p
        .description
        .as_deref()
        .map(clean_text)
        .filter(|d| !d.is_empty())
        .or_else(|| {
            obj.get("description")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    if arg_name != p.name {
        let what = format!(
            "{} parameter '{}'.",
            capitalized(p.location.as_str()),
            p.name
        );
        description = Some(match description {
            Some(d) => format!("{what} {d}"),
            None => what,
        });
    }
    if let Some(d) = description {
        obj.insert("description".into(), Value::String(d));
    }
    if let Some(ex) = &p.example {
        obj.insert("examples".into(), json!([ex]));
    }
    let generated: Vec<&str> = [
        p.description_provenance.as_ref().map(|_| "description"),
        p.example_provenance.as_ref().map(|_| "example"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !generated.is_empty() {
        obj.insert("x-generated".into(), json!(generated));
    }
    if p.deprecated {
        obj.insert("deprecated".into(), Value::Bool(true));
    }
    s
}

fn body_schema(b: &RequestBody) -> Value {
    let mut s = strict_schema(&b.schema);
    let Value::Object(obj) = &mut s else {
        return s;
    };
    let mut description = b
        .description
        .as_deref()
        .map(clean_text)
        .filter(|d| !d.is_empty())
        .or_else(|| {
            obj.get("description")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    if !super::body::is_json(&b.content_type) {
        let note = format!("Sent as {}.", b.content_type);
        description = Some(match description {
            Some(d) => format!("{d} {note}"),
            None => note,
        });
    }
    if let Some(d) = description {
        obj.insert("description".into(), Value::String(d));
    }
    s
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Method, Provenance};
    use crate::invoke::args::tests::{endpoint, param};

    #[test]
    fn builds_strict_object_schema() {
        let mut id = param(
            "id",
            ParamLocation::Path,
            json!({"type": "integer", "format": "int64"}),
        );
        id.description = Some("<p>The <b>movie</b> id.</p>".into());
        id.example = Some(json!(550));
        let mut q = param("id", ParamLocation::Query, json!({"type": "array"}));
        q.example_provenance = Some(Provenance {
            replaced: None,
            generator: "heuristic".into(),
            template: String::new(),
            date: "2025-01-01".into(),
        });
        let mut ep = endpoint(Method::Put, "/movie/{id}", vec![id, q]);
        ep.request_body = Some(RequestBody {
            content_type: "application/json".into(),
            required: true,
            description: None,
            schema: json!({"type": "object", "properties": {"tags": {"type": "array"}}}),
        });
        let s = input_schema(&ep);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "format": "int64", "description": "The movie id.",
                           "examples": [550]},
                    "query_id": {"type": "array", "items": {},
                                 "description": "Query parameter 'id'.",
                                 "x-generated": ["example"]},
                    "body": {"type": "object", "properties": {"tags": {"type": "array", "items": {}}}}
                },
                "required": ["id", "body"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn schemaless_parameters_are_strings_and_no_empty_required() {
        let mut p = param("q", ParamLocation::Query, json!({}));
        p.required = false;
        let s = input_schema(&endpoint(Method::Get, "/s", vec![p]));
        assert_eq!(s["properties"]["q"], json!({"type": "string"}));
        assert!(s.get("required").is_none());
    }
}
