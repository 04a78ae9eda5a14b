//! Checking one argument value against its (strict) schema, with lenient coercion.
//!
//! Models routinely send `"42"` for an integer id or `550` for a string id. Rejecting
//! those would cost a round trip for no safety gain, so values are coerced when the
//! meaning is unambiguous, and the coerced value is what gets sent:
//!
//! | schema says | accepted besides the exact type                                       |
//! |-------------|------------------------------------------------------------------------|
//! | integer     | a string holding an integer (`"42"`), a float with no fraction (`42.0`) |
//! | number      | a string holding a finite number (`"4.5"`)                              |
//! | boolean     | the strings `"true"` / `"false"` (any case)                             |
//! | string      | a number or boolean (its JSON text)                                     |
//! | array       | a string holding a JSON array; any other single value (wrapped)        |
//! | object      | a string holding a JSON object                                          |
//!
//! `null` for an optional object property counts as leaving it out (models fill optional
//! fields with null), unless the schema allows null. Everything else that does not match
//! is reported; all problems are collected, each naming the argument (`body.title`).
//! Not checked: `format` (too many dialects to judge fairly), `uniqueItems`, and
//! `pattern`s the `regex` crate cannot compile (ECMA-only look-around), which are skipped
//! rather than failing calls the API would accept.

use once_cell::sync::Lazy;
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;

/// Recursion bound; schemas are already bounded by the catalog.
const MAX_DEPTH: usize = 32;
/// Enough problems to fix a call; more is noise.
pub const MAX_PROBLEMS: usize = 30;
/// Compiled `pattern`s kept across calls (cleared when full).
const PATTERN_CACHE: usize = 512;

static PATTERNS: Lazy<Mutex<HashMap<String, Option<Regex>>>> = Lazy::new(Default::default);

/// Checks `value` against `schema`, pushing one message per problem onto `problems`, and
/// returns the (coerced) value to send. `at` names the argument (`body.items[2]`).
pub fn check(schema: &Value, value: Value, at: &str, problems: &mut Vec<String>) -> Value {
    check_at(schema, value, at, problems, 0)
}

fn push(problems: &mut Vec<String>, msg: String) {
    if problems.len() < MAX_PROBLEMS {
        problems.push(msg);
    }
}

fn check_at(
    schema: &Value,
    value: Value,
    at: &str,
    problems: &mut Vec<String>,
    depth: usize,
) -> Value {
    let Some(s) = schema.as_object() else {
        return value;
    };
    if depth > MAX_DEPTH {
        return value;
    }
    let mut value = value;
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            value = check_at(sub, value, at, problems, depth + 1);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = s
            .get(key)
            .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()))
        {
            match first_match(alts, &value, at, depth) {
                Ok(v) => value = v,
                Err(first) => {
                    push(problems, format!("argument '{at}': matches none of the allowed alternatives (first: {first})"));
                    return value;
                }
            }
        }
    }
    let types = declared_types(s);
    if value.is_null() {
        if !types.is_empty() && !allows_null(s, &types) {
            push(
                problems,
                format!("argument '{at}': expected {}, got null", types.join(" or ")),
            );
        }
        return value;
    }
    if !types.is_empty() && !types.iter().any(|t| has_type(&value, t)) {
        match types.iter().find_map(|t| coerce(&value, t)) {
            Some(v) => value = v,
            None => {
                push(
                    problems,
                    format!(
                        "argument '{at}': expected {}, got {}",
                        types.join(" or "),
                        describe(&value)
                    ),
                );
                return value;
            }
        }
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.iter().any(|o| same(o, &value)) {
            let shown: Vec<String> = options.iter().take(12).map(show).collect();
            let more = if options.len() > 12 { ", ..." } else { "" };
            push(
                problems,
                format!(
                    "argument '{at}': must be one of {}{more} (got {})",
                    shown.join(", "),
                    show(&value)
                ),
            );
        }
    }
    if let Some(c) = s.get("const") {
        if !same(c, &value) {
            push(
                problems,
                format!(
                    "argument '{at}': must be {} (got {})",
                    show(c),
                    show(&value)
                ),
            );
        }
    }
    match value {
        Value::String(ref text) => check_string(s, text, at, problems),
        Value::Number(ref n) => check_number(s, n.as_f64().unwrap_or(0.0), at, problems),
        Value::Array(items) => return Value::Array(check_array(s, items, at, problems, depth)),
        Value::Object(map) => return Value::Object(check_object(s, map, at, problems, depth)),
        _ => {}
    }
    value
}

