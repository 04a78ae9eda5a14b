//! Example values without a model: from the schema's `default` or `enum`, its `format`, the
//! parameter's name, and finally its type, clamped to its bounds.
//!
//! Every candidate is checked against the schema like a generated one, and the first that
//! passes wins; a parameter whose schema no candidate satisfies (an unusual `pattern`) gets
//! no example rather than a wrong one.

use super::schema_check;
use crate::catalog::Parameter;
use crate::text::split_identifier;
use serde_json::{json, Value};

/// Names of parameters that carry credentials: an example there would be a fake secret
/// that an assistant might send. They get no example.
pub fn is_secret(name: &str) -> bool {
    let words = split_identifier(name);
    let joined = words.join("");
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "key"
                | "token"
                | "secret"
                | "password"
                | "passwd"
                | "authorization"
                | "auth"
                | "credential"
                | "credentials"
                | "signature"
        )
    }) || joined.contains("apikey")
}

/// Can an example of this schema be useful in a call (scalars and arrays of scalars)?
pub fn exampleable(schema: &Value) -> bool {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => false,
        Some("array") => schema.get("items").is_none_or(|i| {
            exampleable(i) && i.get("type").and_then(Value::as_str) != Some("array")
        }),
        Some("string") => !matches!(schema.get("format").and_then(Value::as_str), Some("binary")),
        _ => schema.get("properties").is_none(),
    }
}

/// A valid example for the parameter, if one of the candidates passes its schema.
pub fn example(p: &Parameter) -> Option<Value> {
    if is_secret(&p.name) || !exampleable(&p.schema) {
        return None;
    }
    candidates(&p.name, &p.schema, 0)
        .into_iter()
        .find(|c| schema_check::check(&p.schema, c).is_empty())
}

fn candidates(name: &str, schema: &Value, depth: usize) -> Vec<Value> {
    let mut out = Vec::new();
    if depth > 4 {
        return out;
    }
    if let Some(d) = schema.get("default") {
        out.push(d.clone());
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        out.extend(e.iter().filter(|v| !v.is_null()).take(1).cloned());
    }
    if let Some(ex) = schema.get("example") {
        out.push(ex.clone());
    }
    let ty = schema
        .get("type")
        .and_then(|t| match t {
            Value::String(s) => Some(s.as_str()),
            Value::Array(a) => a.iter().filter_map(Value::as_str).find(|t| *t != "null"),
            _ => None,
        })
        .unwrap_or("string");
    match ty {
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            out.extend(
                candidates(name, &items, depth + 1)
                    .into_iter()
                    .map(|v| json!([v])),
            );
        }
        "integer" | "number" => out.extend(numbers(name, schema, ty == "integer")),
        "boolean" => out.push(json!(true)),
        _ => {
            if let Some(f) = schema.get("format").and_then(Value::as_str) {
                out.extend(by_format(f));
            }
            out.extend(strings_by_name(name));
        }
    }
    out
}

fn by_format(format: &str) -> Vec<Value> {
    let v = match format {
        "date" => "2024-01-15",
        "date-time" => "2024-01-15T09:30:00Z",
        "time" => "09:30:00",
        "email" => "user@example.com",
        "uuid" => "3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "uri" | "url" => "https://example.com",
        "hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "byte" => "U2hvcnRsaXN0",
        "int32" | "int64" => "42",
        _ => return Vec::new(),
    };
    vec![json!(v)]
}

/// Plausible strings for common names, most specific first; the generic ones last.
fn strings_by_name(name: &str) -> Vec<Value> {
    let words = split_identifier(name);
    let has = |w: &str| words.iter().any(|x| x == w);
    let last = words.last().map(String::as_str).unwrap_or("");
    let mut out: Vec<&str> = Vec::new();
    if has("language") || has("lang") || has("locale") {
        out.extend(["en-US", "en", "en_US"]);
    }
    if has("country") || has("region") || has("market") {
        out.extend(["US", "us"]);
    }
    if has("currency") {
        out.push("USD");
    }
    if has("email") {
        out.push("user@example.com");
    }
    if has("url") || has("uri") || has("link") || has("website") {
        out.push("https://example.com");
    }
    if has("date") || has("since") || has("until") || has("from") || has("to") || has("day") {
        out.extend(["2024-01-15", "2024-01-15T09:30:00Z"]);
    }
    if has("year") {
        out.push("2024");
    }
    if has("timezone") || has("tz") {
        out.push("Europe/Berlin");
    }
    if has("sort") || has("order") {
        out.extend(["asc", "desc", "popularity.desc"]);
    }
    if has("query")
        || has("q")
        || has("search")
        || has("keyword")
        || has("term")
        || has("name")
        || has("title")
    {
        out.extend(["inception", "Jane Doe"]);
    }
    if last == "id" || last == "ids" || has("id") {
        out.extend(["123", "abc123", "4aawyAB9vmqN3uQ7FjRGTy"]);
    }
    if has("type") || has("kind") || has("category") {
        out.push("default");
    }
    if has("fields") || has("include") || has("expand") {
        out.push("id,name");
    }
    out.extend(["example", "abc123", "1"]);
    out.into_iter().map(|s| json!(s)).collect()
}

