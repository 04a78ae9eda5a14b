//! Checking a generated example against its parameter's JSON Schema, strictly.
//!
//! ToolFactory showed that generated values must be checked, not trusted. Unlike argument
//! validation at call time (which coerces `"42"` to `42` to spare the model a round trip),
//! an example is documentation: it must match exactly, or it teaches the wrong thing.
//! Checked: type, enum, const, format, pattern, numeric bounds (3.0 boolean and 3.1 numeric
//! exclusive bounds), multipleOf, string and array lengths, array items, object properties
//! and required, and allOf/anyOf/oneOf. A `pattern` the `regex` crate cannot compile
//! (ECMA-only syntax) is skipped rather than failing every value.

use once_cell::sync::Lazy;
use regex::Regex;
use serde_json::{Map, Value};

const MAX_DEPTH: usize = 16;
const MAX_PROBLEMS: usize = 8;

static DATE: Lazy<Regex> =
    Lazy::new(|| Regex::new(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$").unwrap());
static DATE_TIME: Lazy<Regex> = Lazy::new(|| {
    Regex::new(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):?[0-5]\d)$").unwrap()
});
static TIME: Lazy<Regex> = Lazy::new(|| {
    Regex::new(r"^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]\d\d:?\d\d)?$").unwrap()
});
static EMAIL: Lazy<Regex> = Lazy::new(|| Regex::new(r"^[^@\s]+@[^@\s]+\.[^@\s]+$").unwrap());
static UUID: Lazy<Regex> = Lazy::new(|| {
    Regex::new(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
        .unwrap()
});
static HOSTNAME: Lazy<Regex> = Lazy::new(|| {
    Regex::new(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$").unwrap()
});
static BASE64: Lazy<Regex> = Lazy::new(|| Regex::new(r"^[A-Za-z0-9+/]*={0,2}$").unwrap());

/// Checks `value` against `schema`; returns what is wrong (empty when valid).
pub fn check(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check_at(schema, value, "", &mut problems, 0);
    problems
}

fn push(problems: &mut Vec<String>, at: &str, msg: String) {
    if problems.len() < MAX_PROBLEMS {
        if at.is_empty() {
            problems.push(msg);
        } else {
            problems.push(format!("{at}: {msg}"));
        }
    }
}

fn check_at(schema: &Value, value: &Value, at: &str, problems: &mut Vec<String>, depth: usize) {
    let Some(s) = schema.as_object() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            check_at(sub, value, at, problems, depth + 1);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = s.get(key) {
            let ok = alts.is_empty()
                || alts.iter().any(|alt| {
                    let mut p = Vec::new();
                    check_at(alt, value, at, &mut p, depth + 1);
                    p.is_empty()
                });
            if !ok {
                push(
                    problems,
                    at,
                    format!("matches none of the {key} alternatives"),
                );
            }
        }
    }
    let types = declared_types(s);
    if value.is_null() {
        if !types.is_empty()
            && !types.contains(&"null")
            && s.get("nullable") != Some(&Value::Bool(true))
        {
            push(
                problems,
                at,
                format!("expected {}, got null", types.join(" or ")),
            );
        }
        return;
    }
    if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
        push(
            problems,
            at,
            format!("expected {}, got {}", types.join(" or "), kind(value)),
        );
        return;
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.iter().any(|o| same(o, value)) {
            push(
                problems,
                at,
                format!("{} is not one of the allowed values", short(value)),
            );
        }
    }
    if let Some(c) = s.get("const") {
        if !same(c, value) {
            push(problems, at, format!("must be {}", short(c)));
        }
    }
    match value {
        Value::String(text) => check_string(s, text, at, problems),
        Value::Number(n) => check_number(s, n.as_f64().unwrap_or(0.0), at, problems),
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
                if n < min {
                    push(problems, at, format!("needs at least {min} items"));
                }
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
                if n > max {
                    push(problems, at, format!("allows at most {max} items"));
                }
            }
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_at(
                        item_schema,
                        item,
                        &format!("{at}[{i}]"),
                        problems,
                        depth + 1,
                    );
                }
            }
        }
        Value::Object(map) => check_object(s, map, at, problems, depth),
        Value::Bool(_) | Value::Null => {}
    }
}

fn check_object(
    s: &Map<String, Value>,
    map: &Map<String, Value>,
    at: &str,
    problems: &mut Vec<String>,
    depth: usize,
) {
    let props = s.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(req)) = s.get("required") {
        for r in req.iter().filter_map(Value::as_str) {
            if !map.contains_key(r) {
                push(problems, at, format!("missing required property '{r}'"));
            }
        }
    }
    for (k, v) in map {
        let child = if at.is_empty() {
            k.clone()
        } else {
            format!("{at}.{k}")
        };
        match props.and_then(|p| p.get(k)) {
            Some(ps) => check_at(ps, v, &child, problems, depth + 1),
            None => {
                if s.get("additionalProperties") == Some(&Value::Bool(false)) {
                    push(problems, at, format!("unexpected property '{k}'"));
                } else if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                    check_at(ap, v, &child, problems, depth + 1);
                }
            }
        }
    }
}

fn check_string(s: &Map<String, Value>, text: &str, at: &str, problems: &mut Vec<String>) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
        if len < min {
            push(problems, at, format!("shorter than {min} characters"));
        }
    }
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
        if len > max {
            push(problems, at, format!("longer than {max} characters"));
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        // Patterns are unanchored in JSON Schema: a match anywhere counts.
        if let Ok(re) = Regex::new(p) {
            if !re.is_match(text) {
                push(problems, at, format!("does not match the pattern {p}"));
            }
        }
    }
    if let Some(f) = s.get("format").and_then(Value::as_str) {
        if !format_ok(f, text) {
            push(
                problems,
                at,
                format!(
                    "{} is not a valid {f}",
                    short(&Value::String(text.to_string()))
                ),
            );
        }
    }
}

