//! What Swagger 2.0 says differently from OpenAPI 3: servers from `host`/`basePath`/
//! `schemes`, parameter types written on the parameter itself, `collectionFormat`, and
//! request bodies carried by `body` / `formData` parameters.

use super::endpoint::RequestBody;
use super::operation::{truthy, OpCtx};
use super::problem::Problem;
use super::resolve::{DocId, Resolver};
use serde_json::{json, Map, Value};

/// Base URLs from `schemes` x `host` + `basePath`. Without a host the base path alone is
/// returned (a relative base that a catalog config's `base_url` must complete).
pub fn servers(root: &Value) -> Vec<String> {
    let base = root.get("basePath").and_then(Value::as_str).unwrap_or("");
    let base = base.trim_end_matches('/');
    let Some(host) = root
        .get("host")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
    else {
        return if base.is_empty() {
            Vec::new()
        } else {
            vec![base.to_string()]
        };
    };
    let schemes: Vec<String> = root
        .get("schemes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_ascii_lowercase)
                .collect()
        })
        .filter(|v: &Vec<String>| !v.is_empty())
        .unwrap_or_else(|| vec!["https".to_string()]);
    // Prefer https when both are offered.
    let mut schemes = schemes;
    schemes.sort_by_key(|s| if s == "https" { 0 } else { 1 });
    schemes
        .iter()
        .filter(|s| s.starts_with("http"))
        .map(|s| format!("{s}://{host}{base}"))
        .collect()
}

/// The keys of a 2.0 non-body parameter that are JSON Schema keywords.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
];

/// Builds a JSON Schema from a 2.0 parameter's own type keywords.
pub fn param_schema(p: &Value) -> Value {
    let mut s = Map::new();
    for k in SCHEMA_KEYS {
        if let Some(v) = p.get(*k) {
            s.insert((*k).to_string(), fix_items(k, v));
        }
    }
    if let Some(Value::String(t)) = s.get("type") {
        if t == "file" {
            s.insert("type".into(), json!("string"));
            s.insert("format".into(), json!("binary"));
        }
    }
    if !s.contains_key("type") {
        s.insert("type".into(), json!("string"));
    }
    Value::Object(s)
}

/// Arrays must carry `items`; 2.0 parameters sometimes omit it.
fn fix_items(key: &str, v: &Value) -> Value {
    if key == "items" && !v.is_object() {
        return json!({});
    }
    v.clone()
}

/// `collectionFormat` as an OpenAPI 3 style and explode flag.
pub fn collection_style(p: &Value) -> (Option<String>, Option<bool>) {
    match p.get("collectionFormat").and_then(Value::as_str) {
        Some("multi") => (Some("form".into()), Some(true)),
        Some("ssv") => (Some("spaceDelimited".into()), Some(false)),
        Some("pipes") => (Some("pipeDelimited".into()), Some(false)),
        Some("tsv") => (Some("tabDelimited".into()), Some(false)),
        Some("csv") => (None, Some(false)),
        _ if p.get("type").and_then(Value::as_str) == Some("array") => (None, Some(false)),
        _ => (None, None),
    }
}

/// The request body of a 2.0 operation: one `body` parameter, or the `formData`
/// parameters gathered into an object schema.
pub fn request_body(
    res: &mut Resolver,
    ctx: &OpCtx,
    params: Vec<(DocId, String, Value)>,
    budget: usize,
) -> Option<RequestBody> {
    let consumes: Vec<String> = ctx
        .op
        .get("consumes")
        .or_else(|| ctx.root.get("consumes"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some((doc, ptr, body)) = params
        .iter()
        .find(|(_, _, p)| p.get("in").and_then(Value::as_str) == Some("body"))
    {
        let schema = match body.get("schema") {
            Some(s) => res.inline_schema(*doc, s, &format!("{ptr}/schema"), budget),
            None => {
                let file = res.file(0).to_path_buf();
                res.warnings.push(Problem::warning(
                    &file,
                    Some(ptr.clone()),
                    "body parameter has no schema",
                ));
                json!({})
            }
        };
        let content_type = consumes
            .iter()
            .find(|c| c.contains("json"))
            .or_else(|| consumes.first())
            .cloned()
            .unwrap_or_else(|| "application/json".to_string());
        return Some(RequestBody {
            content_type,
            required: truthy(body.get("required")),
            description: body
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            schema,
        });
    }
    let mut props = Map::new();
    let mut required = Vec::new();
    let mut has_file = false;
    for (_, _, p) in params
        .iter()
        .filter(|(_, _, p)| p.get("in").and_then(Value::as_str) == Some("formData"))
    {
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        has_file |= p.get("type").and_then(Value::as_str) == Some("file");
        let mut schema = param_schema(p);
        if let Some(d) = p.get("description") {
            schema["description"] = d.clone();
        }
        props.insert(name.to_string(), schema);
        if truthy(p.get("required")) {
            required.push(json!(name));
        }
    }
    if props.is_empty() {
        return None;
    }
    let content_type = if has_file
        || consumes.iter().any(|c| c == "multipart/form-data")
            && !consumes
                .iter()
                .any(|c| c == "application/x-www-form-urlencoded")
    {
        "multipart/form-data"
    } else {
        "application/x-www-form-urlencoded"
    };
    Some(RequestBody {
        content_type: content_type.to_string(),
        required: !required.is_empty(),
        description: None,
        schema: json!({"type": "object", "properties": props, "required": required}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_from_host_base_schemes() {
        let root =
            json!({"host": "api.example.com", "basePath": "/v2/", "schemes": ["http", "https"]});
        assert_eq!(
            servers(&root),
            ["https://api.example.com/v2", "http://api.example.com/v2"]
        );
        assert_eq!(servers(&json!({"basePath": "/v1"})), ["/v1"]);
    }

    #[test]
    fn file_params_become_binary_strings() {
        let s = param_schema(&json!({"name": "f", "in": "formData", "type": "file"}));
        assert_eq!(s, json!({"type": "string", "format": "binary"}));
    }
}
