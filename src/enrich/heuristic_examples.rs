//! Example values without a model: from the schema's `default` or `enum`, its `format`, the
//! values its description quotes, the parameter's name, and finally its type, clamped to
//! its bounds.
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
    let listed = quoted_values(p.description.as_deref().unwrap_or(""));
    candidates(&p.name, &p.schema, &listed, 0)
        .into_iter()
        .find(|c| schema_check::check(&p.schema, c).is_empty())
}

/// The values a description quotes (`"track"`, `` `hour` ``, `“en”`), in order: where a
/// schema has no `enum`, its description is where the allowed values are written down
/// ("possible values are \"track\", \"user\""). Single quotes are left out: they are
/// apostrophes as often. A quoted span longer than a few words is prose, not a value.
fn quoted_values(description: &str) -> Vec<String> {
    const PAIRS: [(char, char); 3] = [('"', '"'), ('`', '`'), ('\u{201C}', '\u{201D}')];
    let mut out: Vec<String> = Vec::new();
    let mut chars = description.char_indices();
    while let Some((i, c)) = chars.next() {
        let Some(&(_, close)) = PAIRS.iter().find(|(open, _)| *open == c) else {
            continue;
        };
        let rest = &description[i + c.len_utf8()..];
        let Some(end) = rest.find(close) else {
            break;
        };
        let value = rest[..end].trim();
        let fits = !value.is_empty()
            && value.chars().count() <= 40
            && value.split_whitespace().count() <= 3
            && !value.contains('\n');
        if fits && !is_date_template(value) && !out.iter().any(|v| v == value) {
            out.push(value.to_string());
        }
        // Go on after the closing quote.
        let skip = rest[..end].chars().count() + 1;
        for _ in 0..skip {
            chars.next();
        }
    }
    out
}

/// A date or time template (`YYYY-MM-DD`, `HH:mm`) says how a value is written, not what
/// one is.
fn is_date_template(value: &str) -> bool {
    let upper = value.to_ascii_uppercase();
    ["YYYY", "MM", "DD", "HH"].iter().any(|t| upper.contains(t))
        && value.chars().all(|c| "YyMDdHhmSsTZ-:/. ".contains(c))
}

fn candidates(name: &str, schema: &Value, listed: &[String], depth: usize) -> Vec<Value> {
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
                candidates(name, &items, listed, depth + 1)
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
            out.extend(listed.iter().map(|v| json!(v)));
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

    fn described(name: &str, schema: Value, description: &str) -> Parameter {
        let mut p = param(name, schema);
        p.description = Some(description.to_string());
        p
    }

    #[test]
    fn values_the_description_quotes_come_before_guesses_from_the_name() {
        let s = json!({"type": "string"});
        assert_eq!(
            example(&described(
                "interval",
                s.clone(),
                "Bucket size: `hour`, `day` or `week`."
            )),
            Some(json!("hour"))
        );
        assert_eq!(
            example(&described(
                "type",
                s.clone(),
                r#"Possible values for type are "track", "user", "playlist"."#
            )),
            Some(json!("track"))
        );
        assert_eq!(
            example(&described(
                "kinds",
                json!({"type": "array", "items": {"type": "string"}}),
                "One or more of \u{201C}cat\u{201D} and \u{201C}dog\u{201D}."
            )),
            Some(json!(["cat"]))
        );
        // An enum still wins; a quote that fails the schema is passed over; prose in
        // quotes and apostrophes are not values.
        assert_eq!(
            example(&described(
                "unit",
                json!({"type": "string", "enum": ["metric"]}),
                r#"Use "imperial" for feet."#
            )),
            Some(json!("metric"))
        );
        assert_eq!(
            example(&described(
                "code",
                json!({"type": "string", "pattern": "^[A-Z]{3}$"}),
                r#"A code such as "usd" or "EUR"."#
            )),
            Some(json!("EUR"))
        );
        assert_eq!(
            quoted_values(r#"The user's "display name as it appears on the profile page" field"#),
            Vec::<String>::new()
        );
        assert_eq!(
            quoted_values(
                r#"Written "hh:mm" or "YYYY-MM-DD", such as "2021-03-04"; an unclosed "quote"#
            ),
            ["2021-03-04"],
            "templates say how a value is written, not what one is"
        );
        assert_eq!(
            example(&described("start_date", s, r#"As "YYYY-MM-DD"."#)),
            Some(json!("2024-01-15"))
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