fn numbers(name: &str, schema: &Value, integer: bool) -> Vec<Value> {
    let words = split_identifier(name);
    let has = |w: &str| words.iter().any(|x| x == w);
    let mut preferred: Vec<f64> = Vec::new();
    if has("page") {
        preferred.push(1.0);
    }
    if has("limit") || has("size") || has("count") || has("per") {
        preferred.push(10.0);
    }
    if has("offset") || has("skip") {
        preferred.push(0.0);
    }
    if has("year") {
        preferred.push(2024.0);
    }
    if has("id") || has("ids") {
        preferred.push(123.0);
    }
    preferred.extend([1.0, 10.0, 0.0]);
    let lo = bound(schema, "minimum", "exclusiveMinimum", 1.0);
    let hi = bound(schema, "maximum", "exclusiveMaximum", -1.0);
    let mut out = Vec::new();
    for mut n in preferred {
        if let Some(lo) = lo {
            n = n.max(lo);
        }
        if let Some(hi) = hi {
            n = n.min(hi);
        }
        if let Some(m) = schema
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m > 0.0)
        {
            n = (n / m).ceil() * m;
        }
        out.push(if integer || n.fract() == 0.0 {
            json!(n.round() as i64)
        } else {
            json!(n)
        });
    }
    out
}

/// The effective bound: `minimum` (or `maximum`), nudged inward by one step when it is
/// exclusive (3.0 boolean form or 3.1 numeric form).
fn bound(schema: &Value, key: &str, excl_key: &str, step: f64) -> Option<f64> {
    let base = schema.get(key).and_then(Value::as_f64);
    match schema.get(excl_key) {
        Some(Value::Bool(true)) => base.map(|b| b + step),
        Some(v) if v.is_number() => v.as_f64().map(|b| b + step),
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, schema: Value) -> Parameter {
        serde_json::from_value(json!({
            "name": name, "location": "query", "required": false, "description": null,
            "schema": schema, "style": null, "explode": null, "example": null,
            "deprecated": false, "description_provenance": null, "example_provenance": null
        }))
        .unwrap()
    }

    #[test]
    fn examples_follow_the_schema() {
        assert_eq!(
            example(&param(
                "page",
                json!({"type": "integer", "minimum": 1, "maximum": 1000})
            )),
            Some(json!(1))
        );
        assert_eq!(
            example(&param("limit", json!({"type": "integer", "maximum": 5}))),
            Some(json!(5))
        );
        assert_eq!(
            example(&param(
                "sort",
                json!({"type": "string", "enum": ["asc", "desc"]})
            )),
            Some(json!("asc"))
        );
        assert_eq!(
            example(&param("x", json!({"type": "string", "default": "d"}))),
            Some(json!("d"))
        );
        assert_eq!(
            example(&param("when", json!({"type": "string", "format": "date"}))),
            Some(json!("2024-01-15"))
        );
        assert_eq!(
            example(&param(
                "language",
                json!({"type": "string", "pattern": "([a-z]{2})-([A-Z]{2})"})
            )),
            Some(json!("en-US"))
        );
        assert_eq!(
            example(&param(
                "ids",
                json!({"type": "array", "items": {"type": "integer"}})
            )),
            Some(json!([123]))
        );
        assert_eq!(
            example(&param("flag", json!({"type": "boolean"}))),
            Some(json!(true))
        );
    }

    #[test]
    fn no_example_for_secrets_objects_or_impossible_patterns() {
        assert_eq!(example(&param("api_key", json!({"type": "string"}))), None);
        assert_eq!(
            example(&param("X-Auth-Token", json!({"type": "string"}))),
            None
        );
        assert_eq!(example(&param("filter", json!({"type": "object"}))), None);
        assert_eq!(
            example(&param(
                "code",
                json!({"type": "string", "pattern": "^[0-9]{9}$"})
            )),
            None
        );
    }
}