/// Formats we can judge; unknown ones pass (OpenAPI allows any format name).
fn format_ok(format: &str, text: &str) -> bool {
    match format {
        "date" => DATE.is_match(text),
        "date-time" => DATE_TIME.is_match(text),
        "time" => TIME.is_match(text),
        "email" => EMAIL.is_match(text),
        "uuid" => UUID.is_match(text),
        "uri" | "url" => url::Url::parse(text).is_ok(),
        "hostname" => text.len() <= 253 && HOSTNAME.is_match(text),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "byte" => text.len() % 4 == 0 && BASE64.is_match(text),
        "int32" => text.parse::<i32>().is_ok(),
        "int64" => text.parse::<i64>().is_ok(),
        _ => true,
    }
}

fn check_number(s: &Map<String, Value>, n: f64, at: &str, problems: &mut Vec<String>) {
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    let excl = |k: &str| s.get(k) == Some(&Value::Bool(true));
    if let Some(min) = num("minimum") {
        if n < min || (excl("exclusiveMinimum") && n <= min) {
            push(problems, at, format!("{n} is below the minimum {min}"));
        }
    }
    if let Some(max) = num("maximum") {
        if n > max || (excl("exclusiveMaximum") && n >= max) {
            push(problems, at, format!("{n} is above the maximum {max}"));
        }
    }
    if let Some(min) = num("exclusiveMinimum") {
        if n <= min {
            push(problems, at, format!("{n} must be greater than {min}"));
        }
    }
    if let Some(max) = num("exclusiveMaximum") {
        if n >= max {
            push(problems, at, format!("{n} must be less than {max}"));
        }
    }
    if let Some(m) = num("multipleOf").filter(|m| *m > 0.0) {
        let q = n / m;
        if (q - q.round()).abs() > 1e-9 {
            push(problems, at, format!("{n} is not a multiple of {m}"));
        }
    }
    match s.get("format").and_then(Value::as_str) {
        Some("int32") if n.fract() != 0.0 || n < i32::MIN as f64 || n > i32::MAX as f64 => {
            push(problems, at, format!("{n} is not an int32"));
        }
        Some("int64") if n.fract() != 0.0 => push(problems, at, format!("{n} is not an int64")),
        _ => {}
    }
}

fn declared_types(s: &Map<String, Value>) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.as_f64().is_some_and(|n| n.fract() == 0.0) && v.is_number(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Numbers compare by value (`1` equals `1.0`); everything else structurally.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

fn short(v: &Value) -> String {
    crate::text::clip_chars(&v.to_string(), 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(s: Value, v: Value) -> bool {
        check(&s, &v).is_empty()
    }

    #[test]
    fn types_and_enums() {
        assert!(ok(json!({"type": "integer"}), json!(3)));
        assert!(ok(json!({"type": "integer"}), json!(3.0)));
        assert!(!ok(json!({"type": "integer"}), json!("3")));
        assert!(!ok(json!({"type": "string"}), json!(3)));
        assert!(ok(json!({"type": ["string", "null"]}), json!(null)));
        assert!(ok(json!({"type": "string", "nullable": true}), json!(null)));
        assert!(ok(json!({"enum": ["asc", "desc"]}), json!("asc")));
        assert!(!ok(json!({"enum": ["asc", "desc"]}), json!("up")));
    }

    #[test]
    fn formats_patterns_bounds() {
        assert!(ok(
            json!({"type": "string", "format": "date"}),
            json!("2024-02-29")
        ));
        assert!(!ok(
            json!({"type": "string", "format": "date"}),
            json!("2024-13-01")
        ));
        assert!(ok(
            json!({"type": "string", "format": "date-time"}),
            json!("2024-01-15T09:30:00Z")
        ));
        assert!(!ok(
            json!({"type": "string", "format": "email"}),
            json!("nobody")
        ));
        assert!(ok(
            json!({"type": "string", "format": "uuid"}),
            json!("3fa85f64-5717-4562-b3fc-2c963f66afa6")
        ));
        assert!(ok(
            json!({"type": "string", "format": "uri"}),
            json!("https://example.com/x")
        ));
        assert!(ok(
            json!({"type": "string", "format": "made-up"}),
            json!("x")
        ));
        assert!(ok(
            json!({"type": "string", "pattern": "^[A-Z]{2}$"}),
            json!("US")
        ));
        assert!(!ok(
            json!({"type": "string", "pattern": "^[A-Z]{2}$"}),
            json!("USA")
        ));
        assert!(
            ok(
                json!({"type": "string", "pattern": "(?<=a)b"}),
                json!("zzz")
            ),
            "uncompilable patterns are skipped"
        );
        assert!(!ok(
            json!({"type": "integer", "minimum": 1, "maximum": 1000}),
            json!(0)
        ));
        assert!(!ok(
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
            json!(1)
        ));
        assert!(!ok(
            json!({"type": "number", "exclusiveMaximum": 5}),
            json!(5)
        ));
        assert!(!ok(json!({"type": "string", "maxLength": 2}), json!("abc")));
    }

    #[test]
    fn arrays_objects_and_compositions() {
        let s = json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2});
        assert!(ok(s.clone(), json!(["a", "b"])));
        let p = check(&s, &json!(["a", "c", "b"]));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[1].starts_with("[1]:"), "{p:?}");
        let o = json!({"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}});
        assert!(ok(o.clone(), json!({"id": 1})));
        assert!(!ok(o, json!({"id": "x"})));
        assert!(ok(
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
            json!("x")
        ));
        assert!(!ok(
            json!({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}),
            json!("x")
        ));
    }
}
