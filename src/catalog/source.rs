//! Reading one spec file into a JSON value, JSON or YAML, whatever the extension claims.

use super::problem::Problem;
use serde_json::{Map, Number, Value};
use std::path::Path;

/// Specs larger than this are refused outright: nothing legitimate comes close (the largest
/// real spec we know, Stripe's, is under 10 MB) and parsing is memory-hungry.
pub const MAX_SPEC_BYTES: u64 = 64 * 1024 * 1024;

/// A parsed document plus the warnings its reading produced.
pub struct Parsed {
    pub value: Value,
    pub warnings: Vec<Problem>,
}

/// Reads and parses a spec file. Invalid UTF-8 is decoded lossily with a warning (one bad
/// byte in a description should not cost a whole API); syntax errors are fatal.
pub fn read_document(path: &Path) -> Result<Parsed, Problem> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Problem::error(path, None, format!("cannot read file: {e}")))?;
    if meta.is_dir() {
        return Err(Problem::error(
            path,
            None,
            "is a folder, expected a spec file",
        ));
    }
    if meta.len() > MAX_SPEC_BYTES {
        return Err(Problem::error(
            path,
            None,
            format!(
                "file is {} bytes, more than the {MAX_SPEC_BYTES} byte limit",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Problem::error(path, None, format!("cannot read file: {e}")))?;
    let mut warnings = Vec::new();
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            warnings.push(Problem::warning(
                path,
                None,
                format!(
                    "not valid UTF-8 (first bad byte at offset {at}); invalid bytes were replaced"
                ),
            ));
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let value = match parse_text(path, &text) {
        Ok(v) => v,
        Err(first) => {
            // Two defects seen in published specs that a YAML parser rightly rejects but
            // whose meaning is unambiguous: whitespace-only lines holding tabs inside block
            // scalars, and stray control characters in strings. Repair, retry, and say so.
            let repaired = repair(&text);
            if repaired == text {
                return Err(first);
            }
            let v = parse_text(path, &repaired).map_err(|_| first.clone())?;
            warnings.push(Problem::warning(
                path,
                None,
                format!(
                    "{}; loaded after blanking whitespace-only lines and control characters",
                    first.message
                ),
            ));
            v
        }
    };
    Ok(Parsed { value, warnings })
}

/// Blanks whitespace-only lines and replaces control characters (other than tab, CR, LF)
/// with spaces.
fn repair(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if !body.is_empty() && body.chars().all(|c| c == ' ' || c == '\t') {
            out.push_str(&line[body.len()..]);
            continue;
        }
        out.extend(line.chars().map(|c| {
            if c.is_control() && !matches!(c, '\t' | '\n' | '\r') {
                ' '
            } else {
                c
            }
        }));
    }
    out
}

/// Parses text as JSON when it looks like JSON, as YAML otherwise.
pub fn parse_text(path: &Path, text: &str) -> Result<Value, Problem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let looks_json = text.trim_start().starts_with('{');
    if looks_json {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => return Ok(v),
            Err(e) => {
                // A JSON-looking file may still be valid YAML (flow style, comments); only
                // report the JSON error if YAML cannot read it either.
                if let Ok(v) = parse_yaml(text) {
                    return Ok(v);
                }
                return Err(Problem::error(
                    path,
                    None,
                    format!(
                        "invalid JSON at line {}, column {}: {e}",
                        e.line(),
                        e.column()
                    ),
                ));
            }
        }
    }
    parse_yaml(text).map_err(|e| Problem::error(path, None, format!("invalid YAML: {e}")))
}

fn parse_yaml(text: &str) -> Result<Value, serde_yaml::Error> {
    let y: serde_yaml::Value = serde_yaml::from_str(text)?;
    Ok(yaml_to_json(y, 0))
}

/// serde_yaml refuses documents nested deeper than this itself; the guard here only keeps
/// our own recursion honest.
const MAX_DEPTH: usize = 256;

/// Converts YAML to JSON. YAML allows non-string keys (`200:` as an integer response code,
/// `yes:` as a boolean under YAML 1.1); OpenAPI means them as strings.
fn yaml_to_json(y: serde_yaml::Value, depth: usize) -> Value {
    use serde_yaml::Value as Y;
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    match y {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Number(i.into())
            } else if let Some(u) = n.as_u64() {
                Value::Number(u.into())
            } else {
                n.as_f64()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(seq) => Value::Array(
            seq.into_iter()
                .map(|v| yaml_to_json(v, depth + 1))
                .collect(),
        ),
        Y::Mapping(m) => {
            let mut out = Map::with_capacity(m.len());
            for (k, v) in m {
                out.insert(yaml_key(k), yaml_to_json(v, depth + 1));
            }
            Value::Object(out)
        }
        Y::Tagged(t) => yaml_to_json(t.value, depth + 1),
    }
}

fn yaml_key(k: serde_yaml::Value) -> String {
    use serde_yaml::Value as Y;
    match k {
        Y::String(s) => s,
        Y::Number(n) => n.to_string(),
        Y::Bool(b) => b.to_string(),
        Y::Null => "null".to_string(),
        other => serde_yaml::to_string(&other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_integer_keys_become_strings() {
        let v = parse_text(
            Path::new("x.yaml"),
            "responses:\n  200:\n    description: ok\n",
        )
        .unwrap();
        assert_eq!(v["responses"]["200"]["description"], "ok");
    }

    #[test]
    fn tab_only_lines_in_block_scalars_are_repaired() {
        let text = "openapi: 3.1.0\ninfo:\n  description: |-\n    \t\n    Text\n  title: t\n";
        assert!(parse_text(Path::new("x.yaml"), text).is_err());
        let v = parse_text(Path::new("x.yaml"), &repair(text)).unwrap();
        assert_eq!(v["info"]["title"], "t");
    }

    #[test]
    fn bad_json_names_line() {
        let e = parse_text(Path::new("x.json"), "{\"a\": [1,\n 2,, ]}").unwrap_err();
        assert!(e.message.contains("line 2"), "{}", e.message);
    }
}
