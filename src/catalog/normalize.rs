//! Turning one parsed spec (Swagger 2.0, OpenAPI 3.0 or 3.1) into `Api` + `Endpoint`s.
//!
//! Leniency is the rule: real specs have `"required": "false"` as a string, parameters
//! without `in`, numeric defaults as strings, and so on. Anything that cannot be understood
//! is dropped with a warning that names its JSON pointer; only a document that is not an
//! OpenAPI document at all (or has no operations) is rejected.

use super::compact;
use super::endpoint::*;
use super::problem::{push_pointer, Problem};
use super::resolve::{refs_stay_out_of_paths, DocId, Resolver};
use super::swagger2;
use serde_json::{json, Map, Value};
use std::path::Path;

/// Node budget for inlining one parameter schema.
const PARAM_BUDGET: usize = 300;
/// Node budget for inlining one request body schema.
const BODY_BUDGET: usize = 1500;
/// How many response property names to keep per endpoint.
const MAX_RESPONSE_FIELDS: usize = 64;

/// Which family a document belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Swagger2,
    OpenApi3,
}

/// A normalized spec, before tool names are assigned.
pub struct Normalized {
    pub api: Api,
    pub endpoints: Vec<Endpoint>,
    pub warnings: Vec<Problem>,
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

/// Normalizes one document. `id` is the API id the catalog gave it.
pub fn normalize(
    path: &Path,
    id: &str,
    mut root: Value,
    packed: bool,
) -> Result<Normalized, Problem> {
    let (fam, spec_version) = family(path, &root)?;
    // When nothing can point into `paths` (no `$ref` there, none to another file), the
    // path items are taken out of the document and each is dropped once its endpoints are
    // built: loading then peaks at the document or the endpoints, not at both together.
    // Items read packed (`compact::pack`) are parsed one at a time, here or, when a
    // reference may point into them, all at once.
    let mut owned_paths = None;
    if let Some(o) = root.as_object_mut() {
        match o.shift_remove("paths") {
            Some(Value::Object(paths)) => {
                let consumable = o.values().all(refs_stay_out_of_paths)
                    && paths.values().all(|item| {
                        if packed {
                            compact::packed_refs_stay_out_of_paths(item)
                        } else {
                            refs_stay_out_of_paths(item)
                        }
                    });
                if consumable {
                    owned_paths = Some(paths);
                } else {
                    let paths = if packed {
                        paths
                            .into_iter()
                            .map(|(route, item)| (route, compact::unpack(&item)))
                            .collect()
                    } else {
                        paths
                    };
                    o.insert("paths".into(), Value::Object(paths));
                }
            }
            Some(other) => {
                o.insert("paths".into(), other);
            }
            None => {}
        }
    }
    let mut res = Resolver::new(path, root);
    let root = res.root();
    let info = root.get("info");
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty())
    };
    let title = text(info.and_then(|i| i.get("title"))).unwrap_or_else(|| id.to_string());
    let api = Api {
        id: id.to_string(),
        title: title.clone(),
        version: info
            .and_then(|i| i.get("version"))
            .map(scalar_text)
            .unwrap_or_default(),
        description: text(info.and_then(|i| i.get("description"))),
        spec_version,
        source: path.to_path_buf(),
        servers: match fam {
            Family::OpenApi3 => servers3(root.get("servers")),
            Family::Swagger2 => swagger2::servers(&root),
        },
        config_index: None,
    };
    let schemes = security_schemes(&mut res, fam, &root);
    let global_security = root.get("security");

    let borrowed_paths = root.get("paths").and_then(Value::as_object);
    if owned_paths.is_none() && borrowed_paths.is_none() {
        return Err(Problem::error(
            path,
            Some("#/paths".into()),
            "no paths: the spec declares no operations",
        ));
    }
    let mut endpoints = Vec::new();
    let mut add_item = |res: &mut Resolver, route: &str, item: &Value| {
        let item_ptr = push_pointer("#/paths", route);
        if route.starts_with("x-") {
            return;
        }
        let (item_doc, item) = match res.deref(0, item) {
            Ok(x) => x,
            Err(msg) => {
                res.warnings
                    .push(Problem::warning(path, Some(item_ptr), msg));
                return;
            }
        };
        let Some(item_map) = item.as_object() else {
            res.warnings.push(Problem::warning(
                path,
                Some(item_ptr),
                "path item is not an object; skipped",
            ));
            return;
        };
        let path_servers = item_map
            .get("servers")
            .map(|s| servers3(Some(s)))
            .unwrap_or_default();
        for method in Method::ALL {
            let Some(op) = item_map.get(method.key()) else {
                continue;
            };
            let op_ptr = push_pointer(&item_ptr, method.key());
            let Some(op_map) = op.as_object() else {
                res.warnings.push(Problem::warning(
                    path,
                    Some(op_ptr),
                    "operation is not an object; skipped",
                ));
                continue;
            };
            let ctx = OpCtx {
                fam,
                item_doc,
                item: item_map,
                op: op_map,
                ptr: &op_ptr,
                root: &root,
            };
            let mut ep = build_endpoint(res, &ctx, &api, route, method);
            let sec = op_map.get("security").or(global_security);
            ep.security = security_requirements(sec, &schemes);
            ep.servers = match op_map.get("servers") {
                Some(s) if fam == Family::OpenApi3 => servers3(Some(s)),
                _ if !path_servers.is_empty() => path_servers.clone(),
                _ => api.servers.clone(),
            };
            endpoints.push(ep);
        }
    };
    match owned_paths {
        Some(paths) => {
            for (route, item) in paths {
                let item = if packed { compact::unpack(&item) } else { item };
                add_item(&mut res, &route, &item);
            }
        }
        None => {
            for (route, item) in borrowed_paths.into_iter().flatten() {
                add_item(&mut res, route, item);
            }
        }
    }
    if endpoints.is_empty() {
        return Err(Problem::error(
            path,
            Some("#/paths".into()),
            "no operations: 'paths' holds no GET/POST/... operation",
        ));
    }
    Ok(Normalized {
        api,
        endpoints,
        warnings: std::mem::take(&mut res.warnings),
    })
}

