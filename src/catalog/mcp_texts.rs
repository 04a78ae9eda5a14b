//! Enriched text for an MCP server's tools: thin tool descriptions filled in the way thin
//! specs are.
//!
//! A server's tools are written out as an OpenAPI document of their own (one operation per
//! tool, its arguments as parameters; [`document`]), in the data folder's `mcp-enriched`
//! folder, so `shortlist enrich` runs its one pipeline over them: the same plan, prompts,
//! checks, cache and provenance markers, and an enriched copy beside that document. At
//! load, the document is made again from what the server lists now and the copy's text is
//! laid over it exactly as over a spec ([`super::enriched`]): only on tools whose
//! definition is unchanged since the copy was made, never over what the server's author
//! wrote unless that is weak, and marked as generated. What is laid over is scanned like
//! the server's own text ([`super::tool_scan`]): a model that read a poisoned description
//! may have repeated it.

use super::endpoint::{Api, Endpoint};
use super::{enriched, enriched_path, Problem, SpecSource};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// The folder of the data folder holding the servers' documents and enriched copies.
pub const FOLDER: &str = "mcp-enriched";

/// Where server `id`'s document is written in `data_dir` (its enriched copy goes beside
/// it, as `<name>.enriched.json`). An id with characters a file name should not hold is
/// written with those replaced and a digest of the id added.
pub fn document_path(data_dir: &Path, id: &str) -> PathBuf {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if safe == id && !id.is_empty() {
        safe
    } else {
        use sha2::{Digest, Sha256};
        let digest = hex::encode(Sha256::digest(id.as_bytes()));
        format!("{safe}-{}", &digest[..12])
    };
    data_dir.join(FOLDER).join(format!("{name}.json"))
}

/// The route a tool's operation has in its server's document.
fn route(name: &str) -> String {
    let encoded: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '~') {
                c.to_string()
            } else {
                let mut buf = [0u8; 4];
                c.encode_utf8(&mut buf)
                    .bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect()
            }
        })
        .collect();
    format!("/{encoded}")
}

/// The tools of one server (as the catalog built them: bounded, scanned, `$ref`s inlined)
/// as an OpenAPI 3.0 document. The same tools give the same document.
pub fn document(api: &Api, endpoints: &[Endpoint]) -> Value {
    let mut paths = Map::new();
    for ep in endpoints {
        let Some(tool) = &ep.mcp else { continue };
        let parameters: Vec<Value> = ep
            .parameters
            .iter()
            .map(|p| {
                let mut param = json!({
                    "name": p.name,
                    "in": "argument",
                    "required": p.required,
                    "schema": p.schema,
                });
                if let Some(d) = &p.description {
                    param["description"] = json!(d);
                }
                param
            })
            .collect();
        let mut op = json!({"operationId": tool.name, "parameters": parameters});
        if let Some(t) = &ep.summary {
            op["summary"] = json!(t);
        }
        if let Some(d) = &ep.description {
            op["description"] = json!(d);
        }
        paths.insert(route(&tool.name), json!({ "post": op }));
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": api.title,
            "version": if api.version.is_empty() { "unversioned" } else { api.version.as_str() },
            "description": format!("The tools of MCP server '{}', as shortlist enriches them.", api.id),
        },
        "paths": paths,
    })
}

/// The source a server's document and copy stand for, for the pipeline and for messages.
pub fn source(data_dir: &Path, id: &str, config_index: usize) -> SpecSource {
    let original = document_path(data_dir, id);
    SpecSource {
        id: id.to_string(),
        path: enriched_path(&original),
        original,
        config_index,
    }
}

