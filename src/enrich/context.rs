//! What a prompt template sees of an endpoint: the context ACE gives its model (API title,
//! method, path, operationId, existing texts, parameter names, types and constraints, the
//! request body schema).
//!
//! The context is also what the cache key hashes, so it holds only what the prompt shows:
//! a change elsewhere in the spec does not invalidate cached answers. Long texts are
//! clipped because small local models have 2k-token windows.

use super::Task;
use crate::catalog::{Endpoint, Parameter};
use crate::text::{clean, clip_chars};
use serde::Serialize;
use serde_json::{Map, Value};

/// A description longer than this is clipped in the prompt.
const TEXT_CHARS: usize = 400;
/// Parameter descriptions shown in the parameter list.
const PARAM_TEXT_CHARS: usize = 120;
/// The request body schema as compact JSON, clipped.
const BODY_CHARS: usize = 800;
/// Parameters listed in a prompt.
const MAX_PARAMS: usize = 30;
/// Enum values shown per parameter.
const MAX_ENUM: usize = 12;
/// Response fields shown.
const MAX_FIELDS: usize = 20;

/// One parameter as a prompt shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ParamContext {
    pub name: String,
    pub location: String,
    pub required: bool,
    /// `integer`, `array of string`, ...
    #[serde(rename = "type")]
    pub type_name: String,
    /// `enum: a, b; format: date; minimum 1`, empty when unconstrained.
    pub constraints: String,
    pub description: Option<String>,
}

/// One endpoint as a prompt shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EndpointContext {
    pub api_title: String,
    pub method: String,
    pub path: String,
    pub operation_id: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub parameters: Vec<ParamContext>,
    pub request_body: Option<String>,
    pub response_fields: Vec<String>,
    /// Values a reviewer rejected for this endpoint (`x-shortlist-rejected`). Not part of
    /// the context's JSON: a task's cache key takes only its own rejections
    /// ([`EndpointContext::cache_text`]), so rejecting a description does not ask again for
    /// the summary.
    #[serde(skip)]
    pub rejected: Vec<Rejected>,
}

/// A value rejected in review, for the task that would write it again.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub task: Task,
    /// The parameter, for a parameter's description or example.
    pub param: Option<String>,
    pub value: Value,
}

impl EndpointContext {
    /// The context of an endpoint as loaded from its (original) spec.
    pub fn of(ep: &Endpoint) -> EndpointContext {
        EndpointContext {
            api_title: ep.api_title.clone(),
            method: ep.method.as_str().to_string(),
            path: ep.path.clone(),
            operation_id: ep.operation_id.clone(),
            summary: ep.summary.as_deref().map(|s| short(s, TEXT_CHARS)),
            description: ep.description.as_deref().map(|s| short(s, TEXT_CHARS)),
            tags: ep.tags.clone(),
            parameters: ep
                .parameters
                .iter()
                .take(MAX_PARAMS)
                .map(ParamContext::of)
                .collect(),
            request_body: ep.request_body.as_ref().map(|b| {
                let json = serde_json::to_string(&strip_texts(&b.schema, 0)).unwrap_or_default();
                format!("({}) {}", b.content_type, clip_chars(&json, BODY_CHARS))
            }),
            response_fields: ep
                .response_fields
                .iter()
                .take(MAX_FIELDS)
                .cloned()
                .collect(),
            rejected: Vec::new(),
        }
    }

