//! Generated values awaiting review, read from the enriched copies of the specs.
//!
//! The enricher writes each generated value with a marker beside it
//! (`x-shortlist-generated: {field: {generator, template, date, check?}}`, see
//! `enrich::apply`); a value whose marker entry is gone was adopted by a reviewer and
//! survives re-runs (`enrich::carry`). So a value is *pending* while its marker entry is
//! there, and *reviewed* when it is not: an `x-shortlist-*` field without its entry, or a
//! field the original spec lacks (filled in place) without its entry.

use crate::catalog::family::Family;
use crate::catalog::problem::push_pointer;
use crate::catalog::{Method, ParamLocation, SpecSource};
use crate::enrich::apply::{find_param, Field};
use crate::enrich::{spec_file, MARKER, REJECTED};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Where a generated description sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// In the field itself: the author wrote nothing there.
    InPlace,
    /// In `x-shortlist-description`, beside the author's (weak) text.
    Beside,
}

/// A field that can be reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewField {
    Description,
    Summary,
    Questions,
    Example,
}

impl ReviewField {
    pub fn parse(s: &str) -> Option<ReviewField> {
        match s {
            "description" => Some(ReviewField::Description),
            "summary" => Some(ReviewField::Summary),
            "questions" => Some(ReviewField::Questions),
            "example" => Some(ReviewField::Example),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReviewField::Description => "description",
            ReviewField::Summary => "summary",
            ReviewField::Questions => "questions",
            ReviewField::Example => "example",
        }
    }

    /// The entry of the marker that covers this field (the enricher's own names).
    pub fn marker(self) -> &'static str {
        self.as_str()
    }

    /// Fields of an operation, and of a parameter.
    const OPERATION: [ReviewField; 3] = [
        ReviewField::Description,
        ReviewField::Summary,
        ReviewField::Questions,
    ];
    const PARAMETER: [ReviewField; 2] = [ReviewField::Description, ReviewField::Example];
}

/// A parameter, as the enricher names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamRef {
    pub name: String,
    #[serde(rename = "in")]
    pub location: String,
}

/// Whether a value still awaits review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Reviewed,
    /// Rejected in review and kept out of later runs (`x-shortlist-rejected`); may be
    /// restored.
    Rejected,
}

/// One generated (or reviewed) value.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewItem {
    pub api: String,
    /// The endpoint's tool name, when the catalog has it.
    pub tool: Option<String>,
    pub method: &'static str,
    pub path: String,
    pub param: Option<ParamRef>,
    pub field: ReviewField,
    /// The key that holds the value (`description`, `x-shortlist-description`, ...).
    pub key: &'static str,
    pub placement: Option<Placement>,
    /// The enriched file and the JSON pointer of the value in it.
    pub file: String,
    pub pointer: String,
    pub value: Value,
    /// What the spec's author wrote around it: operationId, summary and description of an
    /// operation; description, type and required of a parameter.
    pub spec: Value,
    /// `{generator, template, date}` while pending.
    pub provenance: Option<Value>,
    /// `{passed, reason}` when a retrieval check ran on the value.
    pub check: Option<Value>,
    pub status: Status,
}

