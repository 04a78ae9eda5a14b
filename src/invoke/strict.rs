//! Turning an OpenAPI schema into a JSON Schema that strict MCP clients accept.
//!
//! Catalog schemas are OpenAPI dialects (3.0 with `nullable` and boolean
//! `exclusiveMinimum`, 2.0 with `type: file`), may keep a `$ref` placeholder where
//! resolution stopped, and carry OpenAPI-only or vendor keywords. Strict clients reject
//! schemas with dangling `$ref`s, arrays without `items` and 3.0-style exclusive bounds,
//! so every schema that reaches a tool definition goes through [`strict_schema`].
//! The same cleaned schema is what arguments are validated against, so what the model is
//! told and what is enforced never drift apart.

use serde_json::{json, Map, Value};

/// Descriptions inside schemas are clipped to this many characters: they are read by a
/// model on every tool listing.
pub const DESCRIPTION_CHARS: usize = 300;

/// Schemas deeper than this are cut to `{}` (accept anything); the catalog already bounds
/// depth, this only guards recursion here.
const MAX_DEPTH: usize = 40;

/// Keywords that are dropped: references (already inlined by the catalog), OpenAPI-only
/// annotations that JSON Schema validators do not know, and definitions containers that
/// nothing points into any more.
const DROPPED: &[&str] = &[
    "$ref",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$defs",
    "definitions",
    "$comment",
    "xml",
    "externalDocs",
    "discriminator",
];

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is a list of schemas.
const SCHEMA_LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value is a map of name to schema.
const SCHEMA_MAP: &[&str] = &["properties", "patternProperties", "dependentSchemas"];

/// A strict-client-safe copy of `schema` (see the module docs for what changes).
pub fn strict_schema(schema: &Value) -> Value {
    strict(schema, 0)
}

fn strict(schema: &Value, depth: usize) -> Value {
    let obj = match schema {
        Value::Object(o) if depth <= MAX_DEPTH => o,
        Value::Bool(false) => return json!({"not": {}}),
        _ => return json!({}),
    };
    let mut out = Map::new();
    let mut read_only_props: Vec<String> = Vec::new();
    for (k, v) in obj {
        let k = k.as_str();
        if DROPPED.contains(&k) || k.starts_with("x-") {
            continue;
        }
        let cleaned = match k {
            "description" => match v.as_str() {
                Some(s) => Value::String(clean_text(s)),
                None => continue,
            },
            "type" => match strict_type(v) {
                Some(t) => t,
                None => continue,
            },
            "required" => match v {
                // `required: true` on a property is a common 2.0-ism; it is not JSON
                // Schema and the parent's list is what counts.
                Value::Array(a) => {
                    Value::Array(a.iter().filter(|n| n.is_string()).cloned().collect())
                }
                _ => continue,
            },
            "items" => match v {
                // Draft-4 tuple form: strict clients want one schema.
                Value::Array(_) => json!({}),
                other => strict(other, depth + 1),
            },
            "additionalProperties" => match v {
                Value::Bool(b) => Value::Bool(*b),
                other => strict(other, depth + 1),
            },
            "exclusiveMinimum" | "exclusiveMaximum" => match v {
                Value::Number(_) => v.clone(),
                // 3.0's boolean form is rewritten below, once `minimum` is known.
                _ => continue,
            },
            "example" => continue,
            _ if ONE_SCHEMA.contains(&k) => strict(v, depth + 1),
            _ if SCHEMA_LIST.contains(&k) => match v {
                Value::Array(a) => Value::Array(a.iter().map(|s| strict(s, depth + 1)).collect()),
                _ => continue,
            },
            _ if SCHEMA_MAP.contains(&k) => match v {
                Value::Object(m) => {
                    let mut props = Map::new();
                    for (name, s) in m {
                        // A request never sends read-only properties (ids, timestamps the
                        // server assigns), so the model is not asked for them.
                        if k == "properties" && s.get("readOnly") == Some(&Value::Bool(true)) {
                            read_only_props.push(name.clone());
                            continue;
                        }
                        props.insert(name.clone(), strict(s, depth + 1));
                    }
                    Value::Object(props)
                }
                _ => continue,
            },
            _ => v.clone(),
        };
        out.insert(k.to_string(), cleaned);
    }
    if !read_only_props.is_empty() {
        if let Some(Value::Array(req)) = out.get_mut("required") {
            req.retain(|n| {
                !n.as_str()
                    .is_some_and(|n| read_only_props.iter().any(|r| r == n))
            });
        }
    }
    if out
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        out.remove("required");
    }
    exclusive_bounds(obj, &mut out);
    if let (None, Some(ex)) = (out.get("examples"), obj.get("example")) {
        out.insert("examples".into(), json!([ex]));
    }
    if type_includes(&out, "array") && !out.contains_key("items") {
        out.insert("items".into(), json!({}));
    }
    Value::Object(out)
}

