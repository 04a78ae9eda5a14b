//! Tool argument names: which endpoint parameter (or the request body) each argument of
//! the MCP tool stands for.
//!
//! One flat namespace has to hold parameters from four locations plus the body, so names can
//! clash (a path `id` and a query `id`). The rule is deterministic and visible in the schema:
//!
//! - Arguments are ordered path, query, header, cookie, MCP tool argument (declaration
//!   order within each), then `body`. The first parameter to want a name gets it; a later one is renamed
//!   `<location>_<name>` (`query_id`), and a numeric suffix settles anything still taken.
//!   A path parameter therefore always keeps its own name.
//! - The body is always the single argument `body` (never flattened): the model sees exactly
//!   the body schema the API documents, and no body field can collide with a parameter. A
//!   parameter literally named `body` is renamed like any other clash.
//! - Names are made safe for strict clients, whose property names must match
//!   `^[a-zA-Z0-9_.-]{1,64}$` (`filter[status]` becomes `filter_status_`).
//!
//! Some parameters are not arguments at all: credentials (a parameter matching one of the
//! endpoint's API-key security schemes is filled from the catalog config, never by the
//! model) and headers that HTTP or OpenAPI reserve (`Accept`, `Content-Type`,
//! `Authorization` are ignored by OpenAPI; `Host` and the framing headers would let a value
//! redirect or corrupt the request).

use crate::catalog::{AuthScheme, Endpoint, ParamLocation, Parameter};
use std::collections::HashSet;

/// The argument name that carries the request body.
pub const BODY_ARG: &str = "body";

/// Longest property name strict clients accept.
const MAX_NAME: usize = 64;

/// Header parameters that never become arguments.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "cookie",
    // Hop-by-hop and proxy headers: a spec must not choose the identity a configured
    // proxy sees, nor how the connection is kept.
    "proxy-authorization",
    "proxy-connection",
    "te",
    "upgrade",
];

/// What an argument fills in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgTarget {
    /// `Endpoint::parameters[i]`.
    Param(usize),
    /// The request body.
    Body,
}

/// One tool argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgSpec {
    /// The property name in the tool's `inputSchema`.
    pub name: String,
    pub target: ArgTarget,
}

/// The endpoint's tool arguments, in schema order, with the name mapping described above.
pub fn arguments(ep: &Endpoint) -> Vec<ArgSpec> {
    let exposed = exposed_params(ep);
    // Every plain name that some parameter wants is reserved up front, so a generated
    // `query_id` never steals the name of a parameter declared as `query_id`.
    let mut reserved: HashSet<String> = exposed
        .iter()
        .map(|&i| safe_name(&ep.parameters[i].name))
        .collect();
    if ep.request_body.is_some() {
        reserved.insert(BODY_ARG.to_string());
    }
    let mut taken: HashSet<String> = HashSet::new();
    if ep.request_body.is_some() {
        taken.insert(BODY_ARG.to_string());
    }
    let mut out = Vec::with_capacity(exposed.len() + 1);
    for i in exposed {
        let p = &ep.parameters[i];
        let plain = safe_name(&p.name);
        let name = if taken.contains(&plain) {
            let prefixed = safe_name(&format!("{}_{}", p.location.as_str(), p.name));
            unique(prefixed, |n| taken.contains(n) || reserved.contains(n))
        } else {
            plain
        };
        taken.insert(name.clone());
        out.push(ArgSpec {
            name,
            target: ArgTarget::Param(i),
        });
    }
    if ep.request_body.is_some() {
        out.push(ArgSpec {
            name: BODY_ARG.to_string(),
            target: ArgTarget::Body,
        });
    }
    out
}

/// Indexes of the parameters that become arguments, in location order.
fn exposed_params(ep: &Endpoint) -> Vec<usize> {
    let mut seen: HashSet<(ParamLocation, String)> = HashSet::new();
    let mut out = Vec::new();
    for loc in [
        ParamLocation::Path,
        ParamLocation::Query,
        ParamLocation::Header,
        ParamLocation::Cookie,
        ParamLocation::Argument,
    ] {
        for (i, p) in ep.parameters.iter().enumerate() {
            if p.location != loc || is_credential(ep, p) || is_reserved_header(p) {
                continue;
            }
            let key = if loc == ParamLocation::Header {
                p.name.to_ascii_lowercase()
            } else {
                p.name.clone()
            };
            if seen.insert((loc, key)) {
                out.push(i);
            }
        }
    }
    out
}

