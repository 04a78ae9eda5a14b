//! Recording a review in the enriched spec, exactly as a person editing the file would:
//!
//! - **accept**: the marker entry goes, the value stays (adopted; `enrich::carry` keeps it
//!   across re-runs);
//! - **edit**: the edited value replaces the generated one and the marker entry goes;
//! - **reject**: the generated value and its marker entry go; what the author wrote (a weak
//!   description beside which an alternative was offered) stays. The value is remembered in
//!   `x-shortlist-rejected` (`enrich::rejections`): a later `shortlist enrich` does not write
//!   it again, though it may offer a different one for a field that is still missing;
//! - **restore**: a rejected value leaves that record (`expected` names it), so the next
//!   `shortlist enrich` writes it again, awaiting review: a rejection made by mistake is
//!   undone without editing the file by hand.
//!
//! Each save re-reads the file under a lock held per file, changes the one value and writes
//! the file atomically (temporary file, then rename), so two reviewers saving at once both
//! keep their change and a reader never sees half a file. The file keeps its format (JSON or
//! YAML, key order) through the enricher's own writer.

use super::review::{locate, refused, ParamRef, ReviewField};
use crate::catalog::family::Family;
use crate::catalog::{Method, ParamLocation, SpecSource};
use crate::enrich::apply::op_mut;
use crate::enrich::{rejections, spec_file, MARKER, REJECTED};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Longest text a reviewer may save: descriptions are read by models on every turn.
const MAX_TEXT_CHARS: usize = 4000;

/// What a reviewer decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Accept,
    Edit,
    Reject,
    Restore,
}

/// A review as the console's JSON endpoint receives it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    pub api: String,
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub param: Option<ParamRef>,
    pub field: String,
    pub action: Verdict,
    /// The new value (`edit` only).
    #[serde(default)]
    pub value: Option<Value>,
    /// The generated value the reviewer saw; when given, a save that finds another value
    /// (the enricher ran again meanwhile) is refused rather than applied to text unseen.
    #[serde(default)]
    pub expected: Option<Value>,
}

/// Why a review was not recorded; each maps to an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewError {
    /// The request names something invalid (400).
    Invalid(String),
    /// No such API, operation, parameter or value (404).
    NotFound(String),
    /// The value is no longer pending, or changed since it was shown (409).
    Conflict(String),
    /// The file could not be read or written (500).
    Io(String),
}

impl std::fmt::Display for ReviewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReviewError::Invalid(m)
            | ReviewError::NotFound(m)
            | ReviewError::Conflict(m)
            | ReviewError::Io(m) => f.write_str(m),
        }
    }
}

/// The recorded outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Saved {
    pub file: String,
    pub key: &'static str,
    /// The value now in the file (`null` after a reject).
    pub value: Value,
    /// The value the verdict was given on: the generated (or rejected, for a restore)
    /// value as it was, for the audit log's record of who changed what.
    pub previous: Value,
}

/// One lock per spec file.
#[derive(Default)]
pub struct Locks {
    files: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl Locks {
    fn of(&self, path: &Path) -> Arc<Mutex<()>> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(files.entry(path.to_path_buf()).or_default())
    }
}

/// Checks a review's own fields, before any file is touched.
pub fn validate(r: &Review) -> Result<(Method, ReviewField, Option<ParamLocation>), ReviewError> {
    let bad = |m: String| ReviewError::Invalid(m);
    let method = Method::parse(r.method.trim()).ok_or_else(|| {
        bad(format!(
            "method: '{}' is not an HTTP method",
            clip(&r.method)
        ))
    })?;
    let field = ReviewField::parse(&r.field).ok_or_else(|| {
        bad(format!(
            "field: '{}' is not one of description, summary, questions, example",
            clip(&r.field)
        ))
    })?;
    let location = match &r.param {
        None => None,
        Some(p) => Some(ParamLocation::parse(&p.location).ok_or_else(|| {
            bad(format!(
                "param.in: '{}' is not one of path, query, header, cookie",
                clip(&p.location)
            ))
        })?),
    };
    let allowed = match location {
        None => matches!(
            field,
            ReviewField::Description | ReviewField::Summary | ReviewField::Questions
        ),
        Some(_) => matches!(field, ReviewField::Description | ReviewField::Example),
    };
    if !allowed {
        let on = if location.is_some() {
            "a parameter"
        } else {
            "an operation"
        };
        return Err(bad(format!(
            "field: {on} has no generated {}",
            field.as_str()
        )));
    }
    if r.action == Verdict::Restore && r.expected.is_none() {
        return Err(bad(
            "expected: a restore needs the rejected value it brings back".into(),
        ));
    }
    match (r.action, &r.value) {
        (Verdict::Edit, None) => return Err(bad("value: an edit needs the new value".into())),
        (Verdict::Edit, Some(v)) => check_value(field, v)?,
        (_, Some(_)) => return Err(bad("value: only an edit takes a value".into())),
        (_, None) => {}
    }
    Ok((method, field, location))
}

