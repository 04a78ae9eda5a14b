//! Serving an API that has an enriched copy: the original is what is served, and the
//! copy only lends it text.
//!
//! A copy is a snapshot of its original taken when `shortlist enrich` ran. Served in its
//! place, it would keep serving what an operator has since fixed in the original (an
//! endpoint removed, `servers` moved, a parameter added) until enrichment ran again. So the
//! endpoints, servers, security, parameters and schemas always come from the original,
//! and the copy's text (descriptions, parameter descriptions and examples, the document
//! expansions, their provenance markers and reviewers' rejections) is laid over it, per
//! operation, only where that operation is unchanged since the copy was made.
//!
//! "Unchanged" is known from digests the enricher writes into the copy ([`stamp`]): one of
//! each original operation under [`MADE_FROM`], and one of the whole original document
//! under the same key at the root. When the document's digest differs the copy is stale:
//! a warning on the copy's file names the operations whose text is no longer served (the
//! CLI prints it on stderr, the console's health page lists it). A copy without digests
//! was made by an older version: nothing says which of its operations still match, so
//! none of its text is served, with a warning to run `shortlist enrich` again.

use super::compact;
use super::normalize::{self, Normalized};
use super::source::read_document_packed;
use super::{Method, Problem, SpecSource};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};

/// The extension recording what a copy was made from: at the root, the digest of the whole
/// original document; on each operation, the digest of the original operation.
pub const MADE_FROM: &str = "x-shortlist-made-from";

/// Operation fields that enrichment (or a reviewer of its output) writes.
const OP_TEXT: [&str; 6] = [
    "description",
    "x-shortlist-description",
    "x-shortlist-summary",
    "x-shortlist-questions",
    "x-shortlist-generated",
    "x-shortlist-rejected",
];
/// Parameter fields that enrichment (or a reviewer of its output) writes.
const PARAM_TEXT: [&str; 6] = [
    "description",
    "x-shortlist-description",
    "example",
    "x-example",
    "x-shortlist-generated",
    "x-shortlist-rejected",
];
/// How many `$ref` hops are followed to find a parameter's declaration.
const MAX_HOPS: usize = 16;

/// The digests of an original document: the whole and each operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub document: String,
    /// `(route, method key)` -> digest.
    pub operations: BTreeMap<(String, &'static str), String>,
}

/// The digests of `doc` (path items parsed or packed, see `compact::pack`, alike).
pub fn origin(doc: &Value) -> Origin {
    let mut operations = BTreeMap::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (route, item) in paths {
            let item = unpacked(item);
            for (method, op) in operations_of(&item) {
                operations.insert(
                    (route.clone(), method.key()),
                    operation_digest(doc, &item, op),
                );
            }
        }
    }
    Origin {
        document: document_digest(doc),
        operations,
    }
}

/// Writes `origin` into `copy`, a document made from that original: the document's digest
/// at the root, each operation's on the operation (an operation `origin` does not know is
/// left without one, so its text is never served).
pub fn stamp(copy: &mut Value, origin: &Origin) {
    let Some(root) = copy.as_object_mut() else {
        return;
    };
    root.insert(MADE_FROM.into(), Value::String(origin.document.clone()));
    let Some(paths) = root.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (route, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for method in Method::ALL {
            let Some(op) = item.get_mut(method.key()).and_then(Value::as_object_mut) else {
                continue;
            };
            match origin.operations.get(&(route.clone(), method.key())) {
                Some(d) => {
                    op.insert(MADE_FROM.into(), Value::String(d.clone()));
                }
                None => {
                    op.shift_remove(MADE_FROM);
                }
            }
        }
    }
}

/// Loads `src`, whose enriched copy is `src.path`: the original, with the copy's text on
/// each operation that is unchanged since the copy was made (see the module documentation).
pub fn load(src: &SpecSource) -> Result<Normalized, Problem> {
    let parsed = read_document_packed(&src.original)?;
    load_over(parsed.value, parsed.warnings, src)
}

/// [`load`] with the original already read (`root`, and what reading it warned of): an
/// original made in memory, as an MCP server's listing is (`catalog::mcp_texts`).
pub fn load_over(
    root: Value,
    warnings: Vec<Problem>,
    src: &SpecSource,
) -> Result<Normalized, Problem> {
    let mut root = root;
    let mut warnings = warnings;
    let copy = match read_document_packed(&src.path) {
        Ok(c) => Some(c.value),
        Err(p) => {
            warnings.push(Problem::warning(
                &src.path,
                None,
                format!(
                    "the enriched copy cannot be read ({}); the original {} is served without \
                     its text",
                    p.message,
                    src.original.display()
                ),
            ));
            None
        }
    };
    if let Some(copy) = copy {
        if let Some(w) = overlay(&mut root, &copy, src) {
            warnings.push(w);
        }
    }
    let mut n = normalize::normalize(&src.path, &src.id, root, true)?;
    warnings.append(&mut n.warnings);
    n.warnings = warnings;
    Ok(n)
}

