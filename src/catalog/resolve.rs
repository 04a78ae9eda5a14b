//! `$ref` resolution: local pointers (`#/components/...`, `#/definitions/...`, ...) and refs
//! into sibling files, with cycles and exponential expansion both bounded.
//!
//! Schemas are inlined because every later stage wants a self-contained `Endpoint`: the
//! MCP tool's `inputSchema` cannot point back into the spec. Inlining is bounded twice: a
//! reference already being expanded (a recursive schema) becomes a short placeholder, and a
//! node budget per schema stops DAG-shaped specs (Stripe, Azure) from multiplying out.

use super::problem::{push_pointer, Problem};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Index of a loaded document inside the resolver; 0 is the spec itself.
pub type DocId = usize;

/// How many `$ref` hops a single lookup may follow (a ref to a ref to ...).
const MAX_HOPS: usize = 32;
/// How deep inlined schemas may nest.
const MAX_DEPTH: usize = 24;

/// Resolves references of one spec and of the sibling files it points to.
pub struct Resolver {
    docs: Vec<(PathBuf, Rc<Value>)>,
    by_path: HashMap<PathBuf, DocId>,
    /// Folder that sibling refs must stay inside.
    base_dir: PathBuf,
    pub warnings: Vec<Problem>,
}

/// What a successful lookup found.
pub struct Target {
    pub doc: DocId,
    pub pointer: String,
    pub value: Value,
}

impl Resolver {
    pub fn new(path: &Path, root: Value) -> Resolver {
        let base_dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let base_dir = base_dir.canonicalize().unwrap_or(base_dir);
        let mut by_path = HashMap::new();
        by_path.insert(path.to_path_buf(), 0);
        Resolver {
            docs: vec![(path.to_path_buf(), Rc::new(root))],
            by_path,
            base_dir,
            warnings: Vec::new(),
        }
    }

    /// The spec document itself.
    pub fn root(&self) -> Rc<Value> {
        self.docs[0].1.clone()
    }

    /// The file a document came from.
    pub fn file(&self, doc: DocId) -> &Path {
        &self.docs[doc].0
    }

    /// Resolves one `$ref` string found in document `doc`.
    pub fn lookup(&mut self, doc: DocId, reference: &str) -> Result<Target, String> {
        let (doc, pointer, root) = self.locate(doc, reference)?;
        let value = at(&root, &pointer).cloned().unwrap_or_default();
        Ok(Target {
            doc,
            pointer,
            value,
        })
    }

    /// Where a `$ref` points, without copying the target: its document, its pointer
    /// (`#/a/b`) and that document's root, which [`at`] reads the target from. Inlining
    /// meets the same few big targets thousands of times; a copy per meeting cost
    /// minutes on specs of a few hundred KB.
    fn locate(
        &mut self,
        doc: DocId,
        reference: &str,
    ) -> Result<(DocId, String, Rc<Value>), String> {
        let (file_part, fragment) = match reference.split_once('#') {
            Some((f, frag)) => (f, frag),
            None => (reference, ""),
        };
        let target_doc = if file_part.is_empty() {
            doc
        } else {
            self.load_sibling(doc, file_part)?
        };
        let pointer = format!("#{}", decode_fragment(fragment));
        let root = self.docs[target_doc].1.clone();
        if at(&root, &pointer).is_none() {
            return Err(format!("dangling $ref '{reference}': no such location"));
        }
        Ok((target_doc, pointer, root))
    }

    /// Follows a chain of `$ref`s starting at `value` until a non-reference is reached.
    /// Sibling keys next to a `$ref` (3.1 allows `description` there) are kept on top.
    pub fn deref(&mut self, doc: DocId, value: &Value) -> Result<(DocId, Value), String> {
        let mut doc = doc;
        let mut cur = value.clone();
        let mut seen: Vec<(DocId, String)> = Vec::new();
        for _ in 0..MAX_HOPS {
            let Some(r) = ref_of(&cur) else {
                return Ok((doc, cur));
            };
            let r = r.to_string();
            let t = self.lookup(doc, &r)?;
            if seen.contains(&(t.doc, t.pointer.clone())) {
                return Err(format!("$ref cycle through '{r}'"));
            }
            seen.push((t.doc, t.pointer.clone()));
            let mut next = t.value;
            merge_siblings(&mut next, &cur);
            doc = t.doc;
            cur = next;
        }
        Err(format!("more than {MAX_HOPS} chained $refs"))
    }

