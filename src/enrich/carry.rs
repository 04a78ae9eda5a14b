//! Keeping a reviewer's work across runs.
//!
//! Every run starts from the original spec, so changes to it always flow through. Values in
//! the previous enriched copy that carry a marker are regenerated (from the cache, so
//! identically, unless the model or template changed). A value without its marker was
//! adopted or written by a reviewer: if the original still lacks that field, the value is
//! carried into the new copy as human text, and nothing is generated for it.
//!
//! So the review workflow is: edit a generated value and delete its marker entry. Text in
//! the original always wins over the enriched copy. Values a reviewer rejected are carried
//! too, as a record that keeps them out ([`super::rejections`]).

use super::apply::{self, Field};
use super::MARKER;
use crate::catalog::family::Family;
use crate::catalog::{Method, ParamLocation};
use serde_json::Value;

/// Operation fields a reviewer may have adopted.
const OP_FIELDS: [Field; 4] = [
    Field::Description,
    Field::DescriptionBeside,
    Field::Summary,
    Field::Questions,
];
/// Parameter fields a reviewer may have adopted.
const PARAM_FIELDS: [Field; 3] = [Field::Description, Field::DescriptionBeside, Field::Example];

/// Copies reviewed (unmarked) values of `prev` into `base` where `base` lacks them.
/// Returns how many values were carried.
pub fn carry(base: &mut Value, prev: &Value, family: Family) -> usize {
    let mut edits: Vec<Edit> = Vec::new();
    for (route, method, op) in operations(prev) {
        for f in OP_FIELDS {
            let base_has = base
                .pointer(&op_pointer(route, method))
                .and_then(|o| o.get(f.key(family)))
                .is_some();
            if let Some(v) = adopted(op, f, family).filter(|_| !base_has) {
                edits.push(Edit::Op(route.clone(), method, f, v));
            }
        }
        for (name, loc, p) in own_parameters(op) {
            let base_param = apply::find_param(base, route, method, name, loc);
            for f in PARAM_FIELDS {
                let base_has = base_param.as_ref().is_some_and(|bp| {
                    bp.get(f.key(family)).is_some()
                        || (f == Field::Example && bp.get("examples").is_some())
                });
                if let Some(v) = adopted(p, f, family).filter(|_| !base_has) {
                    edits.push(Edit::Param(
                        route.clone(),
                        method,
                        name.to_string(),
                        loc,
                        f,
                        v,
                    ));
                }
            }
        }
    }
    let mut carried = 0;
    for e in edits {
        let ok = match e {
            Edit::Op(route, m, f, v) => apply::set_op_field(base, family, &route, m, f, v, None),
            Edit::Param(route, m, name, loc, f, v) => {
                apply::set_param_field(base, family, &route, m, &name, loc, f, v, None)
            }
        };
        // An operation or parameter the original no longer has: its review is moot.
        carried += usize::from(ok.is_ok());
    }
    carried
}

/// Every operation of `doc`: its route, method and object.
pub(super) fn operations(doc: &Value) -> impl Iterator<Item = (&String, Method, &Value)> {
    doc.get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(route, item)| {
            Method::ALL
                .into_iter()
                .filter_map(move |m| item.get(m.key()).map(|op| (route, m, op)))
        })
}

/// The parameters an operation declares itself, with a name and a known location.
pub(super) fn own_parameters(op: &Value) -> impl Iterator<Item = (&str, ParamLocation, &Value)> {
    op.get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.get("name").and_then(Value::as_str)?;
            let loc = p
                .get("in")
                .and_then(Value::as_str)
                .and_then(ParamLocation::parse)?;
            Some((name, loc, p))
        })
}

enum Edit {
    Op(String, Method, Field, Value),
    Param(String, Method, String, ParamLocation, Field, Value),
}

fn op_pointer(route: &str, method: Method) -> String {
    format!(
        "/paths/{}/{}",
        route.replace('~', "~0").replace('/', "~1"),
        method.key()
    )
}

/// The value of `field` in `obj` when it is present and not marked as generated. The
/// `description` marker covers `x-shortlist-description` when that exists, else
/// `description` itself (see `apply`).
fn adopted(obj: &Value, field: Field, family: Family) -> Option<Value> {
    let v = obj.get(field.key(family)).filter(|v| !v.is_null())?;
    let marked = obj
        .get(MARKER)
        .and_then(|m| m.get(field.marker()))
        .is_some();
    let covered = match field {
        Field::Description => marked && obj.get(Field::DescriptionBeside.key(family)).is_none(),
        _ => marked,
    };
    (!covered).then(|| v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unmarked_values_are_carried_marked_ones_are_not() {
        let base = json!({"openapi": "3.0.0", "paths": {"/a": {"get": {
            "operationId": "getA",
            "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
            "responses": {}
        }}}});
        let prev = json!({"openapi": "3.0.0", "paths": {"/a": {"get": {
            "operationId": "getA",
            "description": "Reviewed by a person.",
            "x-shortlist-summary": "Generated summary.",
            "x-shortlist-generated": {"summary": {"generator": "m"}, "example": {"generator": "m"}},
            "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"},
                "description": "Adopted.", "example": "gen",
                "x-shortlist-generated": {"example": {"generator": "m"}}}],
            "responses": {}
        }}}});
        let mut b = base.clone();
        assert_eq!(carry(&mut b, &prev, Family::OpenApi3), 2);
        let get = &b["paths"]["/a"]["get"];
        assert_eq!(get["description"], "Reviewed by a person.");
        assert!(get.get("x-shortlist-summary").is_none());
        assert_eq!(get["parameters"][0]["description"], "Adopted.");
        assert!(get["parameters"][0].get("example").is_none());
        assert!(
            get.get("x-shortlist-generated").is_none(),
            "carried values are human"
        );
    }

    #[test]
    fn the_original_wins() {
        let base = json!({"paths": {"/a": {"get": {"description": "New original text."}}}});
        let prev = json!({"paths": {"/a": {"get": {"description": "Old text."}}}});
        let mut b = base.clone();
        assert_eq!(carry(&mut b, &prev, Family::OpenApi3), 0);
        assert_eq!(b, base);
    }
}
