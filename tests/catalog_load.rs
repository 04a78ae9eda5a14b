//! Catalog loading against the real example specs and against broken input.

use serde_json::json;
use shortlist::catalog::{AuthScheme, Catalog, Method, ParamLocation, Severity};
use std::path::{Path, PathBuf};

fn catalogs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs")
}

fn load(paths: &[PathBuf]) -> Catalog {
    Catalog::load_paths(paths)
}

#[test]
fn example_catalogs_load_fully() {
    let c = load(&[catalogs()]);
    assert_eq!(c.problems, vec![], "the examples load without problems");
    let count = |api: &str| c.endpoints.iter().filter(|e| e.api == api).count();
    assert_eq!(count("tmdb"), 54);
    assert_eq!(
        count("spotify"),
        40,
        "RestBench's Spotify spec fails strict validation 93 times, yet loads fully"
    );
    assert_eq!(count("musixmatch"), 16);
    assert_eq!(count("adyen_fund"), 8);
    assert_eq!(count("open_meteo"), 2);
    let versions: Vec<&str> = c.apis.iter().map(|a| a.spec_version.as_str()).collect();
    assert!(
        versions.contains(&"2.0") && versions.contains(&"3.1.0") && versions.contains(&"3.0.0")
    );
}

#[test]
fn tool_names_are_valid_unique_and_prefixed() {
    let c = load(&[catalogs()]);
    let re = regex::Regex::new(r"^[a-zA-Z0-9_-]{1,64}$").unwrap();
    let mut seen = std::collections::HashSet::new();
    for e in &c.endpoints {
        assert!(re.is_match(&e.tool_name), "{}", e.tool_name);
        assert!(
            seen.insert(e.tool_name.to_ascii_lowercase()),
            "duplicate {}",
            e.tool_name
        );
        assert!(
            e.tool_name.starts_with(&format!("{}__", e.api)),
            "{}",
            e.tool_name
        );
    }
    // Stable: loading again, or loading in another order, gives the same names.
    let again = load(&[
        catalogs().join("tmdb.json"),
        catalogs().join("spotify.json"),
        catalogs().join("musixmatch.yaml"),
        catalogs().join("adyen_fund.yaml"),
        catalogs().join("open_meteo.yaml"),
    ]);
    let names = |c: &Catalog| {
        c.endpoints
            .iter()
            .map(|e| e.tool_name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&c), names(&again));
    // A single-API catalog does not prefix.
    let single = load(&[catalogs().join("tmdb.json")]);
    assert!(single
        .endpoints
        .iter()
        .all(|e| !e.tool_name.starts_with("tmdb__")));
}

#[test]
fn tmdb_endpoints_are_normalized() {
    let c = load(&[catalogs().join("tmdb.json")]);
    let ep = c
        .endpoints
        .iter()
        .find(|e| e.key() == "GET /search/movie")
        .expect("GET /search/movie");
    assert_eq!(ep.servers, ["https://api.themoviedb.org/3"]);
    let q = ep.parameters.iter().find(|p| p.name == "query").unwrap();
    assert_eq!(q.location, ParamLocation::Query);
    assert!(q.required);
    let page = ep.parameters.iter().find(|p| p.name == "page").unwrap();
    assert!(!page.required);
    assert_eq!(page.schema["type"], "integer");
    let credits = c
        .endpoints
        .iter()
        .find(|e| e.key() == "GET /movie/{movie_id}/credits")
        .unwrap();
    let id = credits
        .parameters
        .iter()
        .find(|p| p.name == "movie_id")
        .unwrap();
    assert_eq!(id.location, ParamLocation::Path);
    assert!(id.required);
}

#[test]
fn spotify_request_bodies_security_and_refs() {
    let c = load(&[catalogs().join("spotify.json")]);
    let add = c
        .endpoints
        .iter()
        .find(|e| e.key() == "POST /playlists/{playlist_id}/tracks")
        .unwrap();
    let body = add
        .request_body
        .as_ref()
        .expect("request body from requestBody");
    assert_eq!(body.content_type, "application/json");
    assert!(body.schema["properties"]["uris"].is_object());
    assert!(
        matches!(&add.security[0].schemes[0].1, AuthScheme::OAuth2 { scopes } if scopes.iter().any(|s| s.starts_with("playlist-modify")))
    );
    // Parameters declared by $ref into #/components/parameters are resolved.
    let album = c
        .endpoints
        .iter()
        .find(|e| e.key() == "GET /albums/{id}")
        .unwrap();
    let market = album
        .parameters
        .iter()
        .find(|p| p.name == "market")
        .expect("market via $ref");
    assert!(market.description.as_deref().unwrap_or("").len() > 20);
    // Response fields come through $refs into #/components/schemas.
    let search = c
        .endpoints
        .iter()
        .find(|e| e.key() == "GET /search")
        .unwrap();
    assert!(
        search.response_fields.iter().any(|f| f == "id"),
        "{:?}",
        search.response_fields
    );
}