/// Every item of one enriched spec (`src.path`); `original` is the spec it was made from.
pub fn items_of(src: &SpecSource, doc: &Value, original: Option<&Value>) -> Vec<ReviewItem> {
    let family = crate::catalog::family::family(&src.path, doc)
        .map(|(f, _)| f)
        .unwrap_or(Family::OpenApi3);
    let mut out = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return out;
    };
    for (route, item) in paths {
        for method in Method::ALL {
            let Some(op) = item.get(method.key()).and_then(Value::as_object) else {
                continue;
            };
            let op_ptr = push_pointer(&push_pointer("#/paths", route), method.key());
            let orig_op = original
                .and_then(|o| o.get("paths"))
                .and_then(|p| p.get(route))
                .and_then(|i| i.get(method.key()));
            let at = Place {
                src,
                family,
                route,
                method,
            };
            let spec = json!({
                "operationId": op.get("operationId"),
                "summary": op.get("summary"),
                "description": human_description(op),
            });
            for f in ReviewField::OPERATION {
                if let Some(it) = at.item(op, &op_ptr, orig_op, None, f, &spec) {
                    out.push(it);
                }
                out.extend(at.rejected(op, &op_ptr, None, f, &spec));
            }
            let params = op.get("parameters").and_then(Value::as_array);
            for (i, p) in params.into_iter().flatten().enumerate() {
                let (Some(obj), Some(name), Some(loc)) = (
                    p.as_object(),
                    p.get("name").and_then(Value::as_str),
                    p.get("in").and_then(Value::as_str),
                ) else {
                    continue;
                };
                let Some(location) = ParamLocation::parse(loc) else {
                    continue;
                };
                let ptr = push_pointer(&push_pointer(&op_ptr, "parameters"), &i.to_string());
                let orig_p = original.and_then(|o| find_param(o, route, method, name, location));
                let pref = ParamRef {
                    name: name.to_string(),
                    location: loc.to_string(),
                };
                let spec = json!({
                    "description": human_description(obj),
                    "type": obj.get("schema").and_then(|s| s.get("type")).or_else(|| obj.get("type")),
                    "required": obj.get("required").and_then(Value::as_bool).unwrap_or(loc == "path"),
                });
                for f in ReviewField::PARAMETER {
                    if let Some(it) = at.item(obj, &ptr, orig_p.as_ref(), Some(&pref), f, &spec) {
                        out.push(it);
                    }
                    out.extend(at.rejected(obj, &ptr, Some(&pref), f, &spec));
                }
            }
        }
    }
    out
}

/// The author's description of an operation or parameter: `description` unless the
/// enricher filled it in place (it is then the generated value, not the author's).
fn human_description(obj: &Map<String, Value>) -> Value {
    let entry = obj.get(MARKER).and_then(|m| m.get("description"));
    // A refused value was written nowhere: `description` is then the author's.
    let refused = entry.and_then(|e| e.pointer("/check/passed")) == Some(&Value::Bool(false));
    let filled =
        entry.is_some() && !refused && !obj.contains_key(crate::enrich::DESCRIPTION_BESIDE);
    match obj.get("description") {
        Some(d) if !filled => d.clone(),
        _ => Value::Null,
    }
}

/// Where an item lives.
struct Place<'a> {
    src: &'a SpecSource,
    family: Family,
    route: &'a str,
    method: Method,
}