/// The first alternative the value satisfies (coerced by it), or the first alternative's
/// first problem.
fn first_match(alts: &[Value], value: &Value, at: &str, depth: usize) -> Result<Value, String> {
    let mut first_problem = None;
    for alt in alts {
        let mut p = Vec::new();
        let v = check_at(alt, value.clone(), at, &mut p, depth + 1);
        if p.is_empty() {
            return Ok(v);
        }
        if first_problem.is_none() {
            first_problem = p.into_iter().next();
        }
    }
    Err(first_problem.unwrap_or_default())
}

fn declared_types(s: &Map<String, Value>) -> Vec<&str> {
    match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn allows_null(s: &Map<String, Value>, types: &[&str]) -> bool {
    types.contains(&"null") || s.get("nullable") == Some(&Value::Bool(true))
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// The coercions listed in the module docs.
fn coerce(v: &Value, ty: &str) -> Option<Value> {
    match (ty, v) {
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
        ("integer", Value::Number(n)) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| Value::from(f as i64)),
        ("number", Value::String(s)) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Some(Value::from(i));
            }
            t.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
        }
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("array", Value::String(s)) if s.trim_start().starts_with('[') => {
            serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_array)
        }
        ("array", Value::Array(_) | Value::Null) => None,
        ("array", other) => Some(Value::Array(vec![other.clone()])),
        ("object", Value::String(s)) if s.trim_start().starts_with('{') => {
            serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_object)
        }
        _ => None,
    }
}

/// JSON equality that treats `1` and `1.0` as the same number.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn check_string(s: &Map<String, Value>, text: &str, at: &str, problems: &mut Vec<String>) {
    let len = text.chars().count() as u64;
    if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
        if len < min {
            push(
                problems,
                format!("argument '{at}': must be at least {min} characters long (got {len})"),
            );
        }
    }
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
        if len > max {
            push(
                problems,
                format!("argument '{at}': must be at most {max} characters long (got {len})"),
            );
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        if let Some(re) = pattern(p) {
            if !re.is_match(text) {
                push(
                    problems,
                    format!(
                        "argument '{at}': {} does not match the pattern {p}",
                        show(&Value::String(text.to_string()))
                    ),
                );
            }
        }
    }
}

fn check_number(s: &Map<String, Value>, n: f64, at: &str, problems: &mut Vec<String>) {
    let bound = |k: &str| s.get(k).and_then(Value::as_f64);
    if let Some(m) = bound("minimum").filter(|m| n < *m) {
        push(
            problems,
            format!("argument '{at}': must be at least {m} (got {n})"),
        );
    }
    if let Some(m) = bound("maximum").filter(|m| n > *m) {
        push(
            problems,
            format!("argument '{at}': must be at most {m} (got {n})"),
        );
    }
    if let Some(m) = bound("exclusiveMinimum").filter(|m| n <= *m) {
        push(
            problems,
            format!("argument '{at}': must be greater than {m} (got {n})"),
        );
    }
    if let Some(m) = bound("exclusiveMaximum").filter(|m| n >= *m) {
        push(
            problems,
            format!("argument '{at}': must be less than {m} (got {n})"),
        );
    }
}

fn check_array(
    s: &Map<String, Value>,
    items: Vec<Value>,
    at: &str,
    problems: &mut Vec<String>,
    depth: usize,
) -> Vec<Value> {
    let len = items.len() as u64;
    if let Some(min) = s
        .get("minItems")
        .and_then(Value::as_u64)
        .filter(|m| len < *m)
    {
        push(
            problems,
            format!("argument '{at}': needs at least {min} items (got {len})"),
        );
    }
    if let Some(max) = s
        .get("maxItems")
        .and_then(Value::as_u64)
        .filter(|m| len > *m)
    {
        push(
            problems,
            format!("argument '{at}': allows at most {max} items (got {len})"),
        );
    }
    match s.get("items") {
        Some(item_schema) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| check_at(item_schema, v, &format!("{at}[{i}]"), problems, depth + 1))
            .collect(),
        None => items,
    }
}

fn check_object(
    s: &Map<String, Value>,
    map: Map<String, Value>,
    at: &str,
    problems: &mut Vec<String>,
    depth: usize,
) -> Map<String, Value> {
    let empty = Map::new();
    let props = s
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in &required {
        if map.get(*name).is_none_or(Value::is_null) {
            push(
                problems,
                format!("argument '{at}': missing required property '{name}'"),
            );
        }
    }
    let extra = s.get("additionalProperties");
    let mut out = Map::new();
    for (k, v) in map {
        let path = format!("{at}.{k}");
        if let Some(ps) = props.get(&k) {
            let nullable = ps
                .as_object()
                .is_some_and(|o| allows_null(o, &declared_types(o)));
            if v.is_null() && !nullable && !required.contains(&k.as_str()) {
                continue;
            }
            let v = check_at(ps, v, &path, problems, depth + 1);
            out.insert(k, v);
        } else {
            match extra {
                Some(Value::Bool(false)) => {
                    let hint = super::near::closest(&k, props.keys().map(String::as_str))
                        .map(|c| format!("; did you mean '{c}'?"))
                        .unwrap_or_default();
                    push(
                        problems,
                        format!("argument '{at}': unknown property '{k}'{hint}"),
                    );
                }
                Some(extra_schema @ Value::Object(_)) => {
                    let v = check_at(extra_schema, v, &path, problems, depth + 1);
                    out.insert(k, v);
                }
                _ => {
                    out.insert(k, v);
                }
            }
        }
    }
    out
}