#[test]
fn swagger2_servers_params_and_security() {
    let c = load(&[catalogs().join("musixmatch.yaml")]);
    let ep = c
        .endpoints
        .iter()
        .find(|e| e.key() == "GET /track.lyrics.get")
        .unwrap();
    assert_eq!(ep.servers, ["https://api.musixmatch.com/ws/1.1"]);
    assert!(ep
        .parameters
        .iter()
        .any(|p| p.name == "track_id" && p.location == ParamLocation::Query));
    let schemes: Vec<&AuthScheme> = ep
        .security
        .iter()
        .flat_map(|r| r.schemes.iter().map(|(_, s)| s))
        .collect();
    assert!(
        schemes.contains(&&AuthScheme::ApiKey {
            name: "apikey".into(),
            location: ParamLocation::Query
        }),
        "{schemes:?}"
    );
}

#[test]
fn openapi31_request_body() {
    let c = load(&[catalogs().join("adyen_fund.yaml")]);
    let ep = c
        .endpoints
        .iter()
        .find(|e| e.key() == "POST /transferFunds")
        .unwrap();
    assert_eq!(ep.method, Method::Post);
    let body = ep.request_body.as_ref().unwrap();
    assert!(
        body.schema["properties"]["amount"].is_object(),
        "{}",
        body.schema
    );
    assert!(ep
        .security
        .iter()
        .any(|r| r.schemes.iter().any(|(_, s)| *s == AuthScheme::Basic)));
}

// ---- bad input ----

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn one_problem(c: &Catalog, file: &str) -> String {
    let p: Vec<_> = c
        .problems
        .iter()
        .filter(|p| p.file.ends_with(file))
        .collect();
    assert!(
        !p.is_empty(),
        "expected a problem for {file}, got {:?}",
        c.problems
    );
    p[0].to_string()
}

const GOOD: &str = r#"{"openapi": "3.0.0", "info": {"title": "Good", "version": "1"},
  "paths": {"/pets": {"get": {"operationId": "listPets", "summary": "List pets", "responses": {"200": {"description": "ok"}}}}}}"#;

