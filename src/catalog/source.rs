//! Reading one spec file into a JSON value, JSON or YAML, whatever the extension claims.

use super::problem::Problem;
use super::yaml;
use serde_json::Value;
use std::path::Path;

/// Specs larger than this are refused outright: nothing legitimate comes close (the largest
/// real spec we know, Stripe's, is under 10 MB). A spec this size loads in about 2.5 s and
/// 2 to 4 times its size in memory (`cargo bench --bench spec_load`).
pub const MAX_SPEC_BYTES: u64 = 64 * 1024 * 1024;

/// YAML reads about three times slower than JSON (and takes 2 to 7 times its size in
/// memory), so YAML specs have a lower limit that keeps the worst case under 5 s.
pub const MAX_YAML_BYTES: usize = 32 * 1024 * 1024;

/// The start of the message of a document nested too deeply (see [`parse_text`]).
const TOO_DEEP: &str = "nested too deeply";

/// A parsed document plus the warnings its reading produced.
pub struct Parsed {
    pub value: Value,
    pub warnings: Vec<Problem>,
}

/// Reads and parses a spec file. Invalid UTF-8 is decoded lossily with a warning (one bad
/// byte in a description should not cost a whole API); syntax errors are fatal.
pub fn read_document(path: &Path) -> Result<Parsed, Problem> {
    read_document_with(path, false)
}

/// [`read_document`] with the path items packed (`compact::pack`), as a catalog loads a
/// spec.
pub fn read_document_packed(path: &Path) -> Result<Parsed, Problem> {
    read_document_with(path, true)
}