    /// Inlines every `$ref` inside a schema, within a node budget. `pointer` is where the
    /// schema sits, for warnings.
    pub fn inline_schema(
        &mut self,
        doc: DocId,
        schema: &Value,
        pointer: &str,
        budget: usize,
    ) -> Value {
        let mut ctx = InlineCtx {
            stack: Vec::new(),
            budget,
        };
        self.inline(doc, schema, pointer, &mut ctx, 0)
    }

    fn inline(
        &mut self,
        doc: DocId,
        v: &Value,
        pointer: &str,
        ctx: &mut InlineCtx,
        depth: usize,
    ) -> Value {
        if ctx.budget == 0 || depth > MAX_DEPTH {
            return json!({ "description": "(schema truncated: too large to inline)" });
        }
        ctx.budget -= 1;
        match v {
            Value::Object(m) => {
                if let Some(r) = ref_of(v) {
                    let r = r.to_string();
                    return match self.locate(doc, &r) {
                        Ok((t_doc, t_pointer, root)) => {
                            let target = at(&root, &t_pointer).unwrap_or(&Value::Null);
                            let key = (t_doc, t_pointer);
                            if ctx.stack.contains(&key) {
                                let name = key.1.rsplit('/').next().unwrap_or("").to_string();
                                let mut out =
                                    json!({ "description": format!("(recursive: {name})") });
                                if let Some(ty) = target.get("type") {
                                    out["type"] = ty.clone();
                                }
                                return out;
                            }
                            ctx.stack.push(key.clone());
                            let mut out = self.inline(t_doc, target, &key.1, ctx, depth + 1);
                            ctx.stack.pop();
                            self.inline_siblings(doc, m, pointer, ctx, depth, &mut out);
                            out
                        }
                        Err(msg) => {
                            let file = self.docs[doc].0.clone();
                            self.warnings.push(Problem::warning(
                                &file,
                                Some(pointer.to_string()),
                                msg,
                            ));
                            let mut out = Value::Object(Map::new());
                            self.inline_siblings(doc, m, pointer, ctx, depth, &mut out);
                            out
                        }
                    };
                }
                let mut out = Map::with_capacity(m.len());
                for (k, child) in m {
                    let child_ptr = push_pointer(pointer, k);
                    out.insert(
                        k.clone(),
                        self.inline(doc, child, &child_ptr, ctx, depth + 1),
                    );
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, c)| self.inline(doc, c, &format!("{pointer}/{i}"), ctx, depth + 1))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Puts the keys next to a `$ref` on top of what it resolved to (they win, as in
    /// [`merge_siblings`]), inlined like the rest of the schema: a `properties` or `items`
    /// beside a `$ref` may hold references of its own.
    fn inline_siblings(
        &mut self,
        doc: DocId,
        reference: &Map<String, Value>,
        pointer: &str,
        ctx: &mut InlineCtx,
        depth: usize,
        out: &mut Value,
    ) {
        let Some(out) = out.as_object_mut() else {
            return;
        };
        for (k, sibling) in reference {
            if k != "$ref" {
                let v = self.inline(doc, sibling, &push_pointer(pointer, k), ctx, depth + 1);
                out.insert(k.clone(), v);
            }
        }
    }

    fn load_sibling(&mut self, from: DocId, file_part: &str) -> Result<DocId, String> {
        if file_part.contains("://") {
            return Err(format!("remote $ref '{file_part}' is not followed"));
        }
        let from_dir = self.docs[from]
            .0
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let candidate = from_dir.join(file_part);
        let canonical = candidate.canonicalize().map_err(|e| {
            format!(
                "$ref to '{file_part}': cannot open {}: {e}",
                candidate.display()
            )
        })?;
        if !canonical.starts_with(&self.base_dir) {
            return Err(format!("$ref to '{file_part}' leaves the spec's folder"));
        }
        if let Some(&id) = self.by_path.get(&canonical) {
            return Ok(id);
        }
        let parsed = super::source::read_document(&canonical).map_err(|p| p.message)?;
        self.warnings.extend(parsed.warnings);
        let id = self.docs.len();
        self.docs.push((canonical.clone(), Rc::new(parsed.value)));
        self.by_path.insert(canonical, id);
        Ok(id)
    }
}

struct InlineCtx {
    stack: Vec<(DocId, String)>,
    budget: usize,
}

/// The value at `pointer` (`#/a/b`, or `#` for the whole document) in `root`.
fn at<'a>(root: &'a Value, pointer: &str) -> Option<&'a Value> {
    match pointer.strip_prefix('#').unwrap_or(pointer) {
        "" => Some(root),
        p => root.pointer(p),
    }
}

/// The `$ref` string of a reference object, if it is one.
/// Whether no `$ref` in `v` can lead into `#/paths`: every one is local (`#/...`) and
/// plainly names somewhere else (no `paths` in it, no escapes that could spell it), so
/// none can point back into the path items through another file either. When the whole
/// document passes, normalizing may consume the path items as it goes.
pub fn refs_stay_out_of_paths(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().all(|(k, v)| match (k.as_str(), v) {
            ("$ref", Value::String(r)) => {
                r.starts_with("#/") && !r.contains("paths") && !r.contains(['%', '\\'])
            }
            _ => refs_stay_out_of_paths(v),
        }),
        Value::Array(a) => a.iter().all(refs_stay_out_of_paths),
        _ => true,
    }
}

