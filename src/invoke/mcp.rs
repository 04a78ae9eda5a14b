//! Calling an MCP server's tool: the validated arguments under the upstream's own names,
//! sent as `tools/call` on the server's shared connection, and what it answers shaped into
//! a [`CallOutcome`] within the same bounds as an HTTP answer.
//!
//! - text blocks are joined, and cut at the byte bound with a note saying so;
//! - `structuredContent` is kept when it fits the bound;
//! - images, audio and embedded resources are passed on as content blocks while the whole
//!   answer fits the bound, and otherwise described in one line (type and size);
//! - `isError` is kept: an upstream's tool error is the tool's error.

use super::outcome::CallOutcome;
use super::validate::ValidArgs;
use crate::catalog::Endpoint;
use crate::upstream::Upstreams;
use serde_json::{Map, Value};
use std::time::Duration;
use tracing::Instrument;

/// The upstream's arguments: each validated value under its parameter's own name.
pub fn arguments(ep: &Endpoint, valid: &ValidArgs) -> Map<String, Value> {
    ep.parameters
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((p.name.clone(), valid.param(i)?.clone())))
        .collect()
}

/// Calls the tool `ep` stands for.
pub async fn call(
    upstreams: Option<&Upstreams>,
    ep: &Endpoint,
    valid: &ValidArgs,
    timeout: Duration,
    max_bytes: usize,
    hooks: crate::upstream::CallHooks,
    person: Option<crate::upstream::PersonToken<'_>>,
) -> CallOutcome {
    let Some(tool) = &ep.mcp else {
        return CallOutcome::error("not an MCP tool");
    };
    let Some(upstreams) = upstreams else {
        return CallOutcome::error(format!(
            "MCP server '{}' is not reachable from here (no upstream connections)",
            tool.server
        ));
    };
    let span = crate::telemetry::trace::upstream_span(&ep.api, "tools/call", &ep.path, &tool.name);
    let started = std::time::Instant::now();
    let answered = upstreams
        .call(
            &tool.server,
            &tool.name,
            arguments(ep, valid),
            timeout,
            hooks,
            person,
        )
        .instrument(span.clone())
        .await;
    crate::telemetry::metrics::mcp_upstream_call(
        &tool.server,
        answered.as_ref().ok().map(|r| r.is_error == Some(true)),
        started.elapsed(),
    );
    if !matches!(&answered, Ok(r) if r.is_error != Some(true)) {
        crate::telemetry::trace::mark_error(&span);
    }
    match answered {
        Ok(result) => shape(result, max_bytes),
        // A refused token reads as the API's 401 would: the caller gets a fresh one.
        Err(f) => CallOutcome {
            status: f.token_refused.then_some(401),
            ..CallOutcome::error(f.reason)
        },
    }
}

/// What an upstream answered, within `max_bytes`.
pub fn shape(result: rmcp::model::CallToolResult, max_bytes: usize) -> CallOutcome {
    let mut text = String::new();
    let mut blocks = Vec::new();
    let mut notes = Vec::new();
    let mut used = 0usize;
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("unknown");
        if kind == "text" {
            let t = v.get("text").and_then(Value::as_str).unwrap_or_default();
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(t);
            continue;
        }
        let size = v.to_string().len();
        if used + size <= max_bytes {
            used += size;
            blocks.push(v);
        } else {
            let mime = v
                .get("mimeType")
                .or_else(|| v.get("resource").and_then(|r| r.get("mimeType")))
                .and_then(Value::as_str)
                .unwrap_or("");
            notes.push(format!(
                "[{kind}{}{mime}, {size} bytes: not shown, larger than the {max_bytes} byte bound]",
                if mime.is_empty() { "" } else { " " }
            ));
        }
    }
    let room = max_bytes.saturating_sub(used);
    if text.len() > room {
        let total = text.len();
        let mut cut = room;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(&format!(
            "\n[truncated: showed first {cut} bytes of {total}]"
        ));
    }
    for n in notes {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&n);
    }
    let structured = result.structured_content.filter(|s| {
        let fits = s.to_string().len() <= max_bytes;
        if !fits {
            text.push_str("\n[structured content not shown: larger than the bound]");
        }
        fits
    });
    CallOutcome {
        is_error: result.is_error == Some(true),
        text,
        structured,
        status: None,
        refusal: None,
        content: blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolResult, ContentBlock};

    #[test]
    fn text_is_cut_at_the_bound_and_large_blocks_described() {
        let big = "é".repeat(100);
        let r = CallToolResult::success(vec![
            ContentBlock::text(big),
            ContentBlock::image("A".repeat(500), "image/png"),
        ]);
        let o = shape(r, 120);
        assert!(o.text.contains("[truncated: showed first"), "{}", o.text);
        assert!(o.text.contains("image image/png"), "{}", o.text);
        assert!(o.content.is_empty());
        let small = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        let o = shape(small, 1_000);
        assert_eq!(o.content.len(), 1);
        assert!(!o.is_error);
    }

    #[test]
    fn an_upstream_error_stays_an_error() {
        let o = shape(
            CallToolResult::error(vec![ContentBlock::text("no such entity")]),
            1_000,
        );
        assert!(o.is_error);
        assert_eq!(o.text, "no such entity");
    }
}
