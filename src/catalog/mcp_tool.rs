//! The part of an endpoint that only an MCP server's tool has: what a call to it needs.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a call to an MCP tool needs, carried by its endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct McpTool {
    /// The catalog entry's id (the endpoint's `api`).
    pub server: String,
    /// The tool's name on its server.
    pub name: String,
    /// `inputSchema`, as the server wrote it.
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `annotations`, as the server wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// [`definition_digest`](super::mcp_tools::definition_digest) of the tool as listed.
    pub digest: String,
}