pub fn ref_of(v: &Value) -> Option<&str> {
    v.as_object()?.get("$ref")?.as_str()
}

/// Copies the keys that sit next to a `$ref` onto the resolved value (they win: a
/// `description` beside a ref describes this use of the referenced schema).
fn merge_siblings(resolved: &mut Value, reference: &Value) {
    let (Some(out), Some(src)) = (resolved.as_object_mut(), reference.as_object()) else {
        return;
    };
    for (k, v) in src {
        if k != "$ref" {
            out.insert(k.clone(), v.clone());
        }
    }
}

/// Turns a URI fragment into a JSON pointer: percent-decoding, and tolerating a missing
/// leading slash (`#components/schemas/X` is seen in the wild).
fn decode_fragment(fragment: &str) -> String {
    let decoded = percent_encoding::percent_decode_str(fragment)
        .decode_utf8_lossy()
        .into_owned();
    if decoded.is_empty() || decoded.starts_with('/') {
        decoded
    } else {
        format!("/{decoded}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(v: Value) -> Resolver {
        Resolver::new(Path::new("/nonexistent/spec.json"), v)
    }

    #[test]
    fn recursive_schema_stops() {
        let doc = json!({"components": {"schemas": {"Node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}}}}}});
        let mut r = resolver(doc);
        let out = r.inline_schema(
            0,
            &json!({"$ref": "#/components/schemas/Node"}),
            "#/x",
            1000,
        );
        let inner = &out["properties"]["children"]["items"];
        assert_eq!(inner["description"], "(recursive: Node)");
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn dangling_ref_warns_with_pointer() {
        let mut r = resolver(json!({}));
        let out = r.inline_schema(
            0,
            &json!({"$ref": "#/components/schemas/Missing", "description": "d"}),
            "#/paths/~1a",
            100,
        );
        assert_eq!(out, json!({"description": "d"}));
        assert_eq!(r.warnings.len(), 1);
        assert_eq!(r.warnings[0].pointer.as_deref(), Some("#/paths/~1a"));
        assert!(r.warnings[0].message.contains("Missing"));
    }

    #[test]
    fn ref_cycle_is_an_error_not_a_loop() {
        let doc = json!({"parameters": {"A": {"$ref": "#/parameters/B"}, "B": {"$ref": "#/parameters/A"}}});
        let mut r = resolver(doc);
        let err = r.deref(0, &json!({"$ref": "#/parameters/A"})).unwrap_err();
        assert!(err.contains("cycle"), "{err}");
    }

    #[test]
    fn budget_bounds_exponential_expansion() {
        // Each level references the next twice: 2^20 nodes if fully expanded.
        let mut schemas = Map::new();
        for i in 0..20 {
            schemas.insert(
                format!("S{i}"),
                json!({"type": "object", "properties": {
                "a": {"$ref": format!("#/definitions/S{}", i + 1)},
                "b": {"$ref": format!("#/definitions/S{}", i + 1)}}}),
            );
        }
        schemas.insert("S20".into(), json!({"type": "string"}));
        let mut r = resolver(json!({"definitions": schemas}));
        let out = r.inline_schema(0, &json!({"$ref": "#/definitions/S0"}), "#", 500);
        let size = serde_json::to_string(&out).unwrap().len();
        assert!(size < 100_000, "{size}");
    }
}
