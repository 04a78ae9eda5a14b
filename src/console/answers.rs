//! What the console's routes share: JSON error answers, query parameters, JSON bodies, and
//! how much one page or answer holds.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rmcp::model::JsonObject;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Review cards on one page, and items in one JSON answer: a catalog with thousands of
/// generated values is narrowed by API or tool, not scrolled.
pub const MAX_CARDS: usize = 200;
pub const MAX_ITEMS: usize = 1000;

/// An error answer: `{"error": msg}` with `status`.
pub fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(json!({"error": msg.into()}))).into_response()
}

/// A query parameter, trimmed; `None` when absent or blank.
pub fn param<'a>(q: &'a HashMap<String, String>, k: &str) -> Option<&'a str> {
    q.get(k).map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// A JSON object body, or the status and message for anything else.
pub fn json_body(headers: &HeaderMap, body: &[u8]) -> Result<JsonObject, (StatusCode, String)> {
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json_type {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the body as Content-Type: application/json".into(),
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err((
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object".into(),
        )),
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            format!("the body is not valid JSON: {e}"),
        )),
    }
}
