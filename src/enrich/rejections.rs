//! Values a reviewer rejected, remembered so that enrichment does not offer them again.
//!
//! A generated value comes back from the cache, keyed by its prompt, so without a record a
//! re-run of `shortlist enrich` would write a rejected value again, word for word, and ask for
//! its review again. Rejecting a value records it on its operation or parameter:
//!
//! ```yaml
//! x-shortlist-rejected:
//!   description: ["Gets the quotes."]
//! ```
//!
//! Every later run carries the record into the new enriched copy and writes no value it
//! lists, for that field of that operation or parameter. The model's prompt shows the
//! rejected values and asks for something different (`context::EndpointContext::rejected`),
//! and an answer that repeats one is refused like any unusable answer; a different value
//! is written and awaits review as usual. A person may delete the
//! record to forget the rejections. The loader ignores it: it is never indexed.

use super::apply::{self, Field};
use super::carry;
use super::context::Rejected;
use super::{Task, REJECTED};
use crate::catalog::family::Family;
use crate::catalog::{Endpoint, Method, ParamLocation};
use serde_json::{json, Map, Value};

/// Records `value` as rejected for the field whose marker entry is `field` (`description`,
/// `summary`, `questions`, `example`) of `obj`, an operation or a parameter.
pub fn remember(obj: &mut Map<String, Value>, field: &str, value: Value) {
    let record = obj.entry(REJECTED).or_insert_with(|| json!({}));
    if !record.is_object() {
        *record = json!({});
    }
    let Some(record) = record.as_object_mut() else {
        return;
    };
    let list = record.entry(field).or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        if !list.contains(&value) {
            list.push(value);
        }
    }
}

/// Whether `value` was rejected for `field` of `obj` (an operation or a parameter).
pub fn listed(obj: &Value, field: &str, value: &Value) -> bool {
    obj.get(REJECTED)
        .and_then(|r| r.get(field))
        .and_then(Value::as_array)
        .is_some_and(|l| l.contains(value))
}

/// Whether `value` was rejected for `field` of the operation at `paths[route][method]`, or
/// of its parameter `param` when given.
pub fn rejected_in(
    doc: &Value,
    route: &str,
    method: Method,
    param: Option<(&str, ParamLocation)>,
    field: Field,
    value: &Value,
) -> bool {
    match param {
        None => doc
            .get("paths")
            .and_then(|p| p.get(route))
            .and_then(|i| i.get(method.key()))
            .is_some_and(|op| listed(op, field.marker(), value)),
        Some((name, loc)) => apply::find_param(doc, route, method, name, loc)
            .is_some_and(|p| listed(&p, field.marker(), value)),
    }
}

