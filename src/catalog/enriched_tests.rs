use super::*;
use serde_json::json;
use std::path::Path;

fn original() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "T", "version": "1"},
        "servers": [{"url": "https://old.example"}],
        "paths": {
            "/a": {"get": {"operationId": "getA",
                "parameters": [{"$ref": "#/components/parameters/Q"}],
                "responses": {"200": {"description": "ok"}}}},
            "/b": {"get": {"operationId": "getB",
                "parameters": [{"name": "n", "in": "query", "schema": {"type": "integer"}}],
                "responses": {"200": {"description": "ok"}}}},
            "/c": {"delete": {"operationId": "deleteC", "responses": {"204": {"description": "ok"}}}}
        },
        "components": {"parameters": {"Q": {"name": "q", "in": "query",
            "schema": {"type": "string"}}}}
    })
}

/// The enricher's work on `doc`: text on every operation and parameter, `q` copied from
/// its `$ref` into the operation as `apply` does, then stamped.
fn enriched(doc: &Value) -> Value {
    let mut c = doc.clone();
    for (route, method) in [("/a", "get"), ("/b", "get"), ("/c", "delete")] {
        let op = &mut c["paths"][route][method];
        op["description"] = json!(format!("Generated for {route}."));
        op["x-shortlist-generated"] = json!({"description": {"generator": "heuristic",
            "template": "", "date": "2025-01-01"}});
    }
    c["paths"]["/a"]["get"]["parameters"] = json!([{"name": "q", "in": "query",
        "schema": {"type": "string"}, "description": "What to look for.", "example": "cats",
        "x-shortlist-generated": {"example": {"generator": "heuristic", "template": "",
        "date": "2025-01-01"}}}]);
    c["paths"]["/b"]["get"]["parameters"][0]["description"] = json!("How many.");
    stamp(&mut c, &origin(doc));
    c
}

fn write(dir: &Path, name: &str, doc: &Value) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    p
}

fn load_pair(orig: &Value, copy: &Value) -> Normalized {
    let dir = tempfile::tempdir().unwrap();
    let original = write(dir.path(), "t.json", orig);
    let path = write(dir.path(), "t.enriched.json", copy);
    load(&SpecSource {
        id: "t".into(),
        path,
        original,
        config_index: 0,
    })
    .unwrap()
}

fn ep<'a>(n: &'a Normalized, path: &str) -> &'a crate::catalog::Endpoint {
    n.endpoints.iter().find(|e| e.path == path).unwrap()
}

#[test]
fn an_unchanged_copy_lends_all_its_text_and_says_nothing() {
    let doc = original();
    let n = load_pair(&doc, &enriched(&doc));
    assert!(n.warnings.is_empty(), "{:?}", n.warnings);
    let a = ep(&n, "/a");
    assert_eq!(a.description.as_deref(), Some("Generated for /a."));
    assert!(a.description_provenance.is_some());
    let q = &a.parameters[0];
    assert_eq!(q.description.as_deref(), Some("What to look for."));
    assert_eq!(q.example, Some(json!("cats")));
    assert!(q.example_provenance.is_some());
    assert_eq!(
        ep(&n, "/b").parameters[0].description.as_deref(),
        Some("How many.")
    );
}

#[test]
fn a_stale_copy_lends_text_only_to_unchanged_operations_and_names_the_rest() {
    let doc = original();
    let copy = enriched(&doc);
    let mut edited = doc.clone();
    edited["servers"] = json!([{"url": "https://new.example"}]);
    edited["paths"].as_object_mut().unwrap().shift_remove("/c");
    // A change in `components` changes the operation that uses it.
    edited["components"]["parameters"]["Q"]["schema"] = json!({"type": "integer"});
    let n = load_pair(&edited, &copy);
    assert_eq!(n.endpoints.len(), 2);
    let a = ep(&n, "/a");
    assert!(a.description.is_none() && a.description_provenance.is_none());
    assert_eq!(
        a.parameters[0].schema["type"], "integer",
        "the original's schema"
    );
    assert!(a.parameters[0].description.is_none());
    let b = ep(&n, "/b");
    assert_eq!(b.description.as_deref(), Some("Generated for /b."));
    assert_eq!(b.servers, ["https://new.example"]);
    assert_eq!(n.warnings.len(), 1, "{:?}", n.warnings);
    let w = n.warnings[0].to_string();
    assert!(w.contains("t.enriched.json") && w.contains("api 't'") && w.contains("stale"));
    assert!(
        w.contains("changed: GET /a") && w.contains("removed: DELETE /c"),
        "{w}"
    );
    assert!(!w.contains("GET /b"), "{w}");
}

