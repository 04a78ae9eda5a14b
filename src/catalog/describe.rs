//! Which description of an operation or parameter is shown, and whether it was generated.

use super::endpoint::*;
use serde_json::{Map, Value};

/// The description to show and, when it was generated, its provenance.
///
/// The enricher fills an empty `description` in place (with a marker) and writes an
/// alternative to a human text beside it, in `x-shortlist-description`. The alternative is
/// shown only when the human text is weak (`catalog::weak`): human text wins otherwise.
pub fn pick_description(
    obj: &Map<String, Value>,
    human: Option<String>,
    names: &[&str],
) -> (Option<String>, Option<Provenance>) {
    let marker = provenance(obj.get("x-shortlist-generated"), "description");
    let beside = obj
        .get("x-shortlist-description")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string);
    match (human, beside) {
        (Some(h), Some(g)) if super::weak::is_weak(&h, names) => (
            Some(g),
            marker.map(|p| Provenance {
                replaced: Some(h),
                ..p
            }),
        ),
        (Some(h), Some(_)) => (Some(h), None),
        (None, Some(g)) => (Some(g), marker),
        (Some(h), None) => (Some(h), marker),
        (None, None) => (None, None),
    }
}

/// Reads the provenance marker that the enricher writes: `x-shortlist-generated:
/// {description: {generator, template, date}, ...}`.
///
/// An entry whose retrieval check failed (`check: {"passed": false, ...}`) records a value
/// that was refused and not written: it is the provenance of nothing shown.
pub fn provenance(marker: Option<&Value>, field: &str) -> Option<Provenance> {
    let m = marker?.get(field)?;
    if m.pointer("/check/passed") == Some(&Value::Bool(false)) {
        return None;
    }
    Some(Provenance {
        replaced: None,
        generator: m.get("generator")?.as_str()?.to_string(),
        template: m
            .get("template")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        date: m
            .get("date")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}