/// An edited value must be of the field's kind.
fn check_value(field: ReviewField, v: &Value) -> Result<(), ReviewError> {
    let text = |s: &str| !s.trim().is_empty() && s.chars().count() <= MAX_TEXT_CHARS;
    let ok = match field {
        ReviewField::Description | ReviewField::Summary => v.as_str().is_some_and(text),
        ReviewField::Questions => v
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|q| q.as_str().is_some_and(text))),
        ReviewField::Example => !v.is_null(),
    };
    if ok {
        Ok(())
    } else {
        let want = match field {
            ReviewField::Description | ReviewField::Summary => {
                format!("a non-empty string of at most {MAX_TEXT_CHARS} characters")
            }
            ReviewField::Questions => "a non-empty list of non-empty strings".to_string(),
            ReviewField::Example => "a JSON value other than null".to_string(),
        };
        Err(ReviewError::Invalid(format!(
            "value: a {} must be {want}",
            field.as_str()
        )))
    }
}

fn clip(s: &str) -> String {
    crate::text::clip_chars(s, 60)
}

/// Records `review` in the enriched copy of `src`, under `locks`. `schema` is the
/// parameter's resolved schema (from the catalog) that an edited example must match.
pub fn record(
    locks: &Locks,
    src: &SpecSource,
    review: &Review,
    schema: Option<&Value>,
) -> Result<Saved, ReviewError> {
    let (method, field, location) = validate(review)?;
    if src.path == src.original {
        return Err(ReviewError::NotFound(format!(
            "api '{}': no enriched copy, so nothing generated to review (run `shortlist enrich`)",
            src.id
        )));
    }
    if let (ReviewField::Example, Some(v), Some(s)) = (field, &review.value, schema) {
        let problems = crate::enrich::schema_check::check(s, v);
        if !problems.is_empty() {
            return Err(ReviewError::Invalid(format!(
                "value: the example does not match the parameter's schema: {}",
                problems.join("; ")
            )));
        }
    }
    let lock = locks.of(&src.path);
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    let mut spec = spec_file::read(&src.path).map_err(ReviewError::Io)?;
    let family = spec.family;
    let obj = target(
        &mut spec.doc,
        &review.path,
        method,
        review.param.as_ref(),
        location,
    )?;
    let saved = apply(obj, family, field, review)?;
    spec_file::write(&src.path, &spec.doc).map_err(ReviewError::Io)?;
    Ok(Saved {
        file: src.path.display().to_string(),
        ..saved
    })
}

/// The operation, or its own declaration of the parameter.
fn target<'a>(
    doc: &'a mut Value,
    route: &str,
    method: Method,
    param: Option<&ParamRef>,
    location: Option<ParamLocation>,
) -> Result<&'a mut Map<String, Value>, ReviewError> {
    let what = format!("{} {route}", method.as_str());
    let op = op_mut(doc, route, method)
        .ok_or_else(|| ReviewError::NotFound(format!("{what}: no such operation")))?;
    let (Some(p), Some(loc)) = (param, location) else {
        return Ok(op);
    };
    op.get_mut("parameters")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
        .find(|o| {
            o.get("name").and_then(Value::as_str) == Some(p.name.as_str())
                && o.get("in").and_then(Value::as_str) == Some(loc.as_str())
        })
        .ok_or_else(|| {
            ReviewError::NotFound(format!(
                "{what}: no parameter '{}' in {} with generated values",
                clip(&p.name),
                loc.as_str()
            ))
        })
}