/// Keeps `type` when it is a JSON Schema type name (or list of them); 2.0's `file` becomes
/// a binary string.
fn strict_type(v: &Value) -> Option<Value> {
    const TYPES: &[&str] = &[
        "string", "integer", "number", "boolean", "array", "object", "null",
    ];
    match v {
        Value::String(s) if s == "file" => Some(json!("string")),
        Value::String(s) if TYPES.contains(&s.as_str()) => Some(v.clone()),
        Value::Array(a) => {
            let kept: Vec<Value> = a
                .iter()
                .filter(|t| t.as_str().is_some_and(|t| TYPES.contains(&t)))
                .cloned()
                .collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        _ => None,
    }
}

/// OpenAPI 3.0 writes `minimum: 5, exclusiveMinimum: true`; JSON Schema (and 3.1) writes
/// `exclusiveMinimum: 5`.
fn exclusive_bounds(orig: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (excl, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if orig.get(excl) == Some(&Value::Bool(true)) {
            if let Some(b) = out.remove(bound) {
                out.insert(excl.into(), b);
            }
        }
    }
}

/// Whether the schema's `type` is or contains `ty`.
pub fn type_includes(schema: &Map<String, Value>, ty: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(s)) => s == ty,
        Some(Value::Array(a)) => a.iter().any(|t| t.as_str() == Some(ty)),
        _ => false,
    }
}

/// Cleans (HTML, markdown) and clips a description.
pub fn clean_text(s: &str) -> String {
    crate::text::clip_chars(&crate::text::clean(s), DESCRIPTION_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_get_items_recursively() {
        let s = strict_schema(&json!({"type": "object", "properties": {
            "tags": {"type": "array"},
            "grid": {"type": "array", "items": {"type": ["array", "null"]}}}}));
        assert_eq!(s["properties"]["tags"]["items"], json!({}));
        assert_eq!(s["properties"]["grid"]["items"]["items"], json!({}));
    }

    #[test]
    fn drops_refs_and_openapi_keywords_and_keeps_formats_and_enums() {
        let s = strict_schema(&json!({
            "$ref": "#/components/schemas/Node", "description": "<b>Node</b> (recursive: Node)",
            "type": "string", "format": "date", "enum": ["a", "b"], "xml": {"name": "n"},
            "x-internal": true, "example": "a"}));
        assert_eq!(
            s,
            json!({"description": "Node (recursive: Node)", "type": "string", "format": "date",
                   "enum": ["a", "b"], "examples": ["a"]})
        );
    }

    #[test]
    fn rewrites_boolean_exclusive_bounds() {
        let s = strict_schema(
            &json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true,
            "maximum": 9, "exclusiveMaximum": false}),
        );
        assert_eq!(
            s,
            json!({"type": "integer", "exclusiveMinimum": 0, "maximum": 9})
        );
    }

    #[test]
    fn read_only_properties_leave_requests() {
        let s = strict_schema(
            &json!({"type": "object", "required": ["id", "name"], "properties": {
            "id": {"type": "integer", "readOnly": true}, "name": {"type": "string"}}}),
        );
        assert_eq!(s["required"], json!(["name"]));
        assert!(s["properties"].get("id").is_none());
    }

    #[test]
    fn non_object_schemas_become_objects() {
        assert_eq!(strict_schema(&json!(true)), json!({}));
        assert_eq!(strict_schema(&json!(false)), json!({"not": {}}));
        assert_eq!(
            strict_schema(&json!({"type": "file"})),
            json!({"type": "string"})
        );
    }
}