/// Lays the text of `copy` over `root` (the original) where an operation is unchanged; the
/// warning to give when the copy is stale or cannot be matched.
fn overlay(root: &mut Value, copy: &Value, src: &SpecSource) -> Option<Problem> {
    let Some(made_from) = copy.get(MADE_FROM).and_then(Value::as_str) else {
        return Some(Problem::warning(
            &src.path,
            None,
            format!(
                "api '{}': the enriched copy does not record what it was made from (an older \
                 `shortlist enrich` wrote it), so it cannot tell which of its texts still fit \
                 {}; the original is served without them until `shortlist enrich` runs again",
                src.id,
                src.original.display()
            ),
        ));
    };
    let stale = made_from != document_digest(root);
    let copy_paths = copy.get("paths").and_then(Value::as_object);
    let mut seen: HashSet<(String, &'static str)> = HashSet::new();
    let mut changed = Vec::new();
    let obj = root.as_object_mut()?;
    let mut paths = match obj.shift_remove("paths") {
        Some(Value::Object(p)) => p,
        other => {
            if let Some(v) = other {
                obj.insert("paths".into(), v);
            }
            Map::new()
        }
    };
    for (route, item) in paths.iter_mut() {
        let packed = item.is_string();
        let mut it = unpacked(item);
        let copy_item = copy_paths.and_then(|p| p.get(route)).map(unpacked);
        let path_params = it.get("parameters").cloned();
        for method in Method::ALL {
            let key = method.key();
            let Some(copy_op) = copy_item.as_ref().and_then(|c| c.get(key)) else {
                continue;
            };
            let Some(op) = it.get(key).filter(|o| o.is_object()) else {
                continue;
            };
            seen.insert((route.clone(), key));
            let digest = operation_digest(root, &it, op);
            if copy_op.get(MADE_FROM).and_then(Value::as_str) != Some(digest.as_str()) {
                changed.push(format!("{} {route}", method.as_str()));
                continue;
            }
            if let Some(op) = it.get_mut(key).and_then(Value::as_object_mut) {
                lay_text(op, copy_op, path_params.as_ref(), root);
            }
        }
        if packed {
            *item = compact::pack(&it);
        } else {
            *item = it;
        }
    }
    if let Some(o) = root.as_object_mut() {
        o.insert("paths".into(), Value::Object(paths));
    }
    if !stale {
        return None;
    }
    let removed: Vec<String> = copy_paths
        .into_iter()
        .flatten()
        .flat_map(|(route, item)| {
            let item = unpacked(item);
            operations_of(&item)
                .filter(|(m, _)| !seen.contains(&(route.clone(), m.key())))
                .map(|(m, _)| format!("{} {route}", m.as_str()))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut dropped = Vec::new();
    if !changed.is_empty() {
        dropped.push(format!("changed: {}", changed.join(", ")));
    }
    if !removed.is_empty() {
        dropped.push(format!("removed: {}", removed.join(", ")));
    }
    Some(Problem::warning(
        &src.path,
        None,
        format!(
            "api '{}': the enriched copy is stale ({} changed since `shortlist enrich` made \
             it): the original's endpoints and servers are served, with the copy's text only \
             on unchanged operations; {}; run `shortlist enrich` again",
            src.id,
            src.original.display(),
            if dropped.is_empty() {
                "no operation's text was dropped".to_string()
            } else {
                format!("text dropped for operations {}", dropped.join("; "))
            }
        ),
    ))
}

/// Copies the text fields of `copy_op` (and of its own parameters) onto `op`, the
/// original's unchanged operation. A parameter the original declares at path level or by
/// `$ref` gets an operation-level copy of the original's declaration, as the enricher
/// wrote it, so the text lands on the original's schema and nowhere else.
fn lay_text(
    op: &mut Map<String, Value>,
    copy_op: &Value,
    path_params: Option<&Value>,
    root: &Value,
) {
    for k in OP_TEXT {
        if let Some(v) = copy_op.get(k) {
            op.insert(k.to_string(), v.clone());
        }
    }
    let copy_params = copy_op.get("parameters").and_then(Value::as_array);
    for cp in copy_params.into_iter().flatten() {
        let (Some(name), Some(loc)) = (
            cp.get("name").and_then(Value::as_str),
            cp.get("in").and_then(Value::as_str),
        ) else {
            continue;
        };
        if !PARAM_TEXT.iter().any(|k| cp.get(k).is_some()) {
            continue;
        }
        let matches = |p: &Value| {
            let d = deref(root, p);
            d.get("name").and_then(Value::as_str) == Some(name)
                && d.get("in").and_then(Value::as_str) == Some(loc)
        };
        let own = op
            .get("parameters")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().position(matches));
        let mut decl = match own {
            Some(i) => op["parameters"][i].clone(),
            None => match path_params
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|p| matches(p)))
            {
                Some(p) => p.clone(),
                None => continue,
            },
        };
        if decl.get("$ref").is_some() {
            decl = deref(root, &decl).clone();
        }
        let Some(d) = decl.as_object_mut() else {
            continue;
        };
        for k in PARAM_TEXT {
            if let Some(v) = cp.get(k) {
                d.insert(k.to_string(), v.clone());
            }
        }
        let list = op
            .entry("parameters")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = list.as_array_mut() {
            match own {
                Some(i) => list[i] = decl,
                None => list.push(decl),
            }
        }
    }
}