    /// What a cache key of `task` hashes: the context's JSON, then the task's rejected
    /// values when there are any (so that the model is asked again, told what was
    /// rejected, rather than the rejected answer taken from the cache).
    pub fn cache_text(&self, task: Task) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        let tasks = [task];
        let own: Vec<&Value> = self.rejected_for(&tasks).map(|r| &r.value).collect();
        if !own.is_empty() {
            s.push('\u{1f}');
            s.push_str(&serde_json::to_string(&own).unwrap_or_default());
        }
        s
    }

    /// The rejected values of `tasks`.
    pub fn rejected_for<'a>(&'a self, tasks: &'a [Task]) -> impl Iterator<Item = &'a Rejected> {
        self.rejected.iter().filter(|r| tasks.contains(&r.task))
    }

    /// The prompt's line about the rejected values of `tasks`, if any: `rejected in
    /// review, write something else: description "..."; example of region "US"`.
    pub fn rejected_text(&self, tasks: &[Task]) -> Option<String> {
        let parts: Vec<String> = self
            .rejected_for(tasks)
            .map(|r| {
                let what = match (r.task, &r.param) {
                    (Task::ParamExamples, Some(p)) => format!("example of parameter {p}"),
                    (_, Some(p)) => format!("description of parameter {p}"),
                    (t, None) => t.answer_key().to_string(),
                };
                let value = match &r.value {
                    Value::String(s) => format!("\"{}\"", short(s, TEXT_CHARS)),
                    v => clip_chars(&v.to_string(), TEXT_CHARS),
                };
                format!("{what} {value}")
            })
            .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "rejected by a reviewer, so write something different: {}",
                parts.join("; ")
            )
        })
    }

    /// A context of `GET /orders` and nothing else, for tests.
    #[cfg(test)]
    pub(crate) fn bare() -> EndpointContext {
        EndpointContext {
            api_title: "Shop".into(),
            method: "GET".into(),
            path: "/orders".into(),
            operation_id: None,
            summary: None,
            description: None,
            tags: vec![],
            parameters: vec![],
            request_body: None,
            response_fields: vec![],
            rejected: vec![],
        }
    }

    /// [`EndpointContext::bare`] whose description "Lists the orders." and example "open"
    /// of parameter `status` were rejected, for tests.
    #[cfg(test)]
    pub(crate) fn rejecting() -> EndpointContext {
        let rejected = |task, param: Option<&str>, value| Rejected {
            task,
            param: param.map(str::to_string),
            value,
        };
        EndpointContext {
            rejected: vec![
                rejected(Task::Description, None, "Lists the orders.".into()),
                rejected(Task::ParamExamples, Some("status"), "open".into()),
            ],
            ..EndpointContext::bare()
        }
    }

    /// The parameter list as prompt text, one line per parameter.
    pub fn parameters_text(&self) -> String {
        lines(self.parameters.iter())
    }

    /// The lines of the named parameters only (the targets of a parameter task).
    pub fn targets_text(&self, names: &[String]) -> String {
        lines(self.parameters.iter().filter(|p| names.contains(&p.name)))
    }
}

impl ParamContext {
    pub fn of(p: &Parameter) -> ParamContext {
        ParamContext {
            name: p.name.clone(),
            location: p.location.as_str().to_string(),
            required: p.required,
            type_name: type_name(&p.schema),
            constraints: constraints(&p.schema),
            description: p.description.as_deref().map(|s| short(s, PARAM_TEXT_CHARS)),
        }
    }

    /// `- name (query, integer, required; minimum 1): description`
    pub fn line(&self) -> String {
        let mut s = format!("- {} ({}, {}", self.name, self.location, self.type_name);
        if self.required {
            s.push_str(", required");
        }
        if !self.constraints.is_empty() {
            s.push_str("; ");
            s.push_str(&self.constraints);
        }
        s.push(')');
        if let Some(d) = &self.description {
            s.push_str(": ");
            s.push_str(d);
        }
        s
    }
}

fn lines<'a>(params: impl Iterator<Item = &'a ParamContext>) -> String {
    let out: Vec<String> = params.map(ParamContext::line).collect();
    if out.is_empty() {
        "(none)".to_string()
    } else {
        out.join("\n")
    }
}

fn short(s: &str, max: usize) -> String {
    clip_chars(&clean(s), max)
}

/// The schema's type as words: `integer`, `array of string`, `string or null`.
pub fn type_name(schema: &Value) -> String {
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema.get("enum").is_some() => "string".to_string(),
        _ if schema.get("properties").is_some() => "object".to_string(),
        _ => "any".to_string(),
    };
    if ty == "array" {
        if let Some(items) = schema.get("items") {
            return format!("array of {}", type_name(items));
        }
    }
    ty
}

