//! MCP tool annotations derived from the HTTP method.
//!
//! They are hints for the client's confirmation UI, so they follow HTTP semantics
//! (RFC 9110 §9.2) rather than guessing from names: a GET cannot change anything, a DELETE
//! removes something, and a repeated PUT or DELETE has the effect of one. Every tool talks
//! to a real external API, hence `open_world_hint` is always true.
//!
//! PUT counts as destructive as well as DELETE: it replaces the whole resource, and MCP
//! defines `destructiveHint` as "may perform destructive updates", which a replacement is.

use crate::catalog::{Endpoint, Method};

/// The MCP `ToolAnnotations` hints, as plain data (the server maps them to rmcp types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// The tool does not modify its environment (GET, HEAD, OPTIONS).
    pub read_only_hint: bool,
    /// The tool may destroy or overwrite data (DELETE, PUT).
    pub destructive_hint: bool,
    /// Calling it twice with the same arguments has no extra effect (safe methods, PUT,
    /// DELETE).
    pub idempotent_hint: bool,
    /// The tool reaches outside the server (always: it calls a remote API).
    pub open_world_hint: bool,
}

/// The annotations for an endpoint with this method.
pub fn annotations(method: Method) -> ToolAnnotations {
    let read_only = matches!(method, Method::Get | Method::Head | Method::Options);
    ToolAnnotations {
        read_only_hint: read_only,
        destructive_hint: matches!(method, Method::Delete | Method::Put),
        idempotent_hint: method.is_idempotent(),
        open_world_hint: true,
    }
}

/// The annotations of an endpoint: from its method, or for an MCP server's tool from the
/// hints its server wrote (with MCP's defaults where it wrote none), read-only as the
/// catalog decided (the server's hint, or the operator's `read_only_tools`).
pub fn of_endpoint(ep: &Endpoint) -> ToolAnnotations {
    let Some(tool) = &ep.mcp else {
        return annotations(ep.method);
    };
    let hint = |key: &str, default: bool| {
        tool.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(default)
    };
    let read_only = ep.method.is_safe();
    ToolAnnotations {
        read_only_hint: read_only,
        destructive_hint: !read_only && hint("destructiveHint", true),
        idempotent_hint: read_only || hint("idempotentHint", false),
        open_world_hint: hint("openWorldHint", true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_http_semantics() {
        let get = annotations(Method::Get);
        assert!(
            get.read_only_hint
                && get.idempotent_hint
                && !get.destructive_hint
                && get.open_world_hint
        );
        let del = annotations(Method::Delete);
        assert!(!del.read_only_hint && del.destructive_hint && del.idempotent_hint);
        let post = annotations(Method::Post);
        assert!(!post.read_only_hint && !post.destructive_hint && !post.idempotent_hint);
        assert!(annotations(Method::Put).idempotent_hint);
    }
}
