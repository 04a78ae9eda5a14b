//! What an operation produces: the property names of its first success response.

use super::bodies::media_rank;
use super::family::Family;
use super::operation::OpCtx;
use super::resolve::{DocId, Resolver};
use serde_json::Value;

/// How many response property names to keep per endpoint.
const MAX_RESPONSE_FIELDS: usize = 64;

/// Property names of the first success response, a few levels of properties deep (arrays
/// and compositions do not count as levels): what ids and fields this endpoint produces.
pub fn response_fields(res: &mut Resolver, ctx: &OpCtx) -> Vec<String> {
    let Some(responses) = ctx.op.get("responses").and_then(Value::as_object) else {
        return Vec::new();
    };
    let pick = responses
        .iter()
        .filter(|(code, _)| code.starts_with('2'))
        .min_by_key(|(code, _)| code.to_string())
        .or_else(|| {
            responses
                .iter()
                .find(|(code, _)| code.as_str() == "default")
        });
    let Some((_, resp)) = pick else {
        return Vec::new();
    };
    let Ok((doc, resp)) = res.deref(ctx.item_doc, resp) else {
        return Vec::new();
    };
    let schema = match ctx.fam {
        Family::Swagger2 => resp.get("schema").cloned(),
        Family::OpenApi3 => resp
            .get("content")
            .and_then(Value::as_object)
            .and_then(|c| c.iter().min_by_key(|(k, _)| media_rank(k)))
            .and_then(|(_, m)| m.get("schema").cloned()),
    };
    let mut out = Vec::new();
    if let Some(s) = schema {
        collect_fields(res, doc, &s, 0, &mut out, &mut 0);
    }
    out
}

fn collect_fields(
    res: &mut Resolver,
    doc: DocId,
    schema: &Value,
    depth: usize,
    out: &mut Vec<String>,
    visited: &mut usize,
) {
    *visited += 1;
    if depth > 3 || out.len() >= MAX_RESPONSE_FIELDS || *visited > 400 {
        return;
    }
    let Ok((doc, s)) = res.deref(doc, schema) else {
        return;
    };
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (name, sub) in props {
            if !out.contains(name) && out.len() < MAX_RESPONSE_FIELDS {
                out.push(name.clone());
            }
            collect_fields(res, doc, sub, depth + 1, out, visited);
        }
    }
    if let Some(items) = s.get("items") {
        collect_fields(res, doc, items, depth, out, visited);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(parts) = s.get(k).and_then(Value::as_array) {
            for p in parts.iter().take(8) {
                collect_fields(res, doc, p, depth, out, visited);
            }
        }
    }
}