#[test]
fn text_never_brings_the_copys_definitions_along() {
    // A copy edited by hand beyond its text: its servers, schemas and endpoints are not
    // served even where the operation's digest matches.
    let doc = original();
    let mut copy = enriched(&doc);
    copy["servers"] = json!([{"url": "https://elsewhere.example"}]);
    copy["paths"]["/b"]["get"]["parameters"][0]["schema"] = json!({"type": "string"});
    copy["paths"]["/b"]["get"]["security"] = json!([]);
    copy["paths"]["/x"] = json!({"get": {"responses": {"200": {"description": "ok"}}}});
    let n = load_pair(&doc, &copy);
    assert_eq!(n.endpoints.len(), 3);
    let b = ep(&n, "/b");
    assert_eq!(b.servers, ["https://old.example"]);
    assert_eq!(b.parameters[0].schema["type"], "integer");
    assert_eq!(b.parameters[0].description.as_deref(), Some("How many."));
}

#[test]
fn a_copy_without_digests_lends_nothing_and_says_so() {
    let doc = original();
    let mut copy = enriched(&doc);
    copy.as_object_mut().unwrap().shift_remove(MADE_FROM);
    let n = load_pair(&doc, &copy);
    assert!(ep(&n, "/a").description.is_none());
    assert_eq!(n.warnings.len(), 1);
    let w = n.warnings[0].to_string();
    assert!(
        w.contains("t.enriched.json") && w.contains("shortlist enrich"),
        "{w}"
    );
}

#[test]
fn an_unreadable_copy_serves_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let original = write(dir.path(), "t.json", &original());
    let path = dir.path().join("t.enriched.json");
    std::fs::write(&path, "{ not json").unwrap();
    let n = load(&SpecSource {
        id: "t".into(),
        path,
        original,
        config_index: 0,
    })
    .unwrap();
    assert_eq!(n.endpoints.len(), 3);
    assert!(n.warnings[0].to_string().contains("cannot be read"));
}

#[test]
fn digests_ignore_key_order_and_packing_but_not_content() {
    let doc = original();
    let text = serde_json::to_string(&doc).unwrap();
    let packed = compact::from_json_str_with(&text, true).unwrap();
    assert!(packed["paths"]["/a"].is_string());
    assert_eq!(origin(&doc), origin(&packed));
    let mut reordered = json!({"paths": doc["paths"].clone()});
    for (k, v) in doc.as_object().unwrap() {
        reordered[k] = v.clone();
    }
    assert_eq!(origin(&doc), origin(&reordered));
    let mut other = doc.clone();
    other["paths"]["/b"]["get"]["parameters"][0]["required"] = json!(true);
    let (o, p) = (origin(&doc), origin(&other));
    assert_ne!(o.document, p.document);
    assert_eq!(
        o.operations[&("/a".to_string(), "get")],
        p.operations[&("/a".to_string(), "get")]
    );
    assert_ne!(
        o.operations[&("/b".to_string(), "get")],
        p.operations[&("/b".to_string(), "get")]
    );
}

#[test]
fn the_text_fields_are_the_enrichers() {
    use crate::enrich::{DESCRIPTION_BESIDE, MARKER, QUESTIONS, REJECTED, SUMMARY, X_EXAMPLE};
    for k in [DESCRIPTION_BESIDE, MARKER, QUESTIONS, REJECTED, SUMMARY] {
        assert!(OP_TEXT.contains(&k), "{k}");
    }
    for k in [DESCRIPTION_BESIDE, MARKER, REJECTED, X_EXAMPLE] {
        assert!(PARAM_TEXT.contains(&k), "{k}");
    }
}