fn read_document_with(path: &Path, pack: bool) -> Result<Parsed, Problem> {
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
    let value = match parse_text_with(path, &text, pack) {
        Ok(v) => v,
        // Nothing a repair does changes the nesting or the size.
        Err(first) if first.message.starts_with(TOO_DEEP) || text.len() > MAX_YAML_BYTES => {
            return Err(first)
        }
        Err(first) => {
            // Two defects seen in published specs that a YAML parser rightly rejects but
            // whose meaning is unambiguous: whitespace-only lines holding tabs inside block
            // scalars, and stray control characters in strings. Repair, retry, and say so.
            let repaired = repair(&text);
            if repaired == text {
                return Err(first);
            }
            let v = parse_text_with(path, &repaired, pack).map_err(|_| first.clone())?;
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
///
/// Both parsers run in time linear in the text and stop at the first collection nested
/// [`MAX_DEPTH`](super::yaml::MAX_DEPTH) levels deep; a document that deep is refused
/// without trying the other parser (retrying deep JSON as YAML is what once made a 1 MB
/// file take two minutes).
pub fn parse_text(path: &Path, text: &str) -> Result<Value, Problem> {
    parse_text_with(path, text, false)
}

fn parse_text_with(path: &Path, text: &str, pack: bool) -> Result<Value, Problem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let looks_json = text.trim_start().starts_with('{');
    if looks_json {
        match super::compact::from_json_str_with(text, pack) {
            Ok(v) => return Ok(v),
            Err(e) => {
                let at = format!("line {}, column {}", e.line(), e.column());
                // serde_json's recursion limit is the same as the YAML reader's depth limit.
                if e.to_string().starts_with("recursion limit exceeded") {
                    return Err(too_deep(path, &at));
                }
                // A JSON-looking file may still be valid YAML (flow style, comments); only
                // report the JSON error if YAML cannot read it either (or says it is too
                // deep, which is what a JSON reader cannot see behind a syntax error).
                if text.len() <= MAX_YAML_BYTES {
                    match yaml::parse_with(text, pack) {
                        Ok(v) => return Ok(v),
                        Err(y) if y.too_deep => {
                            return Err(too_deep(
                                path,
                                &format!("line {}, column {}", y.line, y.column),
                            ))
                        }
                        Err(_) => {}
                    }
                }
                return Err(Problem::error(
                    path,
                    None,
                    format!("invalid JSON at {at}: {e}"),
                ));
            }
        }
    }
    if text.len() > MAX_YAML_BYTES {
        return Err(Problem::error(
            path,
            None,
            format!(
                "file is {} bytes of YAML, more than the {MAX_YAML_BYTES} byte limit for YAML specs \
                 (JSON may have up to {MAX_SPEC_BYTES} bytes: it reads three times faster)",
                text.len()
            ),
        ));
    }
    yaml::parse_with(text, pack).map_err(|e| {
        if e.too_deep {
            too_deep(path, &format!("line {}, column {}", e.line, e.column))
        } else {
            Problem::error(path, None, format!("invalid YAML: {e}"))
        }
    })
}

fn too_deep(path: &Path, at: &str) -> Problem {
    Problem::error(
        path,
        None,
        format!(
            "{TOO_DEEP}: {} levels of objects and arrays at {at}, more than the limit of {}",
            yaml::MAX_DEPTH,
            yaml::MAX_DEPTH - 1
        ),
    )
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
    fn repair_blanks_whitespace_lines_and_control_characters() {
        // (The YAML reader accepts both defects itself; the repair stays for what it
        // does not.)
        let text = "openapi: 3.1.0\ninfo:\n  description: |-\n    \t\n    Te\u{1}xt\n  title: t\n";
        assert_eq!(
            repair(text),
            "openapi: 3.1.0\ninfo:\n  description: |-\n\n    Te xt\n  title: t\n"
        );
        let v = parse_text(Path::new("x.yaml"), text).unwrap();
        assert_eq!(v["info"]["title"], "t");
    }

    #[test]
    fn deep_nesting_is_refused_without_trying_the_other_parser() {
        let n = 200_000;
        let json = format!("{{\"x\":{}1{}}}", "{\"a\":".repeat(n), "}".repeat(n));
        let e = parse_text(Path::new("d.json"), &json).unwrap_err();
        assert!(
            e.message.starts_with("nested too deeply: 128 levels") && e.file == Path::new("d.json"),
            "{e}"
        );
        let yaml = format!("x: {}1{}", "[".repeat(n), "]".repeat(n));
        let e = parse_text(Path::new("d.yaml"), &yaml).unwrap_err();
        assert!(
            e.message.starts_with("nested too deeply: 128 levels"),
            "{e}"
        );
        assert!(e.to_string().contains("d.yaml"), "{e}");
        // YAML that looks like JSON is still refused for its depth, not for its syntax.
        let flow = format!("{{x: {}1{}}}", "{a: ".repeat(n), "}".repeat(n));
        let e = parse_text(Path::new("f.yaml"), &flow).unwrap_err();
        assert!(
            e.message.starts_with("nested too deeply: 128 levels"),
            "{e}"
        );
        // 127 levels are fine, in both.
        let ok = format!("{{\"x\":{}1{}}}", "[".repeat(126), "]".repeat(126));
        assert!(parse_text(Path::new("ok.json"), &ok).is_ok());
        assert!(parse_text(Path::new("ok.yaml"), &ok.replace("\"x\":", "x: ")).is_ok());
    }

    #[test]
    fn big_yaml_is_refused_big_json_is_not() {
        let line = "  k: v\n";
        let mut yaml = String::from("openapi: 3.0.0\nx:\n");
        while yaml.len() <= MAX_YAML_BYTES {
            yaml.push_str(line);
        }
        let e = parse_text(Path::new("big.yaml"), &yaml).unwrap_err();
        assert!(e.message.contains("limit for YAML specs"), "{e}");
        let json =
            serde_json::to_string(&serde_json::json!({"x": "v".repeat(MAX_YAML_BYTES)})).unwrap();
        assert!(parse_text(Path::new("big.json"), &json).is_ok());
    }

    #[test]
    fn bad_json_names_line() {
        let e = parse_text(Path::new("x.json"), "{\"a\": [1,\n 2,, ]}").unwrap_err();
        assert!(e.message.contains("line 2"), "{}", e.message);
    }
}