/// The constraints a value must meet, as prompt text.
pub fn constraints(schema: &Value) -> String {
    let Some(s) = schema.as_object() else {
        return String::new();
    };
    let mut out: Vec<String> = Vec::new();
    if let Some(Value::Array(e)) = s.get("enum") {
        let shown: Vec<String> = e.iter().take(MAX_ENUM).map(scalar).collect();
        let more = if e.len() > MAX_ENUM { ", ..." } else { "" };
        out.push(format!("one of: {}{more}", shown.join(", ")));
    }
    for (k, label) in [
        ("format", "format"),
        ("pattern", "pattern"),
        ("minimum", "minimum"),
        ("maximum", "maximum"),
        ("exclusiveMinimum", "greater than"),
        ("exclusiveMaximum", "less than"),
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minItems", "min items"),
        ("maxItems", "max items"),
        ("default", "default"),
    ] {
        if let Some(v) = s.get(k) {
            // OpenAPI 3.0 writes exclusive bounds as booleans beside minimum/maximum.
            if v.is_boolean() {
                continue;
            }
            out.push(format!("{label} {}", scalar(v)));
        }
    }
    if let Some(items) = s.get("items") {
        let inner = constraints(items);
        if !inner.is_empty() {
            out.push(format!("items: {inner}"));
        }
    }
    out.join("; ")
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => clip_chars(s, 60),
        other => clip_chars(&other.to_string(), 60),
    }
}

/// A schema without its prose (descriptions, examples, titles): the prompt wants the
/// structure, and prose would crowd the window.
fn strip_texts(v: &Value, depth: usize) -> Value {
    if depth > 12 {
        return Value::Null;
    }
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                // Keys of a `properties` map are names, not keywords: handled apart.
                if matches!(
                    k.as_str(),
                    "description" | "example" | "examples" | "title" | "externalDocs"
                ) || k.starts_with("x-")
                {
                    continue;
                }
                let child = if k == "properties" {
                    strip_property_map(x, depth + 1)
                } else {
                    strip_texts(x, depth + 1)
                };
                out.insert(k.clone(), child);
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| strip_texts(x, depth + 1)).collect()),
        other => other.clone(),
    }
}

fn strip_property_map(v: &Value, depth: usize) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), strip_texts(x, depth + 1)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tasks_rejections_change_its_cache_text_and_prompt_only() {
        let mut ctx = EndpointContext::bare();
        let plain = serde_json::to_string(&ctx).unwrap();
        assert_eq!(
            ctx.cache_text(Task::Description),
            plain,
            "without rejections the key is what it always was"
        );
        assert_eq!(ctx.rejected_text(&[Task::Description]), None);
        ctx.rejected = EndpointContext::rejecting().rejected;
        assert_eq!(serde_json::to_string(&ctx).unwrap(), plain);
        assert_ne!(ctx.cache_text(Task::Description), plain);
        assert_ne!(ctx.cache_text(Task::ParamExamples), plain);
        assert_eq!(
            ctx.cache_text(Task::Summary),
            plain,
            "the summary is not asked again"
        );
        let line = ctx
            .rejected_text(&[Task::Description, Task::ParamExamples])
            .unwrap();
        assert!(
            line.contains("description \"Lists the orders.\"")
                && line.contains("example of parameter status \"open\""),
            "{line}"
        );
        assert_eq!(ctx.rejected_text(&[Task::Questions]), None);
    }

    #[test]
    fn describes_types_and_constraints() {
        assert_eq!(
            type_name(&json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            constraints(&json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 1})),
            "minimum 1; maximum 1000; default 1"
        );
        assert_eq!(
            constraints(&json!({"enum": ["asc", "desc"], "format": "x"})),
            "one of: asc, desc; format x"
        );
    }

    #[test]
    fn body_schema_keeps_property_names_called_description() {
        let s = json!({"type": "object", "description": "drop me",
            "properties": {"description": {"type": "string", "description": "drop"}}});
        assert_eq!(
            strip_texts(&s, 0),
            json!({"type": "object", "properties": {"description": {"type": "string"}}})
        );
    }
}
