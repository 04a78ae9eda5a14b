//! OpenAPI 3 request bodies: the media type to send (JSON first), its schema and example.

use super::endpoint::*;
use super::operation::{ctx_file, truthy, OpCtx, BODY_BUDGET, PARAM_BUDGET};
use super::problem::Problem;
use super::resolve::{DocId, Resolver};
use serde_json::{json, Value};

/// The media types we would rather send, best first.
pub fn media_rank(mt: &str) -> usize {
    let mt = mt.to_ascii_lowercase();
    if mt == "application/json" {
        0
    } else if mt.ends_with("+json") || mt.contains("json") {
        1
    } else if mt == "application/x-www-form-urlencoded" {
        2
    } else if mt == "multipart/form-data" {
        3
    } else {
        4
    }
}

pub fn request_body3(res: &mut Resolver, ctx: &OpCtx, rb: &Value) -> Option<RequestBody> {
    let ptr = format!("{}/requestBody", ctx.ptr);
    let (doc, rb) = match res.deref(ctx.item_doc, rb) {
        Ok(x) => x,
        Err(msg) => {
            res.warnings
                .push(Problem::warning(&ctx_file(res), Some(ptr), msg));
            return None;
        }
    };
    let content = rb.get("content").and_then(Value::as_object)?;
    let (mt, media) = content.iter().min_by_key(|(k, _)| media_rank(k))?;
    let schema = match media.get("schema") {
        Some(s) => res.inline_schema(
            doc,
            s,
            &format!("{ptr}/content/{}/schema", mt.replace('/', "~1")),
            BODY_BUDGET,
        ),
        None => json!({}),
    };
    Some(RequestBody {
        content_type: mt.clone(),
        required: truthy(rb.get("required")),
        description: rb
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        schema,
    })
}

pub fn content_schema(
    res: &mut Resolver,
    doc: DocId,
    content: Option<&Value>,
    ptr: &str,
) -> Option<Value> {
    let (mt, media) = content?
        .as_object()?
        .iter()
        .min_by_key(|(k, _)| media_rank(k))?;
    let s = media.get("schema")?;
    Some(res.inline_schema(
        doc,
        s,
        &format!("{ptr}/content/{}/schema", mt.replace('/', "~1")),
        PARAM_BUDGET,
    ))
}

pub fn first_example(examples: Option<&Value>) -> Option<Value> {
    match examples? {
        Value::Object(m) => m.values().find_map(|e| e.get("value").cloned()),
        Value::Array(a) => a.first().cloned(),
        _ => None,
    }
}
