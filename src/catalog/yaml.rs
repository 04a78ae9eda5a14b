//! YAML text to a JSON value, in one streaming pass with bounded depth and bounded copies.
//!
//! saphyr-parser (pure Rust, pull-based) hands out events; they are folded straight into a
//! `serde_json::Value` with an explicit stack, so there is no intermediate event list or
//! YAML tree (the old loader held both, about 95 times the file at its peak), no recursion
//! on the native stack, and parsing stops at the first collection nested [`MAX_DEPTH`]
//! levels deep, whatever follows.
//!
//! Scalars are read the way `serde_yaml` 0.9 read them, so specs load exactly as before:
//! YAML 1.2 core schema (`null`/`~`/empty, `true`/`false` in three casings, decimal, `0x`,
//! `0o`, `0b` integers, floats, `.inf`/`.nan`), quoted scalars always strings, `yes`/`on`
//! strings; mapping keys become strings (`200:` is the response code `"200"`); duplicate
//! keys are an error; a stream must hold at most one document; `<<` merge keys are plain
//! keys.
//!
//! Anchors and aliases are supported, but every copy they cause (storing an anchored
//! value, expanding an alias) is counted in nodes, and the document is refused once the
//! copies exceed [`copy_budget`]: a "billion laughs" file is a few hundred bytes that
//! would otherwise expand to gigabytes.

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError, Tag};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::collections::HashMap;

/// Collections may nest at most this many levels below the document's root, minus one:
/// a collection at depth `MAX_DEPTH` is refused. It is serde_json's own recursion limit,
/// so JSON and YAML specs share one rule; the deepest real spec in the corpus nests far
/// less.
pub const MAX_DEPTH: usize = 128;

/// Nodes that anchors and aliases may copy, for a document of `len` bytes: a million
/// (about 100 MB of JSON values) plus one per 16 bytes of the file, so aliases can at
/// most about double what the document itself costs.
pub fn copy_budget(len: usize) -> usize {
    1_000_000 + len / 16
}

/// A YAML document that could not be read, with where (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub message: String,
    pub line: usize,
    pub column: usize,
    /// The document nests deeper than [`MAX_DEPTH`].
    pub too_deep: bool,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at line {}, column {}",
            self.message, self.line, self.column
        )
    }
}

impl YamlError {
    fn at(message: impl Into<String>, m: &Marker) -> YamlError {
        YamlError {
            message: message.into(),
            line: m.line(),
            column: m.col() + 1,
            too_deep: false,
        }
    }
}

fn scan_error(e: &ScanError) -> YamlError {
    // The scanner has its own flow-nesting limit (255); report it like ours.
    if e.info().contains("recursion limit") {
        return too_deep(e.marker());
    }
    YamlError::at(e.info().to_string(), e.marker())
}

fn too_deep(m: &Marker) -> YamlError {
    YamlError {
        too_deep: true,
        ..YamlError::at(format!("nested {MAX_DEPTH} levels deep"), m)
    }
}

/// A collection being built.
enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
        nodes: usize,
    },
    Map {
        map: Map<String, Value>,
        /// The key read, waiting for its value.
        key: Option<String>,
        anchor: usize,
        nodes: usize,
    },
}

/// The fold's state: the open collections, the anchors defined so far, the copy budget.
struct Builder {
    stack: Vec<Frame>,
    anchors: HashMap<usize, (Value, usize)>,
    copies: usize,
    budget: usize,
    root: Option<Value>,
    /// Pack each path item (`compact::pack_paths`).
    pack: bool,
}

impl Builder {
    /// Stores a finished value (of `nodes` nodes) under its anchor, if it has one, then
    /// hands it to the enclosing collection (or makes it the root).
    fn finish(
        &mut self,
        v: Value,
        nodes: usize,
        anchor: usize,
        at: &Marker,
    ) -> Result<(), YamlError> {
        if anchor != 0 {
            self.spend(nodes, at)?;
            self.anchors.insert(anchor, (v.clone(), nodes));
        }
        self.add(v, nodes, at)
    }

