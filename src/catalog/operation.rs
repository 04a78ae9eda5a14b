//! What building one endpoint of a spec sees (the operation, its path item, where it is),
//! and the lenient readings of values every part of normalisation shares.

use super::family::Family;
use super::resolve::{DocId, Resolver};
use serde_json::{Map, Value};

/// Node budget for inlining one parameter schema.
pub const PARAM_BUDGET: usize = 300;
/// Node budget for inlining one request body schema.
pub const BODY_BUDGET: usize = 1500;

/// What building one endpoint needs to see.
pub struct OpCtx<'a> {
    pub fam: Family,
    pub item_doc: DocId,
    pub item: &'a Map<String, Value>,
    pub op: &'a Map<String, Value>,
    pub ptr: &'a str,
    pub root: &'a Value,
}

/// The spec file a resolver reads (for the problems it reports).
pub fn ctx_file(res: &Resolver) -> std::path::PathBuf {
    res.file(0).to_path_buf()
}

/// Leniently reads a boolean: `true`, `"true"`, `"yes"` (real specs write all three).
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.to_ascii_lowercase().as_str(), "true" | "yes" | "1"),
        Some(Value::Number(n)) => n.as_i64() == Some(1),
        _ => false,
    }
}

/// A scalar as text (`1.0` stays `1.0`, strings unquoted).
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
