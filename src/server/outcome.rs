//! An API call's outcome as an MCP tool result.
//!
//! Every failure of the call itself (validation, upstream down, timeout, HTTP error status,
//! oversized body) is a tool-level error (`isError: true`) with readable text, never a
//! JSON-RPC error: clients show tool errors to the model, which can then fix its arguments
//! or try something else, whereas protocol errors are usually shown opaquely.

use crate::invoke::CallOutcome;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

/// Maps the invoker's outcome: the text as content, the parsed JSON body as structured
/// content. `invoke` already wraps a non-object body as `{"result": ...}` because MCP wants
/// `structuredContent` to be an object; the wrapping here only keeps that promise should
/// the invoker ever hand over something else.
pub fn to_result(o: CallOutcome) -> CallToolResult {
    let mut content = vec![ContentBlock::text(o.text)];
    // An MCP server's images, audio and resources, as it sent them; one that does not read
    // as a content block (a revision this build does not know) is left out.
    content.extend(
        o.content
            .into_iter()
            .filter_map(|b| serde_json::from_value::<ContentBlock>(b).ok()),
    );
    let mut r = if o.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    r.structured_content = o.structured.map(|v| match v {
        Value::Object(_) => v,
        other => json!({ "result": other }),
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_error_flag_text_and_structure() {
        let r = to_result(CallOutcome {
            is_error: false,
            text: "{\"id\":1}".into(),
            structured: Some(json!({"id": 1})),
            status: Some(200),
            refusal: None,
            content: Vec::new(),
        });
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"id": 1})));
        let r = to_result(CallOutcome::error("upstream down"));
        assert_eq!(r.is_error, Some(true));
        assert!(r.structured_content.is_none());
    }
}