    fn spend(&mut self, nodes: usize, at: &Marker) -> Result<(), YamlError> {
        self.copies = self.copies.saturating_add(nodes);
        if self.copies > self.budget {
            return Err(YamlError::at(
                format!(
                    "anchors and aliases expand to more than {} copied nodes (an alias bomb?)",
                    self.budget
                ),
                at,
            ));
        }
        Ok(())
    }

    fn add(&mut self, v: Value, nodes: usize, at: &Marker) -> Result<(), YamlError> {
        // A path item (a value of the root's `paths`) is kept as its JSON text.
        let v = match self.stack.as_slice() {
            [Frame::Map {
                key: Some(root_key),
                ..
            }, Frame::Map { key: Some(_), .. }]
                if self.pack && root_key == "paths" =>
            {
                super::compact::pack(&v)
            }
            _ => v,
        };
        match self.stack.last_mut() {
            None => {
                self.root = Some(v);
                Ok(())
            }
            Some(Frame::Seq {
                items, nodes: n, ..
            }) => {
                items.push(v);
                *n += nodes;
                Ok(())
            }
            Some(Frame::Map {
                map, key, nodes: n, ..
            }) => {
                *n += nodes;
                match key.take() {
                    None => {
                        *key = Some(key_string(v));
                        Ok(())
                    }
                    Some(k) => {
                        if map.contains_key(&k) {
                            return Err(YamlError::at(format!("duplicate key '{k}'"), at));
                        }
                        map.insert(k, v);
                        Ok(())
                    }
                }
            }
        }
    }

    fn open(&mut self, frame: Frame, at: &Marker) -> Result<(), YamlError> {
        if self.stack.len() + 1 >= MAX_DEPTH {
            return Err(too_deep(at));
        }
        self.stack.push(frame);
        Ok(())
    }
}

/// Parses a YAML stream holding at most one document into JSON (an empty stream is
/// `null`).
pub fn parse(text: &str) -> Result<Value, YamlError> {
    parse_with(text, false)
}

/// [`parse`], with the path items packed when `pack` (`compact::pack_paths`).
pub fn parse_with(text: &str, pack: bool) -> Result<Value, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut b = Builder {
        stack: Vec::new(),
        anchors: HashMap::new(),
        copies: 0,
        budget: copy_budget(text.len()),
        root: None,
        pack,
    };
    let mut documents = 0;
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| scan_error(&e))?;
        let at = span.start;
        match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError::at(
                        "more than one document in the file (a spec is one document)",
                        &at,
                    ));
                }
            }
            Event::Alias(id) => {
                let Some((v, nodes)) = b.anchors.get(&id) else {
                    return Err(YamlError::at("alias to an unknown anchor", &at));
                };
                let (v, nodes) = (v.clone(), *nodes);
                b.spend(nodes, &at)?;
                b.add(v, nodes, &at)?;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let v = scalar(text, style, tag.as_deref());
                b.finish(v, 1, anchor, &at)?;
            }
            Event::SequenceStart(anchor, _) => b.open(
                Frame::Seq {
                    items: Vec::new(),
                    anchor,
                    nodes: 1,
                },
                &at,
            )?,
            Event::MappingStart(anchor, _) => b.open(
                Frame::Map {
                    map: Map::new(),
                    key: None,
                    anchor,
                    nodes: 1,
                },
                &at,
            )?,
            Event::SequenceEnd | Event::MappingEnd => {
                // Trimmed to their length: a spec is mostly small collections, and the
                // spare room that growing leaves is most of its memory (`compact`).
                let (v, nodes, anchor) = match b.stack.pop() {
                    Some(Frame::Seq {
                        mut items,
                        anchor,
                        nodes,
                    }) => {
                        items.shrink_to_fit();
                        (Value::Array(items), nodes, anchor)
                    }
                    Some(Frame::Map {
                        map, anchor, nodes, ..
                    }) => (Value::Object(super::compact::exact_map(map)), nodes, anchor),
                    None => return Err(YamlError::at("unbalanced collection end", &at)),
                };
                b.finish(v, nodes, anchor, &at)?;
            }
        }
    }
    Ok(b.root.unwrap_or(Value::Null))
}