/// A parameter the spec also declares as an API-key security scheme: a secret that the
/// catalog config supplies.
fn is_credential(ep: &Endpoint, p: &Parameter) -> bool {
    ep.security
        .iter()
        .flat_map(|r| &r.schemes)
        .any(|(_, s)| match s {
            AuthScheme::ApiKey { name, location } => {
                *location == p.location
                    && if p.location == ParamLocation::Header {
                        name.eq_ignore_ascii_case(&p.name)
                    } else {
                        *name == p.name
                    }
            }
            _ => false,
        })
}

fn is_reserved_header(p: &Parameter) -> bool {
    p.location == ParamLocation::Header
        && RESERVED_HEADERS
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&p.name))
}

/// `name` with every character outside `[A-Za-z0-9_.-]` replaced by `_`, at most 64 chars.
fn safe_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    if s.is_empty() {
        "param".to_string()
    } else {
        s
    }
}

/// `base`, or `base_2`, `base_3`, ... whichever is first free.
fn unique(base: String, is_taken: impl Fn(&str) -> bool) -> String {
    if !is_taken(&base) {
        return base;
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let keep = MAX_NAME.saturating_sub(suffix.len());
            format!("{}{suffix}", &base[..base.len().min(keep)])
        })
        .find(|n| !is_taken(n))
        .unwrap_or(base)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::catalog::{Method, RequestBody, SecurityRequirement};
    use serde_json::json;

    pub(crate) fn param(
        name: &str,
        location: ParamLocation,
        schema: serde_json::Value,
    ) -> Parameter {
        Parameter {
            name: name.into(),
            location,
            required: location == ParamLocation::Path,
            description: None,
            schema,
            style: None,
            explode: None,
            example: None,
            deprecated: false,
            description_provenance: None,
            example_provenance: None,
        }
    }

    pub(crate) fn endpoint(method: Method, path: &str, parameters: Vec<Parameter>) -> Endpoint {
        Endpoint {
            api: "t".into(),
            api_title: "T".into(),
            tool_name: "t_op".into(),
            method,
            path: path.into(),
            operation_id: None,
            summary: None,
            description: None,
            tags: vec![],
            deprecated: false,
            parameters,
            request_body: None,
            response_fields: vec![],
            security: vec![],
            servers: vec!["https://api.example.com/v1".into()],
            generated_summary: None,
            generated_questions: vec![],
            description_provenance: None,
            mcp: None,
        }
    }

    fn names(ep: &Endpoint) -> Vec<String> {
        arguments(ep).into_iter().map(|a| a.name).collect()
    }

    #[test]
    fn clashes_keep_path_name_and_prefix_others() {
        let s = json!({"type": "string"});
        let mut ep = endpoint(
            Method::Post,
            "/items/{id}",
            vec![
                param("id", ParamLocation::Query, s.clone()),
                param("id", ParamLocation::Path, s.clone()),
                param("body", ParamLocation::Query, s.clone()),
                param("query_id", ParamLocation::Header, s.clone()),
            ],
        );
        ep.request_body = Some(RequestBody {
            content_type: "application/json".into(),
            required: true,
            description: None,
            schema: json!({"type": "object"}),
        });
        // `query_id` is reserved by the header parameter of that name, so the renamed
        // query `id` takes a suffix instead.
        assert_eq!(
            names(&ep),
            ["id", "query_id_2", "query_body", "query_id", "body"]
        );
    }

    #[test]
    fn credentials_and_reserved_headers_are_not_arguments() {
        let s = json!({"type": "string"});
        let mut ep = endpoint(
            Method::Get,
            "/x",
            vec![
                param("api_key", ParamLocation::Query, s.clone()),
                param("Accept", ParamLocation::Header, s.clone()),
                param("Proxy-Authorization", ParamLocation::Header, s.clone()),
                param("page[size]", ParamLocation::Query, s.clone()),
            ],
        );
        ep.security = vec![SecurityRequirement {
            schemes: vec![(
                "k".into(),
                AuthScheme::ApiKey {
                    name: "api_key".into(),
                    location: ParamLocation::Query,
                },
            )],
        }];
        assert_eq!(names(&ep), ["page_size_"]);
    }
}
