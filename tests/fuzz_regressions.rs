//! Inputs that made a fuzz target (fuzz/, see docs/fuzzing.md) fail, fed through the same
//! code path as plain tests, so the bug they found stays fixed without cargo fuzz.
//!
//! Each test names the target, the crash artifact and the invariant that failed.

use serde_json::{json, Map, Value};
use shortlist::catalog::normalize::normalize;
use shortlist::catalog::resolve::{ref_of, Resolver};
use shortlist::catalog::{Catalog, CatalogConfig};
use shortlist::invoke::auth::Credentials;
use shortlist::invoke::request::build_request;
use shortlist::invoke::validate;
use std::path::Path;

/// The example catalog `invoke_args` loads at start-up.
fn example_catalog() -> Catalog {
    let toml = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs/catalog.toml");
    Catalog::load(&CatalogConfig::load(&toml).expect("catalogs/catalog.toml loads"))
}

/// The check `ref_resolve` makes on every inlined schema: no `$ref` is left to follow
/// (the catalog promises self-contained endpoints).
fn assert_no_ref(v: &Value, at: &str) {
    match v {
        Value::Object(m) => {
            assert!(ref_of(v).is_none(), "unresolved $ref left at {at}: {v}");
            for (k, c) in m {
                assert_no_ref(c, &format!("{at}/{k}"));
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                assert_no_ref(c, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

/// `ref_resolve`, crash-bba998519f663b8db5cd2da2312af0b9561fdb20 (8 bytes, found from an
/// empty corpus within a minute): keys next to a `$ref` were copied onto the resolved
/// schema as written, so a `$ref` inside them (`items`, `properties`, `allOf`, ...) was
/// never followed and reached the tool schema as a dangling reference (which strict_schema
/// then dropped, leaving `items: {}`). The same held for the keys of a dangling `$ref`.
#[test]
fn refs_inside_keys_next_to_a_ref_are_inlined() {
    // The generated document of the crash, reduced to what matters.
    let doc = json!({
        "openapi": "3.1.0",
        "info": {"title": "fuzz", "version": "1"},
        "paths": {"/r0": {"post": {
            "requestBody": {"content": {"application/json": {"schema":
                {"$ref": "#/components/schemas/S0"}}}},
            "responses": {"200": {"description": "ok"}}}}},
        "components": {"schemas": {
            "S0": {"$ref": "#/components/schemas/S1",
                   "items": {"$ref": "#/components/schemas/S0", "description": "sibling description"}},
            "S1": {"type": "string"},
            "Leaf": {"type": "integer"},
            "Dangling": {"$ref": "#/components/schemas/Missing",
                         "properties": {"x": {"$ref": "#/components/schemas/Leaf"}}}}}
    });
    let path = Path::new("/nonexistent/fuzz/spec.json");
    let mut res = Resolver::new(path, doc.clone());
    for name in ["S0", "Dangling"] {
        let schema = &doc["components"]["schemas"][name];
        for budget in [0, 300, 1500] {
            let out = res.inline_schema(0, schema, "#/fuzz", budget);
            assert_no_ref(&out, name);
        }
    }
    // What the siblings now resolve to.
    let out = res.inline_schema(0, &json!({"$ref": "#/components/schemas/S0"}), "#", 1500);
    assert_eq!(
        out,
        json!({"type": "string", "items": {"description": "(recursive: S0)"}})
    );
    let direct = res.inline_schema(0, &doc["components"]["schemas"]["S0"], "#", 1500);
    assert_eq!(direct["items"]["type"], "string");
    assert_eq!(direct["items"]["description"], "sibling description");
    let dangling = res.inline_schema(0, &doc["components"]["schemas"]["Dangling"], "#", 300);
    assert_eq!(dangling, json!({"properties": {"x": {"type": "integer"}}}));

    let n = normalize(path, "fuzz", doc, false).expect("normalizes");
    let body = n.endpoints[0].request_body.as_ref().expect("has a body");
    assert_no_ref(&body.schema, "body");
    assert_eq!(body.schema, out);
}

/// `ref_resolve`, slow units rather than a crash: the corpus ran at 7 executions a second
/// (170 ms each, nearly all of it copying). Every `$ref` the inliner met was resolved to a
/// full copy of its target before anything else happened, even when the target was
/// already being expanded (and became a two-key placeholder) or the budget had run out.
/// A schema with many properties pointing back at itself (or at `#`, the whole document)
/// therefore cost refs x target-size copies per schema: a few hundred KB of spec took
/// minutes to load. The node budget bounds the output, not the copying.
#[test]
fn refs_to_a_big_schema_are_not_copied_per_use() {
    let mut props = serde_json::Map::new();
    for i in 0..1000 {
        props.insert(format!("p{i}"), json!({"$ref": "#/components/schemas/Big"}));
    }
    let mut paths = serde_json::Map::new();
    for i in 0..40 {
        paths.insert(
            format!("/r{i}"),
            json!({"post": {
                "requestBody": {"content": {"application/json": {"schema":
                    {"$ref": "#/components/schemas/Big"}}}},
                "parameters": [{"name": "q", "in": "query", "schema": {"$ref": "#"}}],
                "responses": {"200": {"description": "ok", "content": {"application/json":
                    {"schema": {"$ref": "#/components/schemas/Big"}}}}}}}),
        );
    }
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "big", "version": "1"},
        "paths": paths,
        "components": {"schemas": {"Big": {"type": "object", "properties": props}}}
    });
    let start = std::time::Instant::now();
    let n = normalize(Path::new("/nonexistent/fuzz/spec.json"), "fuzz", doc, false).expect("loads");
    let took = start.elapsed();
    assert_eq!(n.endpoints.len(), 40);
    let body = &n.endpoints[0].request_body.as_ref().expect("body").schema;
    assert_eq!(body["properties"]["p0"]["description"], "(recursive: Big)");
    assert!(took.as_secs_f64() < 5.0, "loading took {took:?}");
}

/// `invoke_args`, crash-d55a4734fb4a9fe465a3cc7125b19f612442a722 (3 bytes, first minute):
/// with a `base_url` that carries credentials as user info, the request's `display_url`
/// (the URL shown in error messages, logs and hence to the model) kept `user:pw@`,
/// although it exists precisely to show the URL without credentials.
#[test]
fn display_url_hides_user_info() {
    let cat = example_catalog();
    let ep = cat
        .endpoint("spotify__get-current-users-profile")
        .expect("GET /me is in the example catalog");
    let mut cfg = cat.api_config(&ep.api).expect("spotify config").clone();
    cfg.base_url = Some("https://user:pw@api.example.com:8443/v1/x?k=1".into());
    let valid = validate(ep, &Map::new()).expect("GET /me takes no arguments");
    let req = build_request(ep, Some(&cfg), &valid, &Credentials::default()).expect("builds");
    // The request itself still carries the user info: sending it is the config's call.
    assert_eq!(
        req.url.as_str(),
        "https://user:pw@api.example.com:8443/v1/x/me?k=1"
    );
    assert_eq!(req.display_url, "https://api.example.com:8443/v1/x/me");
    assert!(!format!("{req:?}").contains("pw"), "{req:?}");
}

/// `spec_nesting`, `timeout-aeea390d…` (6 bytes): a 138-byte YAML spec whose `x` holds 55
/// explicit keys nested in keys (`? ? ? … 1`). Each collection used as a key became its
/// JSON text, which escaped the text of the key inside it: the escaping doubled at every
/// level, and reading took more than 2 GB before libFuzzer stopped it. Keys made of
/// collections are now cut to 256 characters.
#[test]
fn keys_nested_in_keys_do_not_double_per_level() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested.yaml");
    let text = format!("openapi: 3.0.0\npaths: {{}}\nx:\n  {}1\n", "? ".repeat(55));
    std::fs::write(&path, text).expect("write spec");
    let doc = shortlist::catalog::source::read_document(&path)
        .expect("55 levels are within the nesting limit")
        .value;
    let key = doc["x"]
        .as_object()
        .and_then(|m| m.keys().next())
        .expect("x holds a key")
        .clone();
    assert!(key.len() <= 256, "{} bytes", key.len());
}

/// `redact_secrets`, `timeout-b97f7df9…` (124 bytes): a secret with a run of backslashes
/// against a text of long backslash runs. A backslash of the secret matches one to eight
/// backslashes of the text (escaped once, twice, ...), and the search tried every way to
/// share the text's run among the secret's, again after every failure: exponential, and
/// past libFuzzer's 10 s limit. Places already seen to fail are now remembered.
#[test]
fn backslash_runs_do_not_make_redaction_exponential() {
    use shortlist::invoke::redact::{Redactor, MASK};
    let secret = format!("15api0f{}FFFF", "\\".repeat(24));
    let mut r = Redactor::default();
    r.add(&secret);
    // Almost the secret, many times over: long runs, then a character that breaks it.
    let near = format!("15api0f{}G", "\\".repeat(60));
    let text = format!("{} and then {secret} itself", near.repeat(8));
    let started = std::time::Instant::now();
    let out = r.redact(&text);
    let cut = r.redact_cut(&format!("{near}15api0f{}", "\\".repeat(40)));
    // Whether it ends at all: the fix takes milliseconds, the exponential search did not
    // end in an hour.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(out.contains(MASK) && !out.contains(&secret), "{out}");
    assert!(
        out.starts_with(&near),
        "text that is not the secret stays: {out}"
    );
    assert!(cut.ends_with(MASK), "a cut secret's start is masked: {cut}");
}
