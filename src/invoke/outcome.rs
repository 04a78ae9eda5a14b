//! The result of one tool call, independent of MCP types (the server maps it to a
//! `CallToolResult`).

use super::auth::Redactor;
use serde_json::Value;

/// What a call produced: text for the model, structured JSON when the API answered with
/// a complete JSON document, and the HTTP status when a response arrived at all.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// True for anything but a 2xx answer: refused or invalid calls, transport failures,
    /// upstream errors. Maps to MCP's `isError`.
    pub is_error: bool,
    /// The response body (or the error explanation), bounded in size, secrets masked.
    pub text: String,
    /// The parsed JSON body for complete 2xx JSON responses. Always an object, as MCP's
    /// `structuredContent` must be: a top-level array or scalar is wrapped as
    /// `{"result": ...}`.
    pub structured: Option<Value>,
    /// The upstream HTTP status, when a response was received.
    pub status: Option<u16>,
    /// Why the call never left: what the audit log records of a call refused before it
    /// reached the API (a fixed word, never the arguments).
    pub refusal: Option<&'static str>,
    /// Content blocks other than text (images, audio, resources) an MCP server answered,
    /// as MCP content JSON, passed on as they came.
    pub content: Vec<Value>,
}

impl CallOutcome {
    /// A failure before or instead of an upstream response.
    pub fn error(text: impl Into<String>) -> CallOutcome {
        CallOutcome {
            is_error: true,
            text: text.into(),
            structured: None,
            status: None,
            refusal: None,
            content: Vec::new(),
        }
    }

    /// A call refused before it was sent, for the reason `why` (a fixed word:
    /// `read_only`, `invalid_arguments`, `credentials`, `request`, `address`).
    pub fn refused(why: &'static str, text: impl Into<String>) -> CallOutcome {
        CallOutcome {
            refusal: Some(why),
            ..CallOutcome::error(text)
        }
    }

    /// The same outcome with every registered secret masked, in the text and in every
    /// string of the structured content.
    pub fn redacted(mut self, r: &Redactor) -> CallOutcome {
        if r.is_empty() {
            return self;
        }
        self.text = r.redact(&self.text);
        if let Some(v) = self.structured.as_mut() {
            redact_value(v, r);
        }
        self
    }
}

fn redact_value(v: &mut Value, r: &Redactor) {
    match v {
        Value::String(s) => *s = r.redact(s),
        Value::Array(a) => a.iter_mut().for_each(|x| redact_value(x, r)),
        Value::Object(o) => {
            let entries = std::mem::take(o);
            for (k, mut x) in entries {
                redact_value(&mut x, r);
                o.insert(r.redact(&k), x);
            }
        }
        _ => {}
    }
}