#[test]
fn broken_specs_are_reported_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "good.json", GOOD);
    write(
        d,
        "bad_yaml.yaml",
        "openapi: 3.0.0\npaths:\n  /a: [unclosed\n",
    );
    write(
        d,
        "bad_json.json",
        "{\"openapi\": \"3.0.0\", \"paths\": {,}}",
    );
    write(
        d,
        "nopaths.yaml",
        "openapi: 3.0.0\ninfo: {title: x, version: '1'}\n",
    );
    write(
        d,
        "version.yaml",
        "swagger: '1.2'\ninfo: {title: x, version: '1'}\npaths: {}\n",
    );
    write(
        d,
        "dangling.json",
        r##"{"openapi": "3.0.0", "info": {"title": "D", "version": "1"}, "paths": {"/a": {"get": {
        "parameters": [{"$ref": "#/components/parameters/Nope"}],
        "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}},
        "responses": {}}}}}"##,
    );
    write(
        d,
        "cycle.json",
        r##"{"openapi": "3.0.0", "info": {"title": "C", "version": "1"}, "paths": {"/a": {"get": {
        "parameters": [{"$ref": "#/components/parameters/A"}], "responses": {}}}},
        "components": {"parameters": {"A": {"$ref": "#/components/parameters/B"}, "B": {"$ref": "#/components/parameters/A"}},
        "schemas": {"Self": {"$ref": "#/components/schemas/Self"}}}}"##,
    );
    let mut huge = String::from(
        r#"{"openapi": "3.0.0", "info": {"title": "H", "version": "1"}, "paths": {"/h": {"get": {"description": ""#,
    );
    huge.push_str(&"lorem ipsum ".repeat(5 * 1024 * 1024 / 12));
    huge.push_str(r#"", "responses": {}}}}}"#);
    write(d, "huge.json", huge);
    let mut latin1 = b"openapi: 3.0.0\ninfo: {title: caf".to_vec();
    latin1.extend_from_slice(&[0xe9, 0xff]);
    latin1.extend_from_slice(b", version: '1'}\npaths:\n  /x:\n    get:\n      responses: {}\n");
    write(d, "latin1.yaml", latin1);

    let c = load(&[d.to_path_buf(), d.join("missing.yaml")]);
    let apis: Vec<&str> = c.apis.iter().map(|a| a.id.as_str()).collect();
    for id in ["good", "dangling", "cycle", "huge", "latin1"] {
        assert!(
            apis.contains(&id),
            "{id} should still load (degraded): {apis:?} {:?}",
            c.problems
        );
    }
    for id in ["bad_yaml", "bad_json", "nopaths", "version"] {
        assert!(!apis.contains(&id), "{id} must be skipped");
    }
    assert!(one_problem(&c, "bad_yaml.yaml").contains("invalid YAML"));
    assert!(one_problem(&c, "bad_json.json").contains("invalid JSON at line 1"));
    assert!(one_problem(&c, "nopaths.yaml").contains("#/paths"));
    assert!(one_problem(&c, "version.yaml").contains("unsupported Swagger version '1.2'"));
    assert!(one_problem(&c, "missing.yaml").contains("no such file"));
    let dangling: Vec<String> = c
        .problems
        .iter()
        .filter(|p| p.file.ends_with("dangling.json"))
        .map(|p| p.to_string())
        .collect();
    assert!(
        dangling
            .iter()
            .any(|p| p.contains("#/paths/~1a/get/parameters/0") && p.contains("Nope")),
        "{dangling:?}"
    );
    assert!(
        dangling
            .iter()
            .any(|p| p.contains("requestBody") && p.contains("Missing")),
        "{dangling:?}"
    );
    assert!(one_problem(&c, "cycle.json").contains("cycle"));
    assert!(one_problem(&c, "latin1.yaml").contains("not valid UTF-8"));
    assert_eq!(
        c.problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count(),
        5
    );
    // The 5 MB description is kept (trimming happens where text is used), without a panic.
    let h = c.endpoints.iter().find(|e| e.api == "huge").unwrap();
    assert!(h.description.as_ref().unwrap().len() > 5_000_000 - 100);
    assert!(h.one_line().chars().count() <= 200);
}

#[test]
fn sibling_file_refs_resolve_and_stay_inside_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("common")).unwrap();
    write(
        &d.join("common"),
        "schemas.yaml",
        "Pet:\n  type: object\n  properties:\n    name: {type: string}\n",
    );
    let spec = json!({"openapi": "3.1.0", "info": {"title": "S", "version": "1"}, "paths": {"/pets": {"post": {
        "requestBody": {"content": {"application/json": {"schema": {"$ref": "common/schemas.yaml#/Pet"}}}},
        "parameters": [{"name": "x", "in": "query", "schema": {"$ref": "../../../etc/passwd#/x"}}],
        "responses": {}}}}});
    write(d, "api.json", spec.to_string());
    let c = load(&[d.join("api.json")]);
    let ep = &c.endpoints[0];
    assert_eq!(
        ep.request_body.as_ref().unwrap().schema["properties"]["name"]["type"],
        "string"
    );
    assert!(
        c.problems.iter().any(|p| p.message.contains("etc/passwd")),
        "{:?}",
        c.problems
    );
}

#[test]
fn deep_recursion_and_expansion_stay_bounded() {
    // 300 nested arrays would overflow a naive recursive walker; serde's own limit and the
    // resolver's depth bound must turn it into an error or a truncation, not a crash.
    let dir = tempfile::tempdir().unwrap();
    let mut nested = String::new();
    for _ in 0..300 {
        nested.push('[');
    }
    for _ in 0..300 {
        nested.push(']');
    }
    let text = format!(
        r#"{{"openapi": "3.0.0", "info": {{"title": "N", "version": "1"}}, "x-deep": {nested}, "paths": {{"/a": {{"get": {{"responses": {{}}}}}}}}}}"#
    );
    write(dir.path(), "deep.json", text);
    let c = load(&[dir.path().join("deep.json")]);
    assert!(
        c.endpoints.len() == 1 || c.errors().count() == 1,
        "{:?}",
        c.problems
    );
}