/// A parameter's declaration, following local `$ref`s (the value itself when one cannot
/// be followed).
fn deref<'a>(root: &'a Value, mut v: &'a Value) -> &'a Value {
    for _ in 0..MAX_HOPS {
        match local_target(root, v) {
            Some(t) => v = t,
            None => break,
        }
    }
    v
}

/// The target of `v`'s local `$ref` outside `paths`, when it has one that exists.
fn local_target<'a>(root: &'a Value, v: &Value) -> Option<&'a Value> {
    let pointer = v.get("$ref")?.as_str()?.strip_prefix('#')?;
    if pointer.starts_with("/paths") {
        return None;
    }
    root.pointer(pointer)
}

/// The operations of a path item.
fn operations_of(item: &Value) -> impl Iterator<Item = (Method, &Value)> {
    Method::ALL
        .into_iter()
        .filter_map(move |m| item.get(m.key()).filter(|o| o.is_object()).map(|o| (m, o)))
}

/// A path item parsed, packed or not.
fn unpacked(item: &Value) -> Value {
    compact::unpack(item)
}

/// The digest of one operation as its original defines it: the operation, its path item's
/// parameters and servers, and every local definition they reach by `$ref` (a schema or
/// parameter edited in `components` changes the operations that use it). Key order and
/// layout do not count.
fn operation_digest(root: &Value, item: &Value, op: &Value) -> String {
    let mut h = Sha256::new();
    for part in [item.get("parameters"), item.get("servers"), Some(op)] {
        feed(&mut h, part.unwrap_or(&Value::Null));
        h.update(b"\n");
    }
    let mut queue: Vec<&Value> = [item.get("parameters"), Some(op)]
        .into_iter()
        .flatten()
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    while let Some(v) = queue.pop() {
        let mut refs = Vec::new();
        collect_refs(v, &mut refs);
        for r in refs {
            if !seen.insert(r.to_string()) {
                continue;
            }
            let target = r
                .strip_prefix('#')
                .filter(|p| !p.starts_with("/paths"))
                .and_then(|p| root.pointer(p));
            h.update(r.as_bytes());
            h.update(b"=");
            feed(&mut h, target.unwrap_or(&Value::Null));
            h.update(b"\n");
            if let Some(t) = target {
                queue.push(t);
            }
        }
    }
    hex::encode(h.finalize())
}

/// Every `$ref` string in `v`.
fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(o) => {
            if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                out.push(r);
            }
            o.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// The digest of a whole document, its path items parsed when packed; the copy's own
/// record of its origin is left out.
fn document_digest(doc: &Value) -> String {
    let mut h = Sha256::new();
    match doc.as_object() {
        Some(o) => {
            let mut keys: Vec<&String> = o.keys().filter(|k| *k != MADE_FROM).collect();
            keys.sort();
            for k in keys {
                feed_str(&mut h, k);
                h.update(b":");
                if k == "paths" {
                    let paths = o[k].as_object();
                    let mut routes: Vec<&String> =
                        paths.into_iter().flat_map(|p| p.keys()).collect();
                    routes.sort();
                    for r in routes {
                        feed_str(&mut h, r);
                        h.update(b":");
                        let item = paths.and_then(|p| p.get(r)).map(unpacked);
                        feed(&mut h, item.as_ref().unwrap_or(&Value::Null));
                        h.update(b",");
                    }
                } else {
                    feed(&mut h, &o[k]);
                }
                h.update(b",");
            }
        }
        None => feed(&mut h, doc),
    }
    hex::encode(h.finalize())
}

/// Feeds `v` to `h` as canonical JSON (object keys sorted).
fn feed(h: &mut Sha256, v: &Value) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                feed_str(h, k);
                h.update(b":");
                feed(h, &o[k]);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(a) => {
            h.update(b"[");
            for x in a {
                feed(h, x);
                h.update(b",");
            }
            h.update(b"]");
        }
        Value::String(s) => feed_str(h, s),
        other => h.update(other.to_string().as_bytes()),
    }
}

fn feed_str(h: &mut Sha256, s: &str) {
    h.update(Value::String(s.to_string()).to_string().as_bytes());
}

#[cfg(test)]
#[path = "enriched_tests.rs"]
mod tests;