/// A compiled `pattern`, or `None` when the regex crate cannot compile it.
fn pattern(p: &str) -> Option<Regex> {
    let compile = || regex::RegexBuilder::new(p).size_limit(1 << 20).build().ok();
    let Ok(mut cache) = PATTERNS.lock() else {
        return compile();
    };
    if let Some(r) = cache.get(p) {
        return r.clone();
    }
    if cache.len() >= PATTERN_CACHE {
        cache.clear();
    }
    let r = compile();
    cache.insert(p.to_string(), r.clone());
    r
}

/// `string "abc"`, `integer 4`, `object`: what was received, briefly.
fn describe(v: &Value) -> String {
    let kind = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => return "an array".into(),
        Value::Object(_) => return "an object".into(),
    };
    format!("{kind} {}", show(v))
}

/// A value as JSON, clipped so a huge argument does not flood the error.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, v: Value) -> (Value, Vec<String>) {
        let mut p = Vec::new();
        let out = check(&schema, v, "x", &mut p);
        (out, p)
    }

    #[test]
    fn coerces_unambiguous_values() {
        assert_eq!(
            run(json!({"type": "integer"}), json!("42")),
            (json!(42), vec![])
        );
        assert_eq!(
            run(json!({"type": "integer"}), json!(42.0)),
            (json!(42), vec![])
        );
        assert_eq!(
            run(json!({"type": "string"}), json!(550)),
            (json!("550"), vec![])
        );
        assert_eq!(
            run(json!({"type": "boolean"}), json!("TRUE")),
            (json!(true), vec![])
        );
        assert_eq!(
            run(
                json!({"type": "array", "items": {"type": "integer"}}),
                json!("7")
            ),
            (json!([7]), vec![])
        );
        assert_eq!(
            run(json!({"type": "object"}), json!("{\"a\":1}")),
            (json!({"a": 1}), vec![])
        );
    }

    #[test]
    fn reports_wrong_types_enums_bounds_and_patterns() {
        let (_, p) = run(json!({"type": "integer"}), json!("abc"));
        assert_eq!(p, ["argument 'x': expected integer, got string \"abc\""]);
        let (_, p) = run(
            json!({"type": "integer", "minimum": 1, "maximum": 500}),
            json!(0),
        );
        assert_eq!(p, ["argument 'x': must be at least 1 (got 0)"]);
        let (_, p) = run(json!({"type": "string", "enum": ["US", "GB"]}), json!("XX"));
        assert_eq!(
            p,
            ["argument 'x': must be one of \"US\", \"GB\" (got \"XX\")"]
        );
        let (_, p) = run(
            json!({"type": "string", "pattern": "^[a-z]{2}-[A-Z]{2}$", "maxLength": 4}),
            json!("english"),
        );
        assert_eq!(p.len(), 2, "{p:?}");
        // Unsupported look-around is skipped, not fatal.
        assert!(
            run(json!({"type": "string", "pattern": "^(?!x)"}), json!("x"))
                .1
                .is_empty()
        );
    }

    #[test]
    fn nested_objects_name_the_path_and_drop_optional_nulls() {
        let schema = json!({"type": "object", "required": ["name"], "additionalProperties": false,
            "properties": {"name": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}},
                           "note": {"type": "string"}}});
        let (v, p) = run(
            schema,
            json!({"items": [1, "x"], "note": null, "nmae": "a"}),
        );
        assert_eq!(
            p,
            [
                "argument 'x': missing required property 'name'",
                "argument 'x.items[1]': expected integer, got string \"x\"",
                "argument 'x': unknown property 'nmae'; did you mean 'name'?",
            ]
        );
        assert!(v.get("note").is_none());
    }

    #[test]
    fn any_of_picks_first_matching_branch() {
        let s = json!({"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["all"]}]});
        assert_eq!(run(s.clone(), json!("all")).1.len(), 0);
        assert_eq!(run(s.clone(), json!("5")), (json!(5), vec![]));
        assert_eq!(run(s, json!(true)).1.len(), 1);
    }
}
