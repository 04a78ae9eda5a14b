//! Validating a tool call's arguments before anything is sent.
//!
//! A bad call should cost the model one cheap, precise error rather than an HTTP round
//! trip and an upstream 400 in whatever words the API chooses. Every problem is listed at
//! once (unknown names with a "did you mean", missing required arguments, type, enum,
//! pattern and range violations), each naming the argument, followed by the list of
//! arguments the tool takes. Values are checked against the same strict schemas the tool
//! advertises ([`argument_schemas`]), with the lenient coercions described in `check`.
//!
//! `null` for an optional argument means "not given": models often fill every optional
//! argument with null.

use super::args::ArgTarget;
use super::check::{check, MAX_PROBLEMS};
use super::near::closest;
use super::schema::{argument_schemas, ArgSchema};
use crate::catalog::{Endpoint, ParamLocation};
use serde_json::{Map, Value};
use std::fmt;

/// Arguments that passed validation, coerced, by what they fill in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidArgs {
    values: Vec<(ArgTarget, Value)>,
}

impl ValidArgs {
    /// The value for `Endpoint::parameters[i]`, if given.
    pub fn param(&self, i: usize) -> Option<&Value> {
        self.get(ArgTarget::Param(i))
    }

    /// The request body, if given.
    pub fn body(&self) -> Option<&Value> {
        self.get(ArgTarget::Body)
    }

    fn get(&self, t: ArgTarget) -> Option<&Value> {
        self.values.iter().find(|(k, _)| *k == t).map(|(_, v)| v)
    }
}

/// Why a call's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub tool: String,
    /// One line per problem, each naming the argument.
    pub problems: Vec<String>,
    /// `name (type, required), ...`: what the tool takes.
    pub expected: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invalid arguments for tool '{}':", self.tool)?;
        for p in &self.problems {
            writeln!(f, "- {p}")?;
        }
        if self.expected.is_empty() {
            write!(f, "this tool takes no arguments")
        } else {
            write!(f, "expected arguments: {}", self.expected)
        }
    }
}

impl std::error::Error for ValidationError {}

/// Checks `args` against the endpoint's arguments; returns the coerced values.
pub fn validate(ep: &Endpoint, args: &Map<String, Value>) -> Result<ValidArgs, ValidationError> {
    let schemas = argument_schemas(ep);
    let mut problems = Vec::new();
    for name in args.keys() {
        if !schemas.iter().any(|a| a.spec.name == *name) {
            let hint = closest(name, schemas.iter().map(|a| a.spec.name.as_str()))
                .map(|c| format!("; did you mean '{c}'?"))
                .unwrap_or_default();
            problems.push(format!("unknown argument '{name}'{hint}"));
        }
    }
    let mut values = Vec::new();
    for a in &schemas {
        let name = a.spec.name.as_str();
        match args.get(name).filter(|v| !v.is_null()) {
            None if a.required => problems.push(format!("missing required argument '{name}'")),
            None => {}
            Some(v) => {
                let v = check(&a.schema, v.clone(), name, &mut problems);
                if is_path_param(ep, a) && is_empty(&v) {
                    problems.push(format!(
                        "argument '{name}': must not be empty (it is part of the URL path)"
                    ));
                }
                values.push((a.spec.target, v));
            }
        }
    }
    if problems.is_empty() {
        Ok(ValidArgs { values })
    } else {
        problems.truncate(MAX_PROBLEMS);
        Err(ValidationError {
            tool: ep.tool_name.clone(),
            problems,
            expected: expected(&schemas),
        })
    }
}

fn is_path_param(ep: &Endpoint, a: &ArgSchema) -> bool {
    matches!(a.spec.target, ArgTarget::Param(i)
        if ep.parameters.get(i).is_some_and(|p| p.location == ParamLocation::Path))
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// `movie_id (integer, required), language (string)`, at most 30 entries.
fn expected(schemas: &[ArgSchema]) -> String {
    let mut parts: Vec<String> = schemas
        .iter()
        .take(30)
        .map(|a| {
            let ty = match a.schema.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_string(),
            };
            let req = if a.required { ", required" } else { "" };
            format!("{} ({ty}{req})", a.spec.name)
        })
        .collect();
    if schemas.len() > 30 {
        parts.push(format!("... {} more", schemas.len() - 30));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Method, RequestBody};
    use crate::invoke::args::tests::{endpoint, param};
    use serde_json::json;

    fn ep() -> Endpoint {
        let mut lang = param("language", ParamLocation::Query, json!({"type": "string"}));
        lang.required = false;
        let mut e = endpoint(
            Method::Post,
            "/movie/{movie_id}/rating",
            vec![
                param("movie_id", ParamLocation::Path, json!({"type": "integer"})),
                lang,
            ],
        );
        e.request_body = Some(RequestBody {
            content_type: "application/json".into(),
            required: true,
            description: None,
            schema: json!({"type": "object", "required": ["value"],
                           "properties": {"value": {"type": "number", "minimum": 0.5, "maximum": 10}}}),
        });
        e
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn lists_every_problem_with_suggestions() {
        let err = validate(
            &ep(),
            &args(json!({"movie_di": 5, "languag": "en", "body": {"value": 11}})),
        )
        .unwrap_err();
        assert_eq!(
            err.problems,
            [
                "unknown argument 'movie_di'; did you mean 'movie_id'?",
                "unknown argument 'languag'; did you mean 'language'?",
                "missing required argument 'movie_id'",
                "argument 'body.value': must be at most 10 (got 11)",
            ]
        );
        let text = err.to_string();
        assert!(
            text.starts_with("invalid arguments for tool 't_op':\n- unknown argument 'movie_di'")
        );
        assert!(text.ends_with("expected arguments: movie_id (integer, required), language (string), body (object, required)"));
    }

    #[test]
    fn coerces_and_treats_null_as_absent() {
        let ok = validate(
            &ep(),
            &args(json!({"movie_id": "550", "language": null, "body": {"value": "8.5"}})),
        )
        .unwrap();
        assert_eq!(ok.param(0), Some(&json!(550)));
        assert_eq!(ok.param(1), None);
        assert_eq!(ok.body(), Some(&json!({"value": 8.5})));
    }

    #[test]
    fn empty_path_values_are_refused() {
        let mut e = ep();
        e.parameters[0].schema = json!({"type": "string"});
        let err = validate(&e, &args(json!({"movie_id": "", "body": {"value": 1}}))).unwrap_err();
        assert_eq!(
            err.problems,
            ["argument 'movie_id': must not be empty (it is part of the URL path)"]
        );
    }
}
