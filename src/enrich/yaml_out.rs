//! Writing a JSON value as block-style YAML that every YAML reader reads back identically.
//!
//! A YAML 1.2 serializer quotes only what its own resolver would misread, so a date example
//! `2024-01-15` or a marker date comes out bare, and YAML 1.1 readers (PyYAML, hence most
//! Python OpenAPI validators) turn it into a date object: the "string" example would then
//! fail its own schema. This emitter writes a string bare only when it is plainly a word or
//! phrase that no YAML version reads as anything else, and double-quoted (JSON escapes,
//! which YAML shares) otherwise. Key order is kept.

use serde_json::Value;

/// The whole document as YAML text.
pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => map(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => seq(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn pad(n: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn map(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (i, (k, v)) in m.iter().enumerate() {
        // The first key of a map inside a sequence item follows its "- " directly.
        if i > 0 || !out.ends_with("- ") {
            pad(indent, out);
        }
        out.push_str(&string(k));
        out.push(':');
        value_after_key(v, indent, out);
    }
}

fn value_after_key(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            map(m, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            seq(a, indent, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn seq(a: &[Value], indent: usize, out: &mut String) {
    for v in a {
        pad(indent, out);
        out.push_str("- ");
        match v {
            Value::Object(m) if !m.is_empty() => map(m, indent + 2, out),
            Value::Array(inner) if !inner.is_empty() => {
                out.truncate(out.len() - 1);
                out.push('\n');
                seq(inner, indent + 2, out);
            }
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
    }
}

/// Words YAML 1.1 reads as booleans or null.
const RESERVED: &[&str] = &[
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~",
];

/// A string, bare when that is unambiguous, double-quoted otherwise.
fn string(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./()-".contains(c))
        && !s.ends_with(' ')
        && !s.contains("  ")
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        s.to_string()
    } else {
        escape_unprintable(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string()))
    }
}

/// Escapes, in JSON text, the characters YAML forbids in a document: DEL, the C1 controls
/// (except NEL) and the non-characters U+FFFE/U+FFFF. serde_json writes them raw (JSON allows
/// them), but YAML readers, which many OpenAPI tools use for JSON too, refuse the file.
/// Such characters can only sit inside JSON strings, so replacing them by `\uXXXX`
/// everywhere is safe.
pub fn escape_unprintable(json: &str) -> String {
    let bad =
        |c: char| matches!(c, '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}');
    if !json.chars().any(bad) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if bad(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::source::parse_text;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn round_trips_and_quotes_the_ambiguous() {
        let doc = json!({
            "openapi": "3.0.0",
            "paths": {"/movie/{movie_id}": {"get": {
                "parameters": [{"name": "on", "in": "query", "example": "2024-01-15"},
                               {"name": "x", "x-example": "yes", "enum": ["a: b", "#c", ""]}],
                "responses": {"200": {"description": "two\nlines \"quoted\" \u{92}"}},
                "tags": [], "x": {}, "nested": [[1, 2], [{"a": null}]], "n": 1.5
            }}}
        });
        let text = to_string(&doc);
        assert!(text.contains("example: \"2024-01-15\""), "{text}");
        assert!(text.contains("name: \"on\""), "{text}");
        assert!(text.contains("\"200\":"), "{text}");
        assert!(
            text.contains("\\u0092") && !text.contains('\u{92}'),
            "{text}"
        );
        assert_eq!(
            parse_text(Path::new("x.yaml"), &text).unwrap(),
            doc,
            "{text}"
        );
    }
}