/// A scalar's value: quoted and block scalars are strings; plain scalars are resolved by
/// the core schema; the core tags `!!bool`, `!!int`, `!!float`, `!!null` ask for their
/// type (a value that does not fit stays a string); local tags (`!thing`) are ignored.
fn scalar(text: Cow<'_, str>, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    if let Some(tag) = tag {
        if tag.is_yaml_core_schema() {
            let typed = match tag.suffix.as_str() {
                "bool" => parse_bool(&text).map(Value::Bool),
                "null" => parse_null(&text).then_some(Value::Null),
                "int" => parse_int(&text),
                "float" => parse_float(&text).map(float_value),
                _ => None,
            };
            return typed.unwrap_or_else(|| Value::String(owned(text)));
        }
        if !tag.handle.starts_with('!') {
            return Value::String(owned(text));
        }
    }
    if style != ScalarStyle::Plain {
        return Value::String(owned(text));
    }
    resolve_plain(text)
}

fn resolve_plain(text: Cow<'_, str>) -> Value {
    if text.is_empty() || parse_null(&text) {
        return Value::Null;
    }
    if let Some(b) = parse_bool(&text) {
        return Value::Bool(b);
    }
    if let Some(n) = parse_int(&text) {
        return n;
    }
    if !digits_but_not_number(&text) {
        if let Some(f) = parse_float(&text) {
            return float_value(f);
        }
    }
    Value::String(owned(text))
}

/// The scalar's text as a string of its own length: the scanner reserves room for a long
/// scalar in every one it reads, and a spec holds hundreds of thousands of short ones. A
/// copy rather than a shrink in place, so the scanner's buffer is freed whole and reused
/// for the next scalar instead of leaving a small hole behind each one.
fn owned(text: Cow<'_, str>) -> String {
    match text {
        Cow::Owned(s) if s.capacity() > s.len() => s.as_str().to_owned(),
        t => t.into_owned(),
    }
}

/// JSON has no infinities or NaN; like the old loader, they become `null`.
fn float_value(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// Longest text a collection used as a key becomes.
const MAX_COMPLEX_KEY: usize = 256;

/// A key as the string OpenAPI means: `200` is `"200"`, `true` is `"true"`, `~` is
/// `"null"`; a collection used as a key (legal YAML, meaningless in OpenAPI) becomes the
/// start of its JSON text. The cut matters: keys nested in keys (`? ? ? x`) would
/// otherwise double their escaping at every level, 2^n bytes from 2n.
fn key_string(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => {
            let mut s = other.to_string();
            if s.len() > MAX_COMPLEX_KEY {
                let mut end = MAX_COMPLEX_KEY;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s.truncate(end);
            }
            s
        }
    }
}