/// Applies the verdict to one object.
fn apply(
    obj: &mut Map<String, Value>,
    family: Family,
    field: ReviewField,
    review: &Review,
) -> Result<Saved, ReviewError> {
    // A rejected value is in the rejection record, not where pending values are.
    let rejected = review.expected.as_ref().unwrap_or(&Value::Null);
    if review.action == Verdict::Restore {
        return restore(obj, field, rejected);
    }
    let marked = obj
        .get(MARKER)
        .and_then(|m| m.get(field.marker()))
        .is_some();
    // A value its retrieval check refused is in the marker entry only: accepting it writes
    // it where it would have gone, rejecting it leaves the field as it is.
    let found = match refused(obj, field, family) {
        Some(l) => Some((l.key, l.value.clone(), true)),
        None => locate(obj, field, family).map(|l| (l.key, l.value.clone(), false)),
    };
    let (key, current, was_refused) = match found {
        Some(f) => f,
        None => {
            return Err(ReviewError::NotFound(format!(
                "no generated {} here",
                field.as_str()
            )))
        }
    };
    if !marked {
        return Err(ReviewError::Conflict(format!(
            "the {} here is not awaiting review (already reviewed?)",
            field.as_str()
        )));
    }
    if review.expected.as_ref().is_some_and(|e| *e != current) {
        return Err(ReviewError::Conflict(format!(
            "the generated {} changed since it was shown; reload and review it again",
            field.as_str()
        )));
    }
    let previous = current.clone();
    let value = match review.action {
        Verdict::Accept => {
            if was_refused {
                obj.insert(key.to_string(), current.clone());
            }
            current
        }
        Verdict::Edit => {
            let v = review.value.clone().unwrap_or(Value::Null);
            obj.insert(key.to_string(), v.clone());
            v
        }
        Verdict::Restore => return restore(obj, field, rejected),
        Verdict::Reject => {
            if !was_refused {
                obj.shift_remove(key);
            }
            rejections::remember(obj, field.marker(), current);
            Value::Null
        }
    };
    unmark(obj, field);
    Ok(Saved {
        file: String::new(),
        key,
        value,
        previous,
    })
}

/// Takes `value` out of the field's rejection record (and the record when it is left
/// empty), so that the next enrichment run may write it again.
fn restore(
    obj: &mut Map<String, Value>,
    field: ReviewField,
    value: &Value,
) -> Result<Saved, ReviewError> {
    let missing = || {
        ReviewError::NotFound(format!(
            "no rejected {} with that value here (restored already?)",
            field.as_str()
        ))
    };
    let record = obj
        .get_mut(REJECTED)
        .and_then(Value::as_object_mut)
        .ok_or_else(missing)?;
    let list = record
        .get_mut(field.marker())
        .and_then(Value::as_array_mut)
        .ok_or_else(missing)?;
    let at = list.iter().position(|v| v == value).ok_or_else(missing)?;
    list.remove(at);
    if list.is_empty() {
        record.shift_remove(field.marker());
    }
    if record.is_empty() {
        obj.shift_remove(REJECTED);
    }
    Ok(Saved {
        file: String::new(),
        key: REJECTED,
        value: Value::Null,
        previous: value.clone(),
    })
}