/// What building one endpoint needs to see.
pub struct OpCtx<'a> {
    pub fam: Family,
    pub item_doc: DocId,
    pub item: &'a Map<String, Value>,
    pub op: &'a Map<String, Value>,
    pub ptr: &'a str,
    pub root: &'a Value,
}

fn build_endpoint(
    res: &mut Resolver,
    ctx: &OpCtx,
    api: &Api,
    route: &str,
    method: Method,
) -> Endpoint {
    let op = ctx.op;
    let s = |k: &str| {
        op.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty())
    };
    let (parameters, body) = collect_parameters(res, ctx, route);
    let op_id = op.get("operationId").and_then(Value::as_str).unwrap_or("");
    let (description, description_provenance) =
        pick_description(op, s("description"), &[op_id, route]);
    let request_body = match ctx.fam {
        Family::OpenApi3 => op
            .get("requestBody")
            .and_then(|rb| request_body3(res, ctx, rb)),
        Family::Swagger2 => body,
    };
    Endpoint {
        api: api.id.clone(),
        api_title: api.title.clone(),
        tool_name: String::new(),
        method,
        path: route.to_string(),
        operation_id: s("operationId"),
        summary: s("summary"),
        description,
        tags: op
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        deprecated: truthy(op.get("deprecated")),
        parameters,
        request_body,
        response_fields: response_fields(res, ctx),
        security: Vec::new(),
        servers: Vec::new(),
        generated_summary: op
            .get("x-shortlist-summary")
            .and_then(Value::as_str)
            .map(str::to_string),
        generated_questions: op
            .get("x-shortlist-questions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        description_provenance,
    }
}

/// The description to show and, when it was generated, its provenance.
///
/// The enricher fills an empty `description` in place (with a marker) and writes an
/// alternative to a human text beside it, in `x-shortlist-description`. The alternative is
/// shown only when the human text is weak (`catalog::weak`): human text wins otherwise.
pub fn pick_description(
    obj: &Map<String, Value>,
    human: Option<String>,
    names: &[&str],
) -> (Option<String>, Option<Provenance>) {
    let marker = provenance(obj.get("x-shortlist-generated"), "description");
    let beside = obj
        .get("x-shortlist-description")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string);
    match (human, beside) {
        (Some(h), Some(g)) if super::weak::is_weak(&h, names) => (
            Some(g),
            marker.map(|p| Provenance {
                replaced: Some(h),
                ..p
            }),
        ),
        (Some(h), Some(_)) => (Some(h), None),
        (None, Some(g)) => (Some(g), marker),
        (Some(h), None) => (Some(h), marker),
        (None, None) => (None, None),
    }
}