fn parse_null(s: &str) -> bool {
    matches!(s, "null" | "Null" | "NULL" | "~")
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// Decimal, `0x`, `0o` and `0b` integers with an optional sign; values beyond 64 bits
/// become floats.
fn parse_int(s: &str) -> Option<Value> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let (radix, body) = if let Some(r) = digits.strip_prefix("0x") {
        (16, r)
    } else if let Some(r) = digits.strip_prefix("0o") {
        (8, r)
    } else if let Some(r) = digits.strip_prefix("0b") {
        (2, r)
    } else {
        (10, digits)
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    if radix == 10 && digits_but_not_number(s) {
        return None;
    }
    let magnitude = u128::from_str_radix(body, radix).ok()?;
    if neg {
        if magnitude <= i64::MAX as u128 + 1 {
            return Some(Value::Number(Number::from(
                (magnitude as i128).wrapping_neg() as i64,
            )));
        }
        return Number::from_f64(-(magnitude as f64)).map(Value::Number);
    }
    match u64::try_from(magnitude) {
        Ok(u) => Some(Value::Number(Number::from(u))),
        Err(_) => Number::from_f64(magnitude as f64).map(Value::Number),
    }
}

fn parse_float(s: &str) -> Option<f64> {
    let unsigned = match s.strip_prefix('+') {
        Some(u) if u.starts_with(['+', '-']) => return None,
        Some(u) => u,
        None => s,
    };
    match unsigned {
        ".inf" | ".Inf" | ".INF" => return Some(f64::INFINITY),
        _ => {}
    }
    match s {
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    // Rust's float syntax also takes `inf`, `nan` and `infinity`, which YAML reads as
    // strings; only finite results count.
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Leading zeros followed by digits (`0123`) are a string in YAML 1.2.
fn digits_but_not_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    s.len() > 1 && s.starts_with('0') && s[1..].bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Value {
        parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn scalars_resolve_like_the_core_schema() {
        let v = p("a: 1\nb: -2\nc: 0x1F\nd: 1.5\ne: true\nf: ~\ng:\nh: yes\ni: '1'\nj: 0123\nk: 1e3\nl: .inf\nm: !!str 12\nn: !custom 7\no: 18446744073709551616\n");
        assert_eq!(
            v,
            json!({"a": 1, "b": -2, "c": 31, "d": 1.5, "e": true, "f": null, "g": null,
                   "h": "yes", "i": "1", "j": "0123", "k": 1000.0, "l": null, "m": "12",
                   "n": 7, "o": 18446744073709551616.0})
        );
    }

    #[test]
    fn keys_become_strings() {
        let v = p("200: ok\ntrue: t\n~: n\n1.5: f\n[a, b]: s\n");
        assert_eq!(
            v,
            json!({"200": "ok", "true": "t", "null": "n", "1.5": "f", "[\"a\",\"b\"]": "s"})
        );
    }

    #[test]
    fn keys_nested_in_keys_stay_small() {
        // Found by the spec_nesting fuzz target: 55 levels took more than 2 GB.
        let text = format!("x:\n  {}1\n", "? ".repeat(100));
        let v = p(&text);
        let key = v["x"].as_object().unwrap().keys().next().unwrap().clone();
        assert!(key.len() <= MAX_COMPLEX_KEY, "{}", key.len());
    }

    #[test]
    fn anchors_and_aliases_copy() {
        let v = p("a: &x {k: [1, 2]}\nb: *x\n");
        assert_eq!(v, json!({"a": {"k": [1, 2]}, "b": {"k": [1, 2]}}));
    }

    #[test]
    fn duplicate_keys_and_second_documents_are_errors() {
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.message, "duplicate key 'a'");
        assert_eq!(e.line, 3);
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
        assert_eq!(p(""), Value::Null);
    }

    #[test]
    fn nesting_is_limited_in_block_and_flow_style() {
        let ok = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert!(parse(&ok).is_ok());
        let deep = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let e = parse(&deep).unwrap_err();
        assert!(e.too_deep, "{e}");
        assert_eq!((e.line, e.column), (1, MAX_DEPTH));
        // Far deeper than the scanner's own limit, and in block style.
        let flow = format!("x: {}", "{a: ".repeat(200_000));
        assert!(parse(&flow).unwrap_err().too_deep);
        let block = "- ".repeat(200_000) + "x\n";
        let e = parse(&block).unwrap_err();
        assert!(e.too_deep, "{e}");
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let e = parse(&s).unwrap_err();
        assert!(e.message.contains("alias bomb"), "{e}");
    }
}
