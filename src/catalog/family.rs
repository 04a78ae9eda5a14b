//! Which family an OpenAPI document belongs to: Swagger 2.0 or OpenAPI 3.x, from its
//! `swagger` / `openapi` field.

use super::problem::Problem;
use serde_json::Value;
use std::path::Path;

/// Which family a document belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Swagger2,
    OpenApi3,
}

/// Detects the spec family from `swagger` / `openapi`.
pub fn family(path: &Path, root: &Value) -> Result<(Family, String), Problem> {
    if !root.is_object() {
        return Err(Problem::error(
            path,
            Some("#".into()),
            "not an OpenAPI document: the top level is not an object",
        ));
    }
    let as_text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    if let Some(v) = root.get("swagger").and_then(as_text) {
        return if v.starts_with('2') {
            Ok((Family::Swagger2, v))
        } else {
            Err(Problem::error(
                path,
                Some("#/swagger".into()),
                format!("unsupported Swagger version '{v}' (supported: 2.0, OpenAPI 3.0, 3.1)"),
            ))
        };
    }
    if let Some(v) = root.get("openapi").and_then(as_text) {
        return if v.starts_with("3.0") || v.starts_with("3.1") || v == "3" {
            Ok((Family::OpenApi3, v))
        } else {
            Err(Problem::error(
                path,
                Some("#/openapi".into()),
                format!("unsupported OpenAPI version '{v}' (supported: 2.0, 3.0, 3.1)"),
            ))
        };
    }
    Err(Problem::error(
        path,
        Some("#".into()),
        "not an OpenAPI document: no 'openapi' or 'swagger' field",
    ))
}