/// Reads the provenance marker that the enricher writes: `x-shortlist-generated:
/// {description: {generator, template, date}, ...}`.
///
/// An entry whose retrieval check failed (`check: {"passed": false, ...}`) records a value
/// that was refused and not written: it is the provenance of nothing shown.
pub fn provenance(marker: Option<&Value>, field: &str) -> Option<Provenance> {
    let m = marker?.get(field)?;
    if m.pointer("/check/passed") == Some(&Value::Bool(false)) {
        return None;
    }
    Some(Provenance {
        replaced: None,
        generator: m.get("generator")?.as_str()?.to_string(),
        template: m
            .get("template")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        date: m
            .get("date")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// Merges path-level and operation-level parameters (operation wins on the same name and
/// location). For Swagger 2.0, `body`/`formData` parameters become the request body.
fn collect_parameters(
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

fn ctx_file(res: &Resolver) -> std::path::PathBuf {
    res.file(0).to_path_buf()
}

/// The media types we would rather send, best first.
fn media_rank(mt: &str) -> usize {
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

fn request_body3(res: &mut Resolver, ctx: &OpCtx, rb: &Value) -> Option<RequestBody> {
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

fn content_schema(
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

fn first_example(examples: Option<&Value>) -> Option<Value> {
    match examples? {
        Value::Object(m) => m.values().find_map(|e| e.get("value").cloned()),
        Value::Array(a) => a.first().cloned(),
        _ => None,
    }
}

/// Property names of the first success response, a few levels of properties deep (arrays
/// and compositions do not count as levels): what ids and fields this endpoint produces.
fn response_fields(res: &mut Resolver, ctx: &OpCtx) -> Vec<String> {
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

/// 3.x `servers`, with `{variables}` replaced by their defaults.
fn servers3(servers: Option<&Value>) -> Vec<String> {
    let Some(arr) = servers.and_then(Value::as_array) else {
        return Vec::new();
    };
    arr.iter()
        .filter_map(|s| {
            let mut url = s.get("url")?.as_str()?.to_string();
            if let Some(vars) = s.get("variables").and_then(Value::as_object) {
                for (k, v) in vars {
                    if let Some(d) = v.get("default") {
                        url = url.replace(&format!("{{{k}}}"), &scalar_text(d));
                    }
                }
            }
            Some(url)
        })
        .collect()
}

/// Security schemes by name: 3.x `components.securitySchemes` or 2.0 `securityDefinitions`.
fn security_schemes(res: &mut Resolver, fam: Family, root: &Value) -> Vec<(String, AuthScheme)> {
    let defs = match fam {
        Family::OpenApi3 => root.pointer("/components/securitySchemes"),
        Family::Swagger2 => root.get("securityDefinitions"),
    };
    let Some(defs) = defs.and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, def) in defs {
        let Ok((_, def)) = res.deref(0, def) else {
            continue;
        };
        let ty = def.get("type").and_then(Value::as_str).unwrap_or("");
        let scheme = match ty {
            "apiKey" => AuthScheme::ApiKey {
                name: def
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string(),
                location: def
                    .get("in")
                    .and_then(Value::as_str)
                    .and_then(ParamLocation::parse)
                    .unwrap_or(ParamLocation::Header),
            },
            "http" => match def
                .get("scheme")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                Some("basic") => AuthScheme::Basic,
                Some("bearer") => AuthScheme::Bearer,
                other => AuthScheme::Other {
                    description: format!("http {}", other.unwrap_or("?")),
                },
            },
            "basic" => AuthScheme::Basic,
            "oauth2" => AuthScheme::OAuth2 { scopes: Vec::new() },
            "openIdConnect" => AuthScheme::OpenIdConnect,
            other => AuthScheme::Other {
                description: other.to_string(),
            },
        };
        out.push((name.clone(), scheme));
    }
    out
}

fn security_requirements(
    sec: Option<&Value>,
    schemes: &[(String, AuthScheme)],
) -> Vec<SecurityRequirement> {
    let Some(arr) = sec.and_then(Value::as_array) else {
        return Vec::new();
    };
    arr.iter()
        .filter_map(Value::as_object)
        .filter(|req| !req.is_empty())
        .map(|req| SecurityRequirement {
            schemes: req
                .iter()
                .map(|(name, scopes)| {
                    let mut scheme = schemes
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, s)| s.clone())
                        .unwrap_or(AuthScheme::Other {
                            description: "undeclared scheme".into(),
                        });
                    if let AuthScheme::OAuth2 { scopes: s } = &mut scheme {
                        *s = scopes
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default();
                    }
                    (name.clone(), scheme)
                })
                .collect(),
        })
        .collect()
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