impl Place<'_> {
    /// The values of `field` rejected in review, from `obj`'s rejection record.
    fn rejected(
        &self,
        obj: &Map<String, Value>,
        ptr: &str,
        param: Option<&ParamRef>,
        field: ReviewField,
        spec: &Value,
    ) -> Vec<ReviewItem> {
        let values = obj
            .get(REJECTED)
            .and_then(|r| r.get(field.marker()))
            .and_then(Value::as_array);
        let list = push_pointer(&push_pointer(ptr, REJECTED), field.marker());
        values
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| ReviewItem {
                key: REJECTED,
                pointer: push_pointer(&list, &i.to_string()),
                value: v.clone(),
                ..self.at(param, field, spec, Status::Rejected)
            })
            .collect()
    }

    /// An item of `field` here, without its key, pointer, value, placement, provenance or
    /// check.
    fn at(
        &self,
        param: Option<&ParamRef>,
        field: ReviewField,
        spec: &Value,
        status: Status,
    ) -> ReviewItem {
        ReviewItem {
            api: self.src.id.clone(),
            tool: None,
            method: self.method.as_str(),
            path: self.route.to_string(),
            param: param.cloned(),
            field,
            key: "",
            placement: None,
            file: self.src.path.display().to_string(),
            pointer: String::new(),
            value: Value::Null,
            spec: spec.clone(),
            provenance: None,
            check: None,
            status,
        }
    }

    fn item(
        &self,
        obj: &Map<String, Value>,
        ptr: &str,
        original: Option<&Value>,
        param: Option<&ParamRef>,
        field: ReviewField,
        spec: &Value,
    ) -> Option<ReviewItem> {
        // A refused value first: `description` then holds the author's text.
        let located = match refused(obj, field, self.family) {
            Some(r) => r,
            None => locate(obj, field, self.family)?,
        };
        let entry = obj.get(MARKER).and_then(|m| m.get(field.marker()));
        let status = if entry.is_some() {
            Status::Pending
        } else {
            // Without a marker: an `x-shortlist-*` field is a reviewed value; a standard
            // field is one only when the original spec lacks it (else the author wrote it).
            let in_original = original.is_some_and(|o| {
                o.get(located.key).is_some()
                    || (field == ReviewField::Example
                        && (o.get("example").is_some() || o.get("examples").is_some()))
            });
            if located.enricher_key || (!in_original && original.is_some()) {
                Status::Reviewed
            } else {
                return None;
            }
        };
        let provenance = entry.map(|e| {
            let mut p = e.clone();
            if let Some(o) = p.as_object_mut() {
                o.remove("check");
            }
            p
        });
        // The refused value itself is the item's value, not part of its check.
        let check = entry
            .and_then(|e| e.get("check"))
            .filter(|c| c.get("passed").is_some_and(Value::is_boolean))
            .map(|c| {
                let mut c = c.clone();
                if let Some(o) = c.as_object_mut() {
                    o.remove("value");
                }
                c
            });
        Some(ReviewItem {
            key: located.key,
            placement: located.placement,
            pointer: push_pointer(ptr, located.key),
            value: located.value.clone(),
            provenance,
            check,
            ..self.at(param, field, spec, status)
        })
    }
}

/// Where a field's value is in an operation or parameter object.
pub struct Located<'a> {
    pub key: &'static str,
    pub value: &'a Value,
    pub placement: Option<Placement>,
    /// Whether the key is one only the enricher writes (`x-shortlist-*`).
    pub enricher_key: bool,
}

/// Finds `field` in `obj`: a description is beside the author's text when
/// `x-shortlist-description` exists (the marker then covers that one), else in place.
pub fn locate(obj: &Map<String, Value>, field: ReviewField, family: Family) -> Option<Located<'_>> {
    let (f, placement) = match field {
        ReviewField::Description if obj.contains_key(Field::DescriptionBeside.key(family)) => {
            (Field::DescriptionBeside, Some(Placement::Beside))
        }
        ReviewField::Description => (Field::Description, Some(Placement::InPlace)),
        ReviewField::Summary => (Field::Summary, None),
        ReviewField::Questions => (Field::Questions, None),
        ReviewField::Example => (Field::Example, None),
    };
    let key = f.key(family);
    let value = obj.get(key).filter(|v| !v.is_null())?;
    Some(Located {
        key,
        value,
        placement,
        enricher_key: key.starts_with("x-shortlist-"),
    })
}

/// A generated value its retrieval check refused: the enricher writes it nowhere the index
/// reads, only into its marker entry (`check: {"passed": false, "reason", "value"}`). It is
/// located where accepting it puts it: beside the author's description when there is one,
/// else in the field itself.
pub fn refused(
    obj: &Map<String, Value>,
    field: ReviewField,
    family: Family,
) -> Option<Located<'_>> {
    let check = obj.get(MARKER)?.get(field.marker())?.get("check")?;
    if check.get("passed") != Some(&Value::Bool(false)) {
        return None;
    }
    let value = check.get("value").filter(|v| !v.is_null())?;
    let (f, placement) = match field {
        ReviewField::Description
            if obj
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| !d.trim().is_empty()) =>
        {
            (Field::DescriptionBeside, Some(Placement::Beside))
        }
        ReviewField::Description => (Field::Description, Some(Placement::InPlace)),
        ReviewField::Summary => (Field::Summary, None),
        ReviewField::Questions => (Field::Questions, None),
        ReviewField::Example => (Field::Example, None),
    };
    let key = f.key(family);
    Some(Located {
        key,
        value,
        placement,
        enricher_key: key.starts_with("x-shortlist-"),
    })
}