/// Removes the field's marker entry, and the marker when it is left empty.
fn unmark(obj: &mut Map<String, Value>, field: ReviewField) {
    let empty = match obj.get_mut(MARKER).and_then(Value::as_object_mut) {
        Some(m) => {
            m.shift_remove(field.marker());
            m.is_empty()
        }
        None => true,
    };
    if empty {
        obj.shift_remove(MARKER);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(action: Verdict, value: Option<Value>) -> Review {
        Review {
            api: "x".into(),
            method: "GET".into(),
            path: "/a".into(),
            param: None,
            field: "description".into(),
            action,
            value,
            expected: None,
        }
    }

    fn op() -> Map<String, Value> {
        json!({"operationId": "getA", "description": "getA",
            "x-shortlist-description": "Returns the A.",
            "x-shortlist-summary": "The A.",
            "x-shortlist-generated": {"description": {"generator": "h"}, "summary": {"generator": "h"}}})
        .as_object()
        .cloned()
        .unwrap()
    }

    /// `o` after its generated description was rejected.
    fn rejected(mut o: Map<String, Value>) -> Map<String, Value> {
        let reject = review(Verdict::Reject, None);
        apply(&mut o, Family::OpenApi3, ReviewField::Description, &reject).unwrap();
        o
    }

    #[test]
    fn accept_edit_reject_as_a_person_would() {
        let f = Family::OpenApi3;
        let mut o = op();
        let s = apply(
            &mut o,
            f,
            ReviewField::Description,
            &review(Verdict::Accept, None),
        )
        .unwrap();
        assert_eq!(s.key, "x-shortlist-description");
        assert_eq!(o["x-shortlist-description"], "Returns the A.");
        assert!(o["x-shortlist-generated"].get("description").is_none());
        assert!(o["x-shortlist-generated"].get("summary").is_some());
        // Once reviewed, a second save is a conflict, not a silent overwrite.
        let again = apply(
            &mut o,
            f,
            ReviewField::Description,
            &review(Verdict::Accept, None),
        );
        assert!(matches!(again, Err(ReviewError::Conflict(_))));

        let mut o = op();
        let edit = review(Verdict::Edit, Some(json!("Returns one A.")));
        apply(&mut o, f, ReviewField::Description, &edit).unwrap();
        assert_eq!(o["x-shortlist-description"], "Returns one A.");
        assert_eq!(o["description"], "getA", "the author's text stays");

        let mut o = rejected(op());
        assert!(!o.contains_key("x-shortlist-description"));
        assert_eq!(o["description"], "getA");
        assert_eq!(
            o[crate::enrich::REJECTED]["description"],
            json!(["Returns the A."]),
            "remembered, so that no later run writes it again"
        );
        let mut summary = review(Verdict::Reject, None);
        summary.field = "summary".into();
        apply(&mut o, f, ReviewField::Summary, &summary).unwrap();
        assert!(!o.contains_key(MARKER), "an empty marker goes too");

        let mut stale = review(Verdict::Accept, None);
        stale.expected = Some(json!("Something else."));
        let mut o = op();
        assert!(matches!(
            apply(&mut o, f, ReviewField::Description, &stale),
            Err(ReviewError::Conflict(_))
        ));
    }

    #[test]
    fn a_refused_value_is_written_when_accepted_and_left_out_when_rejected() {
        let f = Family::OpenApi3;
        let refused_op = || {
            json!({"operationId": "getA", "description": "getA",
                "x-shortlist-generated": {"description": {"generator": "m",
                    "check": {"passed": false, "reason": "r", "value": "Returns the A."}}}})
            .as_object()
            .cloned()
            .unwrap()
        };
        let mut o = refused_op();
        let s = apply(
            &mut o,
            f,
            ReviewField::Description,
            &review(Verdict::Accept, None),
        )
        .unwrap();
        assert_eq!(
            s.key, "x-shortlist-description",
            "beside the author's weak text"
        );
        assert_eq!(o["x-shortlist-description"], "Returns the A.");
        assert_eq!(o["description"], "getA");
        assert!(!o.contains_key(MARKER));
        let mut o = refused_op();
        apply(
            &mut o,
            f,
            ReviewField::Description,
            &review(Verdict::Reject, None),
        )
        .unwrap();
        assert!(!o.contains_key("x-shortlist-description") && !o.contains_key(MARKER));
        assert_eq!(o["description"], "getA");
        assert!(crate::enrich::rejections::listed(
            &Value::Object(o),
            "description",
            &json!("Returns the A.")
        ));
    }

    #[test]
    fn a_rejection_is_undone_by_restoring_the_value_it_names() {
        let f = Family::OpenApi3;
        let mut o = rejected(op());
        let mut restore = review(Verdict::Restore, None);
        restore.expected = Some(json!("Something never rejected."));
        assert!(matches!(
            apply(&mut o, f, ReviewField::Description, &restore),
            Err(ReviewError::NotFound(_))
        ));
        restore.expected = Some(json!("Returns the A."));
        let saved = apply(&mut o, f, ReviewField::Description, &restore).unwrap();
        assert_eq!((saved.key, saved.value), (REJECTED, Value::Null));
        assert!(!o.contains_key(REJECTED), "an empty record goes: {o:?}");
        assert!(
            matches!(
                apply(&mut o, f, ReviewField::Description, &restore),
                Err(ReviewError::NotFound(_))
            ),
            "restored already"
        );
        restore.expected = None;
        assert!(validate(&restore)
            .unwrap_err()
            .to_string()
            .starts_with("expected:"));
    }

    #[test]
    fn bad_reviews_name_the_field() {
        let mut r = review(Verdict::Edit, Some(json!("  ")));
        assert!(validate(&r).unwrap_err().to_string().starts_with("value:"));
        r.value = None;
        assert!(validate(&r).unwrap_err().to_string().starts_with("value:"));
        let mut r = review(Verdict::Accept, None);
        r.method = "FETCH".into();
        assert!(validate(&r).unwrap_err().to_string().starts_with("method:"));
        let mut r = review(Verdict::Accept, None);
        r.field = "example".into();
        assert!(validate(&r).unwrap_err().to_string().starts_with("field:"));
        let mut r = review(Verdict::Accept, None);
        r.param = Some(ParamRef {
            name: "q".into(),
            location: "body".into(),
        });
        assert!(validate(&r)
            .unwrap_err()
            .to_string()
            .starts_with("param.in:"));
    }
}