/// Lays the text of server `api`'s enriched copy in `data_dir`, if there is one, over its
/// tools `endpoints` (see the module documentation); what could not be is reported.
pub fn lay_over(
    data_dir: &Path,
    api: &Api,
    endpoints: &mut [Endpoint],
    problems: &mut Vec<Problem>,
) {
    let src = source(data_dir, &api.id, api.config_index.unwrap_or(0));
    if !src.path.is_file() {
        return;
    }
    let loaded = match enriched::load_over(document(api, endpoints), Vec::new(), &src) {
        Ok(n) => n,
        Err(p) => {
            problems.push(p);
            return;
        }
    };
    problems.extend(loaded.warnings);
    let mut found = Vec::new();
    let mut clean = |text: String, at: String| {
        let (kept, f) = super::tool_scan::scan(&text);
        if !f.is_empty() {
            found.push(format!("{at}: {}", f.describe()));
        }
        kept
    };
    for ep in endpoints.iter_mut() {
        let Some(name) = ep.mcp.as_ref().map(|t| t.name.clone()) else {
            continue;
        };
        let Some(text) = loaded
            .endpoints
            .iter()
            .find(|e| e.operation_id.as_deref() == Some(name.as_str()))
        else {
            continue;
        };
        if let Some(p) = &text.description_provenance {
            ep.description = text
                .description
                .clone()
                .map(|d| clean(d, format!("tool '{name}': generated description")));
            ep.description_provenance = Some(p.clone());
        }
        ep.generated_summary = text
            .generated_summary
            .clone()
            .map(|s| clean(s, format!("tool '{name}': generated summary")));
        ep.generated_questions = text
            .generated_questions
            .iter()
            .map(|q| clean(q.clone(), format!("tool '{name}': generated question")))
            .collect();
        for p in &mut ep.parameters {
            let Some(t) = text.parameters.iter().find(|t| t.name == p.name) else {
                continue;
            };
            if let Some(prov) = &t.description_provenance {
                p.description = t
                    .description
                    .clone()
                    .map(|d| clean(d, format!("tool '{name}': argument '{}'", p.name)));
                p.description_provenance = Some(prov.clone());
            }
            if t.example_provenance.is_some() && p.example.is_none() {
                p.example = t.example.clone();
                p.example_provenance = t.example_provenance.clone();
            }
        }
    }
    for f in found {
        problems.push(Problem::warning(&src.path, None, f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_safe_files_and_routes() {
        let dir = Path::new("/d");
        assert_eq!(
            document_path(dir, "git"),
            Path::new("/d/mcp-enriched/git.json")
        );
        let odd = document_path(dir, "../etc");
        assert!(odd.starts_with("/d/mcp-enriched"), "{odd:?}");
        assert_ne!(odd, document_path(dir, "__etc"));
        assert_eq!(route("a.b-c_d"), "/a.b-c_d");
        assert_eq!(route("a/b{c}"), "/a%2Fb%7Bc%7D");
    }

    /// The tools of a listed server, as the catalog builds them.
    fn tools(listed: Value) -> (Api, Vec<Endpoint>) {
        let source = crate::catalog::mcp_config::McpSource {
            command: Some("x".into()),
            ..Default::default()
        };
        let serving = crate::catalog::mcp_tools::Serving {
            source: &source,
            read_only: false,
        };
        let listing = crate::catalog::mcp_tools::Listing {
            title: None,
            version: "1".into(),
            tools: listed.as_array().unwrap().clone(),
        };
        crate::catalog::mcp_tools::endpoints("fin", serving, &listing, 0, &mut Vec::new())
    }

    #[test]
    fn a_copy_lends_scanned_text_to_unchanged_tools_only() {
        let listed = json!([
            {"name": "rate", "inputSchema": {"type": "object", "properties": {"base": {"type": "string"}}}},
            {"name": "ok", "description": "Says ok."},
            {"name": "gone", "description": ""}
        ]);
        let (api, eps) = tools(listed.clone());
        let dir = tempfile::tempdir().unwrap();
        let src = source(dir.path(), "fin", 0);
        std::fs::create_dir_all(src.original.parent().unwrap()).unwrap();
        let original = document(&api, &eps);
        // What the enricher would write: generated text with its marker, stamped.
        let mut copy = original.clone();
        let marker = json!({"generator": "m", "template": "t", "date": "2026-11-29"});
        let rate = &mut copy["paths"]["/rate"]["post"];
        rate["description"] = json!("Gets the exchange rate\u{200b} of a currency.");
        rate["x-shortlist-generated"] = json!({"description": marker});
        rate["parameters"][0]["description"] = json!("The base currency.");
        rate["parameters"][0]["x-shortlist-generated"] = json!({"description": marker});
        copy["paths"]["/gone"]["post"]["description"] = json!("Removes it.");
        copy["paths"]["/gone"]["post"]["x-shortlist-generated"] = json!({"description": marker});
        copy["paths"]["/ok"]["post"]["x-shortlist-description"] = json!("Better text.");
        enriched::stamp(&mut copy, &enriched::origin(&original));
        std::fs::write(&src.path, copy.to_string()).unwrap();

        // `gone` changed since: its text is not lent.
        let mut now = listed;
        now[2]["inputSchema"] =
            json!({"type": "object", "properties": {"force": {"type": "boolean"}}});
        let (api, mut eps) = tools(now);
        let mut problems = Vec::new();
        lay_over(dir.path(), &api, &mut eps, &mut problems);
        let rate = &eps[0];
        assert_eq!(
            rate.description.as_deref(),
            Some("Gets the exchange rate of a currency."),
            "hidden characters are removed"
        );
        assert_eq!(rate.description_provenance.as_ref().unwrap().generator, "m");
        assert_eq!(
            rate.parameters[0].description.as_deref(),
            Some("The base currency.")
        );
        assert!(rate.parameters[0].description_provenance.is_some());
        // Human text that is not weak stays.
        assert_eq!(eps[1].description.as_deref(), Some("Says ok."));
        assert!(eps[1].description_provenance.is_none());
        assert!(eps[2].description.is_none(), "{:?}", eps[2].description);
        let said: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert!(
            said.iter()
                .any(|m| m.contains("stale") && m.contains("/gone")),
            "{said:?}"
        );
        assert!(said.iter().any(|m| m.contains("hidden")), "{said:?}");
    }
}