/// Reads the enriched copy of `src` and its original and lists their items; a source
/// without an enriched copy has none. A file that cannot be read yields its error.
pub fn read_items(src: &SpecSource) -> Result<Vec<ReviewItem>, String> {
    if src.path == src.original {
        return Ok(Vec::new());
    }
    let doc = spec_file::read(&src.path)?;
    let original = spec_file::read(&src.original).ok();
    Ok(items_of(src, &doc.doc, original.as_ref().map(|o| &o.doc)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn src() -> SpecSource {
        SpecSource {
            id: "x".into(),
            path: PathBuf::from("x.enriched.json"),
            original: PathBuf::from("x.json"),
            config_index: 0,
        }
    }

    #[test]
    fn pending_reviewed_and_human_values_are_told_apart() {
        let original = json!({"openapi": "3.0.0", "paths": {"/a/{id}": {"get": {
            "operationId": "getA", "description": "getA",
            "parameters": [{"name": "id", "in": "path", "schema": {"type": "integer"}}]}}}});
        let enriched = json!({"openapi": "3.0.0", "paths": {"/a/{id}": {"get": {
            "operationId": "getA", "description": "getA",
            "x-shortlist-description": "Returns one A by its id.",
            "x-shortlist-summary": "One A.",
            "x-shortlist-generated": {
                "description": {"generator": "heuristic", "template": "", "date": "2026-11-25",
                    "check": {"passed": false, "reason": "ranked 7th for its own question"}}},
            "parameters": [{"name": "id", "in": "path", "schema": {"type": "integer"},
                "description": "Identifier of the A.", "example": 42,
                "x-shortlist-generated": {"example": {"generator": "heuristic"}}}]}}}});
        let items = items_of(&src(), &enriched, Some(&original));
        let find = |f: ReviewField, param: bool| {
            items
                .iter()
                .find(|i| i.field == f && i.param.is_some() == param)
                .unwrap_or_else(|| panic!("{f:?} {param}: {items:#?}"))
        };
        let d = find(ReviewField::Description, false);
        assert_eq!(d.status, Status::Pending);
        assert_eq!(d.placement, Some(Placement::Beside));
        assert_eq!(d.spec["description"], "getA");
        assert_eq!(d.check.as_ref().unwrap()["passed"], false);
        assert!(d.provenance.as_ref().unwrap().get("check").is_none());
        assert_eq!(d.pointer, "#/paths/~1a~1{id}/get/x-shortlist-description");
        assert_eq!(find(ReviewField::Summary, false).status, Status::Reviewed);
        // Filled in place, no marker, absent from the original: a reviewer's value.
        let pd = find(ReviewField::Description, true);
        assert_eq!(pd.status, Status::Reviewed);
        assert_eq!(pd.placement, Some(Placement::InPlace));
        let ex = find(ReviewField::Example, true);
        assert_eq!(ex.status, Status::Pending);
        assert!(ex.check.is_none());
        assert_eq!(items.len(), 4, "the author's own description is no item");
    }

    #[test]
    fn values_a_retrieval_check_refused_are_listed_where_they_would_go() {
        let enriched = json!({"openapi": "3.0.0", "paths": {"/a": {"get": {
            "operationId": "getA",
            "x-shortlist-generated": {"description": {"generator": "m", "template": "t",
                "date": "2026-11-25", "check": {"passed": false,
                "reason": "ranks its endpoint 9th", "value": "Gets the A."}}}}}}});
        let items = items_of(&src(), &enriched, Some(&json!({"openapi": "3.0.0"})));
        assert_eq!(items.len(), 1, "{items:#?}");
        let d = &items[0];
        assert_eq!(d.status, Status::Pending);
        assert_eq!(d.value, "Gets the A.");
        assert_eq!(
            (d.key, d.placement),
            ("description", Some(Placement::InPlace))
        );
        assert_eq!(
            d.check.as_ref().unwrap()["reason"],
            "ranks its endpoint 9th"
        );
        assert!(d.check.as_ref().unwrap().get("value").is_none());
    }
}