/// The values rejected for `ep`'s operation and parameters in `doc` (the spec being
/// enriched, records carried over), each with the task that would write it again.
pub fn of_endpoint(doc: &Value, ep: &Endpoint) -> Vec<Rejected> {
    let op = doc
        .get("paths")
        .and_then(|p| p.get(&ep.path))
        .and_then(|i| i.get(ep.method.key()));
    let record = |obj: Option<&Value>, field: &str| -> Vec<Value> {
        obj.and_then(|o| o.get(REJECTED))
            .and_then(|r| r.get(field))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    let mut add = |task, param: Option<&str>, values: Vec<Value>| {
        out.extend(values.into_iter().map(|value| Rejected {
            task,
            param: param.map(str::to_string),
            value,
        }));
    };
    for (task, field) in [
        (Task::Description, "description"),
        (Task::Summary, "summary"),
        (Task::Questions, "questions"),
    ] {
        add(task, None, record(op, field));
    }
    for p in &ep.parameters {
        let declared = apply::find_param(doc, &ep.path, ep.method, &p.name, p.location);
        for (task, field) in [
            (Task::ParamDescriptions, "description"),
            (Task::ParamExamples, "example"),
        ] {
            add(task, Some(&p.name), record(declared.as_ref(), field));
        }
    }
    out
}

/// Copies the rejection records of `prev` (the previous enriched copy) onto the same
/// operations and parameters of `base` (the original, about to be enriched again).
/// Returns how many records were carried; one on an operation or parameter the original
/// no longer has is dropped.
pub fn carry(base: &mut Value, prev: &Value, family: Family) -> usize {
    let mut carried = 0;
    for (route, method, op) in carry::operations(prev) {
        if let Some(record) = op.get(REJECTED).and_then(Value::as_object) {
            if let Some(target) = apply::op_mut(base, route, method) {
                merge(target, record);
                carried += 1;
            }
        }
        for (name, loc, p) in carry::own_parameters(op) {
            let Some(record) = p.get(REJECTED).and_then(Value::as_object) else {
                continue;
            };
            // Only a parameter the original still declares (the slot would declare a
            // missing path parameter, which a rejection alone should not do).
            if apply::find_param(base, route, method, name, loc).is_none() {
                continue;
            }
            if let Ok(target) = apply::param_slot(base, family, route, method, name, loc) {
                merge(target, record);
                carried += 1;
            }
        }
    }
    carried
}

/// Adds every value of `record` to `obj`'s own record.
fn merge(obj: &mut Map<String, Value>, record: &Map<String, Value>) {
    for (field, values) in record {
        for v in values.as_array().into_iter().flatten() {
            remember(obj, field, v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_remembered_once_per_field() {
        let mut obj = Map::new();
        remember(&mut obj, "description", json!("Lists the orders."));
        remember(&mut obj, "description", json!("Lists the orders."));
        remember(&mut obj, "example", json!(42));
        let op = Value::Object(obj);
        assert_eq!(op[REJECTED]["description"], json!(["Lists the orders."]));
        assert!(listed(&op, "description", &json!("Lists the orders.")));
        assert!(!listed(&op, "description", &json!("Lists every order.")));
        assert!(listed(&op, "example", &json!(42)));
        assert!(!listed(&op, "summary", &json!("Lists the orders.")));
    }

    #[test]
    fn a_malformed_record_written_by_hand_is_replaced_not_trusted() {
        let mut obj = Map::new();
        obj.insert(REJECTED.into(), json!("oops"));
        assert!(!listed(
            &Value::Object(obj.clone()),
            "description",
            &json!("x")
        ));
        remember(&mut obj, "description", json!("x"));
        assert!(listed(&Value::Object(obj), "description", &json!("x")));
    }

    #[test]
    fn records_follow_their_operation_and_parameter_into_the_next_copy() {
        let base = json!({"openapi": "3.0.0", "paths": {"/orders": {
            "parameters": [{"name": "shop", "in": "path", "required": true}],
            "get": {"operationId": "listOrders",
                    "parameters": [{"name": "status", "in": "query"}]}
        }}});
        let prev = json!({"openapi": "3.0.0", "paths": {
            "/orders": {"get": {
                "operationId": "listOrders",
                REJECTED: {"description": ["Gets orders."]},
                "parameters": [
                    {"name": "status", "in": "query", REJECTED: {"example": ["open"]}},
                    {"name": "shop", "in": "path", REJECTED: {"description": ["The shop."]}},
                    {"name": "gone", "in": "query", REJECTED: {"example": [1]}}
                ]}},
            "/removed": {"get": {REJECTED: {"description": ["Old."]}}}
        }});
        let mut b = base.clone();
        assert_eq!(carry(&mut b, &prev, Family::OpenApi3), 3);
        let get = Method::Get;
        let text = |s: &str| json!(s);
        assert!(rejected_in(
            &b,
            "/orders",
            get,
            None,
            Field::Description,
            &text("Gets orders.")
        ));
        assert!(rejected_in(
            &b,
            "/orders",
            get,
            Some(("status", ParamLocation::Query)),
            Field::Example,
            &text("open")
        ));
        // The path-level parameter is now the operation's own, with its record.
        assert!(rejected_in(
            &b,
            "/orders",
            get,
            Some(("shop", ParamLocation::Path)),
            Field::Description,
            &text("The shop.")
        ));
        // A parameter or path the original no longer has is not brought back.
        assert!(apply::find_param(&b, "/orders", get, "gone", ParamLocation::Query).is_none());
        assert!(b["paths"].get("/removed").is_none());
    }
}
