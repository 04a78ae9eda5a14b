//! Degrading a spec to "minimal metadata", the ACE way, to measure what enrichment recovers.
//!
//! Kept: operationId, method, path, the API title and version, parameter names, locations
//! and types with their constraints (enum, format, bounds, defaults), request and response
//! schemas, security and servers. Dropped: every summary, description, title (except the
//! API's), example and example set, tag, external doc link and vendor extension. Response
//! objects keep an empty `description` because OpenAPI requires one, so the result is still
//! a valid document of the same version.
//!
//! Keys are judged by where they sit: inside `properties`, `paths`, `responses`, `content`
//! and the other name-keyed maps, a key is a name (a property may be called `description`),
//! never a keyword.

use serde_json::{Map, Value};

/// Keywords removed wherever they are keywords.
const DROP: &[&str] = &[
    "summary",
    "description",
    "title",
    "example",
    "examples",
    "externalDocs",
    "tags",
];

/// Maps whose keys are names chosen by the author, not keywords.
const NAMED_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "schemas",
    "parameters",
    "requestBodies",
    "headers",
    "securitySchemes",
    "securityDefinitions",
    "links",
    "callbacks",
    "content",
    "variables",
    "mapping",
    "encoding",
    "pathItems",
    "webhooks",
];

/// Degrades a whole spec document in place.
pub fn degrade(doc: &mut Value) {
    let Some(root) = doc.as_object_mut() else {
        return;
    };
    root.retain(|k, _| !DROP.contains(&k.as_str()) && !k.starts_with("x-"));
    for (k, v) in root.iter_mut() {
        if k == "info" {
            // The API title identifies the API in every prompt and doc text; ACE keeps it.
            if let Value::Object(info) = v {
                info.retain(|k, _| k == "title" || k == "version");
            }
        } else {
            child(k, v, 0);
        }
    }
}

/// The operation methods of a path item.
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Degrades a spec but gives each operation back its own `summary` and `description`:
/// what a perfect enricher of endpoint texts could recover (the oracle of a measurement).
pub fn degrade_keeping_endpoint_texts(doc: &mut Value) {
    let mut kept: Vec<(String, &str, &str, Value)> = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (route, item) in paths {
            for m in METHODS {
                for k in ["summary", "description"] {
                    if let Some(v) = item.get(*m).and_then(|op| op.get(k)) {
                        kept.push((route.clone(), m, k, v.clone()));
                    }
                }
            }
        }
    }
    degrade(doc);
    for (route, m, k, v) in kept {
        if let Some(op) = doc
            .get_mut("paths")
            .and_then(|p| p.get_mut(&route))
            .and_then(|i| i.get_mut(m))
            .and_then(Value::as_object_mut)
        {
            op.insert(k.to_string(), v);
        }
    }
}

fn walk(obj: &mut Map<String, Value>, depth: usize) {
    if depth > 64 {
        return;
    }
    obj.retain(|k, _| !DROP.contains(&k.as_str()) && !k.starts_with("x-"));
    for (k, v) in obj.iter_mut() {
        child(k, v, depth);
    }
}

/// Degrades the value under key `k`.
fn child(k: &str, v: &mut Value, depth: usize) {
    match k {
        "paths" => named_map(v, depth, walk),
        "responses" => named_map(v, depth, walk_response),
        k if NAMED_MAPS.contains(&k) => match v {
            // `parameters` is a list in operations and a named map in components.
            Value::Array(_) => walk_value(v, depth + 1),
            _ => named_map(v, depth, walk),
        },
        _ => walk_value(v, depth + 1),
    }
}

fn walk_value(v: &mut Value, depth: usize) {
    match v {
        Value::Object(m) => walk(m, depth),
        Value::Array(a) => a.iter_mut().for_each(|x| walk_value(x, depth + 1)),
        _ => {}
    }
}

fn named_map(v: &mut Value, depth: usize, f: fn(&mut Map<String, Value>, usize)) {
    if let Value::Object(m) = v {
        m.retain(|k, _| !k.starts_with("x-"));
        for x in m.values_mut() {
            if let Value::Object(o) = x {
                f(o, depth + 1);
            }
        }
    }
}

/// A response keeps an empty `description`: OpenAPI requires the field.
fn walk_response(resp: &mut Map<String, Value>, depth: usize) {
    walk(resp, depth);
    if !resp.contains_key("$ref") {
        resp.insert("description".into(), Value::String(String::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_structure_drops_prose() {
        let mut doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "TMDB", "version": "3", "description": "About."},
            "tags": [{"name": "movies", "description": "d"}],
            "paths": {"/movie/{movie_id}": {
                "parameters": [{"name": "movie_id", "in": "path", "required": true,
                    "description": "The id.", "schema": {"type": "integer", "example": 550}}],
                "get": {"operationId": "getMovie", "summary": "Get a movie", "tags": ["movies"],
                    "description": "Gets it.", "x-doc": "noise",
                    "parameters": [{"name": "language", "in": "query", "example": "en-US",
                        "schema": {"type": "string", "enum": ["en-US", "de-DE"], "default": "en-US"}}],
                    "responses": {"200": {"description": "OK", "content": {"application/json": {
                        "schema": {"type": "object", "properties": {
                            "title": {"type": "string", "description": "Movie title"},
                            "description": {"type": "string"}}},
                        "examples": {"a": {"value": {}}}}}}}}
            }},
            "components": {"parameters": {"Q": {"name": "q", "in": "query", "description": "d",
                "schema": {"type": "string"}}}}
        });
        degrade(&mut doc);
        assert_eq!(
            doc,
            json!({
                "openapi": "3.0.0",
                "info": {"title": "TMDB", "version": "3"},
                "paths": {"/movie/{movie_id}": {
                    "parameters": [{"name": "movie_id", "in": "path", "required": true,
                        "schema": {"type": "integer"}}],
                    "get": {"operationId": "getMovie",
                        "parameters": [{"name": "language", "in": "query",
                            "schema": {"type": "string", "enum": ["en-US", "de-DE"], "default": "en-US"}}],
                        "responses": {"200": {"content": {"application/json": {
                            "schema": {"type": "object", "properties": {
                                "title": {"type": "string"},
                                "description": {"type": "string"}}}}},
                            "description": ""}}}
                }},
                "components": {"parameters": {"Q": {"name": "q", "in": "query", "schema": {"type": "string"}}}}
            })
        );
    }
}
