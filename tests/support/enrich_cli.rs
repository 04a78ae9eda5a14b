//! Driving `shortlist enrich` as a user does (the real binary, real files), plus a tiny
//! spec that has every kind of gap enrichment fills.
//!
//! Use with `#[path = "support/enrich_cli.rs"] mod enrich_cli;`.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The `shortlist` binary with no enrichment settings inherited from the environment.
pub fn shortlist() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shortlist"));
    for var in [
        "SHORTLIST_LLM_URL",
        "SHORTLIST_LLM_MODEL",
        "SHORTLIST_LLM_API_KEY",
        "SHORTLIST_DATA_DIR",
        "RUST_LOG",
    ] {
        c.env_remove(var);
    }
    c.stdin(Stdio::null());
    c
}

/// A finished run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The `--json` summary printed on stdout.
    pub fn summary(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("no JSON summary ({e}); stderr:\n{}", self.stderr))
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// Runs `shortlist enrich <args>` to completion.
pub fn enrich(args: &[&str]) -> Run {
    shortlist()
        .arg("enrich")
        .args(args)
        .output()
        .expect("run shortlist")
        .into()
}

/// Writes `doc` as pretty JSON and returns the path.
pub fn write_json(dir: &Path, name: &str, doc: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    p
}

pub fn read_json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The operation object of an enriched document.
pub fn op<'a>(doc: &'a Value, path: &str, method: &str) -> &'a Value {
    &doc["paths"][path][method]
}

/// The operation-level parameter `name` of an operation.
pub fn param<'a>(op: &'a Value, name: &str) -> &'a Value {
    op["parameters"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no operation-level parameter {name} in {op}"))
}

/// Three endpoints with every gap: no description at all (with a path-level parameter and
/// a pattern), a weak description (with a `$ref` parameter, bounds, an enum and a
/// credential), and good human text that must survive untouched.
pub fn tiny_spec() -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Movie DB", "version": "1"},
        "paths": {
            "/movie/{movie_id}/credits": {
                "parameters": [{"name": "movie_id", "in": "path", "required": true,
                    "schema": {"type": "integer", "minimum": 1}}],
                "get": {
                    "operationId": "getMovieCredits",
                    "parameters": [{"name": "language", "in": "query",
                        "schema": {"type": "string", "pattern": "^[a-z]{2}-[A-Z]{2}$"}}],
                    "responses": {"200": {"description": "", "content": {"application/json": {
                        "schema": {"type": "object", "properties": {
                            "cast": {"type": "array", "items": {"type": "object",
                                "properties": {"name": {"type": "string"}, "character": {"type": "string"}}}}}}}}}}
                }
            },
            "/search/movie": {
                "get": {
                    "operationId": "searchMovie",
                    "description": "searchMovie",
                    "parameters": [
                        {"$ref": "#/components/parameters/Query"},
                        {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
                        {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["popularity.desc", "release_date.desc"]}},
                        {"name": "api_key", "in": "query", "schema": {"type": "string"}}
                    ],
                    "responses": {"200": {"description": "OK"}}
                }
            },
            "/lists": {
                "post": {
                    "operationId": "createList",
                    "summary": "Create a list",
                    "description": "Creates a new, empty list owned by the account.",
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                        "properties": {"name": {"type": "string"}, "description": {"type": "string"}}}}}},
                    "responses": {"201": {"description": "Created"}}
                }
            }
        },
        "components": {"parameters": {"Query": {"name": "query", "in": "query", "required": true,
            "schema": {"type": "string", "minLength": 1}}}}
    })
}

/// A spec (`api.json` in `dir`) of GET endpoints at `paths`, each with an operationId only
/// (`/alpha` -> `getalpha`) plus `params`: endpoints with nothing but their names.
pub fn bare_gets(dir: &Path, paths: &[&str], params: Value) -> PathBuf {
    let mut p = serde_json::Map::new();
    for path in paths {
        let id = format!("get{}", path.trim_start_matches('/'));
        p.insert(
            path.to_string(),
            json!({"get": {"operationId": id, "parameters": params, "responses": {"200": {"description": "OK"}}}}),
        );
    }
    write_json(
        dir,
        "api.json",
        &json!({"openapi": "3.0.0", "info": {"title": "T", "version": "1"}, "paths": p}),
    )
}
