//! Tool names: unique, stable, and within what every MCP client accepts
//! (`^[a-zA-Z0-9_-]{1,64}$`).
//!
//! Stable means a name depends only on the catalog's content, never on load order or on
//! what was indexed before, so a client that remembers a tool name can still call it.

use super::endpoint::Endpoint;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The longest name clients accept.
pub const MAX_LEN: usize = 64;

/// Names the server's own tools take (`find_tools`, `describe_tool`, `call_tool`). An
/// endpoint whose operationId is one of them gets a suffix instead: two tools of one name
/// would leave the endpoint uncallable, and some clients refuse a list with duplicates.
pub const RESERVED: &[&str] = &["find_tools", "describe_tool", "call_tool"];

/// Keeps `[A-Za-z0-9_-]`, maps everything else to `_`, collapses runs of `_`.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    out.trim_matches(['_', '-']).to_string()
}

/// The name an endpoint would get before collisions are considered: its operationId, or
/// the method and path words when it has none.
pub fn base_name(ep: &Endpoint) -> String {
    let from_op = ep
        .operation_id
        .as_deref()
        .map(sanitize)
        .filter(|s| !s.is_empty());
    from_op.unwrap_or_else(|| {
        let path = sanitize(&ep.path.replace(['{', '}'], ""));
        let path = if path.is_empty() {
            "root".to_string()
        } else {
            path
        };
        format!("{}_{}", ep.method.key(), path)
    })
}

/// Shortens a name to `max` characters, keeping it unique with a hash of the full name.
fn fit(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let hash = hex::encode(&Sha256::digest(name.as_bytes())[..3]);
    let keep = max - hash.len() - 1;
    format!("{}_{}", name[..keep].trim_end_matches(['_', '-']), hash)
}

/// Assigns `tool_name` to every endpoint. With several APIs each name is prefixed by its
/// API id. Endpoints must already be in a deterministic order (by api, path, method);
/// duplicates get `_2`, `_3`, ... in that order.
pub fn assign(endpoints: &mut [Endpoint], prefix_with_api: bool) {
    let mut used: HashMap<String, usize> = RESERVED.iter().map(|r| (r.to_string(), 1)).collect();
    for ep in endpoints.iter_mut() {
        let base = base_name(ep);
        // An MCP server's tools always carry its id, so adding or removing another server
        // renames none of them.
        let full = if prefix_with_api || ep.mcp.is_some() {
            let api = sanitize(&ep.api);
            let api = if api.len() > 24 { fit(&api, 24) } else { api };
            format!("{api}__{base}")
        } else {
            base
        };
        let mut name = fit(&full, MAX_LEN);
        let mut n = 1;
        while used.contains_key(&name.to_ascii_lowercase()) {
            n += 1;
            let suffix = format!("_{n}");
            name = format!("{}{suffix}", fit(&full, MAX_LEN - suffix.len()));
        }
        used.insert(name.to_ascii_lowercase(), 1);
        ep.tool_name = name;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_and_fits() {
        assert_eq!(sanitize("get /users/{id}"), "get_users_id");
        assert_eq!(sanitize("endpoint-get-an-album"), "endpoint-get-an-album");
        let long = "a".repeat(100);
        let f = fit(&long, 64);
        assert_eq!(f.len(), 64);
        assert_ne!(fit(&format!("{long}b"), 64), f);
    }

    #[test]
    fn never_takes_the_servers_own_tool_names() {
        use crate::catalog::Method;
        let mut eps: Vec<Endpoint> = ["find_tools", "Call_Tool", "describe_tool"]
            .iter()
            .map(|op| {
                let mut e = crate::invoke::args::tests::endpoint(Method::Get, "/x", vec![]);
                e.operation_id = Some(op.to_string());
                e
            })
            .collect();
        assign(&mut eps, false);
        let names: Vec<&str> = eps.iter().map(|e| e.tool_name.as_str()).collect();
        assert_eq!(names, ["find_tools_2", "Call_Tool_2", "describe_tool_2"]);
    }
}
