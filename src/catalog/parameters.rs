//! An operation's parameters: path-level and operation-level merged, each with its
//! location, schema, style, description and example; for Swagger 2.0, `body` and
//! `formData` parameters become the request body.

use super::bodies::{content_schema, first_example};
use super::describe::{pick_description, provenance};
use super::endpoint::*;
use super::family::Family;
use super::operation::{ctx_file, truthy, OpCtx, BODY_BUDGET, PARAM_BUDGET};
use super::problem::Problem;
use super::resolve::{DocId, Resolver};
use super::swagger2;
use serde_json::{json, Value};

/// Merges path-level and operation-level parameters (operation wins on the same name and
/// location). For Swagger 2.0, `body`/`formData` parameters become the request body.
pub fn collect_parameters(
    res: &mut Resolver,
    ctx: &OpCtx,
    route: &str,
) -> (Vec<Parameter>, Option<RequestBody>) {
    let mut raw: Vec<(DocId, String, Value)> = Vec::new();
    let item_ptr = ctx.ptr.rsplit_once('/').map(|(a, _)| a).unwrap_or(ctx.ptr);
    for (list, base) in [
        (ctx.item.get("parameters"), format!("{item_ptr}/parameters")),
        (ctx.op.get("parameters"), format!("{}/parameters", ctx.ptr)),
    ] {
        let doc = ctx.item_doc;
        let Some(arr) = list.and_then(Value::as_array) else {
            continue;
        };
        for (i, p) in arr.iter().enumerate() {
            let ptr = format!("{base}/{i}");
            match res.deref(doc, p) {
                Ok((d, v)) if v.is_object() => raw.push((d, ptr, v)),
                Ok(_) => res.warnings.push(Problem::warning(
                    &ctx_file(res),
                    Some(ptr),
                    "parameter is not an object; skipped",
                )),
                Err(msg) => res.warnings.push(Problem::warning(
                    &ctx_file(res),
                    Some(ptr),
                    format!("{msg}; parameter skipped"),
                )),
            }
        }
    }
    // Later (operation-level) declarations override earlier (path-level) ones.
    let mut merged: Vec<(DocId, String, Value)> = Vec::new();
    for entry in raw {
        let key = |v: &Value| {
            (
                v.get("name").and_then(Value::as_str).map(str::to_string),
                v.get("in").and_then(Value::as_str).map(str::to_string),
            )
        };
        if let Some(slot) = merged.iter_mut().find(|e| key(&e.2) == key(&entry.2)) {
            *slot = entry;
        } else {
            merged.push(entry);
        }
    }
    let mut params = Vec::new();
    let mut swagger_body = Vec::new();
    let op_id = ctx
        .op
        .get("operationId")
        .and_then(Value::as_str)
        .unwrap_or("");
    for (doc, ptr, p) in merged {
        let name = p.get("name").and_then(Value::as_str).map(str::to_string);
        let loc = p.get("in").and_then(Value::as_str).unwrap_or("");
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            res.warnings.push(Problem::warning(
                &ctx_file(res),
                Some(ptr),
                "parameter has no name; skipped",
            ));
            continue;
        };
        if ctx.fam == Family::Swagger2 && (loc == "body" || loc == "formData") {
            swagger_body.push((doc, ptr, p));
            continue;
        }
        let Some(location) = ParamLocation::parse(loc) else {
            res.warnings.push(Problem::warning(
                &ctx_file(res),
                Some(ptr),
                format!("parameter '{name}' has unknown location '{loc}'; skipped"),
            ));
            continue;
        };
        let schema = match ctx.fam {
            Family::OpenApi3 => match p.get("schema") {
                Some(s) => res.inline_schema(doc, s, &format!("{ptr}/schema"), PARAM_BUDGET),
                None => content_schema(res, doc, p.get("content"), &ptr)
                    .unwrap_or_else(|| json!({"type": "string"})),
            },
            Family::Swagger2 => swagger2::param_schema(&p),
        };
        let (style, explode) = match ctx.fam {
            Family::OpenApi3 => (
                p.get("style").and_then(Value::as_str).map(str::to_string),
                p.get("explode").and_then(Value::as_bool),
            ),
            Family::Swagger2 => swagger2::collection_style(&p),
        };
        // `x-example` is where Swagger 2.0 specs (and the enricher) put a non-body
        // parameter's example: 2.0 has no `example` field there.
        let example = p
            .get("example")
            .cloned()
            .or_else(|| first_example(p.get("examples")))
            .or_else(|| p.get("x-example").cloned())
            .or_else(|| schema.get("example").cloned());
        // Some specs (Spotify's) describe the parameter inside its schema only.
        let human = p
            .get("description")
            .or_else(|| schema.get("description"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty());
        let (description, description_provenance) = match p.as_object() {
            // An echo of the endpoint's words says no more than the name does.
            Some(obj) => pick_description(obj, human, &[&name, route, op_id]),
            None => (human, None),
        };
        params.push(Parameter {
            name,
            location,
            required: location == ParamLocation::Path || truthy(p.get("required")),
            description,
            schema,
            style,
            explode,
            example,
            deprecated: truthy(p.get("deprecated")),
            description_provenance,
            example_provenance: provenance(p.get("x-shortlist-generated"), "example"),
        });
    }
    // Path templates name parameters the spec sometimes forgets to declare; a call cannot
    // be made without them, so add them as required strings.
    for seg in route.split('{').skip(1) {
        if let Some(name) = seg.split('}').next() {
            if !name.is_empty()
                && !params
                    .iter()
                    .any(|p| p.location == ParamLocation::Path && p.name == name)
            {
                params.push(Parameter {
                    name: name.to_string(),
                    location: ParamLocation::Path,
                    required: true,
                    description: None,
                    schema: json!({"type": "string"}),
                    style: None,
                    explode: None,
                    example: None,
                    deprecated: false,
                    description_provenance: None,
                    example_provenance: None,
                });
            }
        }
    }
    let body = if swagger_body.is_empty() {
        None
    } else {
        swagger2::request_body(res, ctx, swagger_body, BODY_BUDGET)
    };
    // Most operations have a parameter or two; the room a growing vector leaves, a few
    // hundred bytes each, adds up on specs of tens of thousands of operations.
    params.shrink_to_fit();
    (params, body)
}
