//! Turning one parsed spec (Swagger 2.0, OpenAPI 3.0 or 3.1) into `Api` + `Endpoint`s.
//!
//! Leniency is the rule: real specs have `"required": "false"` as a string, parameters
//! without `in`, numeric defaults as strings, and so on. Anything that cannot be understood
//! is dropped with a warning that names its JSON pointer; only a document that is not an
//! OpenAPI document at all (or has no operations) is rejected.
//!
//! An endpoint is assembled here from its parts, each read by a module of its own:
//! [`super::parameters`] (Swagger 2.0's through [`super::swagger2`]), [`super::bodies`],
//! [`super::responses`], [`super::security`] and [`super::describe`] (which description
//! is shown), all seeing the operation through [`super::operation::OpCtx`].

use super::bodies::request_body3;
use super::compact;
use super::describe::pick_description;
use super::endpoint::*;
use super::operation::{scalar_text, truthy, OpCtx};
use super::parameters::collect_parameters;
use super::problem::{push_pointer, Problem};
use super::resolve::{refs_stay_out_of_paths, Resolver};
use super::responses::response_fields;
use super::security::{security_requirements, security_schemes};
use super::swagger2;
use serde_json::Value;
use std::path::Path;

use super::family::{family, Family};

/// A normalized spec, before tool names are assigned.
pub struct Normalized {
    pub api: Api,
    pub endpoints: Vec<Endpoint>,
    pub warnings: Vec<Problem>,
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
        mcp: None,
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
