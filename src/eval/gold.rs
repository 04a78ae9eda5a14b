//! Benchmark queries and their gold endpoints.
//!
//! A queries file is JSON Lines, one `{"id", "query", "gold": [...]}` per line. A gold entry
//! names an endpoint as `METHOD /path` when the catalog holds one API, or as
//! `<spec_id> METHOD /path` when it holds several (spec_id is the spec file's stem). A
//! queries file can also be bound to one spec (the merged RestBench setting: the Spotify
//! queries keep their unqualified gold while the index holds Spotify and TMDB); its
//! unqualified entries then belong to that spec.
//!
//! A gold entry that names no endpoint of the catalog is an error, never a silent miss: a
//! typo in a benchmark would otherwise read as a retrieval failure.

use crate::catalog::{Endpoint, Method};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Errors of reading queries or resolving their gold endpoints.
#[derive(Debug, thiserror::Error)]
pub enum GoldError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {reason}")]
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{path}: no queries")]
    Empty { path: PathBuf },
    #[error("{path}: {} gold endpoint(s) not in the catalog: {}", unknown.len(), unknown.join("; "))]
    Unknown { path: PathBuf, unknown: Vec<String> },
}

/// One line of a queries file, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct RawQuery {
    pub id: String,
    pub query: String,
    pub gold: Vec<String>,
    /// The catalog the query was written for, in datasets that hold several
    /// ([`super::suite`]).
    #[serde(default)]
    pub catalog: Option<String>,
}

/// A query with its gold endpoints resolved to index positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub id: String,
    pub query: String,
    /// Distinct gold positions, in the file's order.
    pub gold: Vec<usize>,
    /// The API the queries file is bound to, if any: retrieval is not restricted to it, but
    /// reports break results down by it.
    pub source: String,
}

/// Reads a queries file. Ids must be unique and every query needs at least one gold entry.
pub fn read_queries(path: &Path) -> Result<Vec<RawQuery>, GoldError> {
    let text = std::fs::read_to_string(path).map_err(|source| GoldError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out: Vec<RawQuery> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let parse = |reason: String| GoldError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            reason,
        };
        if line.trim().is_empty() {
            continue;
        }
        let q: RawQuery = serde_json::from_str(line).map_err(|e| parse(e.to_string()))?;
        if q.gold.is_empty() {
            return Err(parse(format!("query {:?} has no gold endpoint", q.id)));
        }
        if !seen.insert(q.id.clone()) {
            return Err(parse(format!("duplicate query id {:?}", q.id)));
        }
        out.push(q);
    }
    if out.is_empty() {
        return Err(GoldError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(out)
}

/// Resolves gold entries to positions in `endpoints` (the index's records).
///
/// `bound_api` is the API an unqualified entry belongs to; without it an unqualified entry
/// is accepted only when the catalog holds a single API.
pub fn resolve(
    path: &Path,
    queries: &[RawQuery],
    endpoints: &[Endpoint],
    bound_api: Option<&str>,
) -> Result<Vec<Case>, GoldError> {
    let by_key: HashMap<(&str, Method, &str), usize> = endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| ((e.api.as_str(), e.method, e.path.as_str()), i))
        .collect();
    // An MCP server's tool is named `<server> <tool>` (or `<tool>` in a one-server catalog).
    let by_name: HashMap<String, usize> = endpoints
        .iter()
        .enumerate()
        .filter(|(_, e)| e.mcp.is_some())
        .map(|(i, e)| (e.qualified_key(), i))
        .collect();
    let mut apis: Vec<&str> = endpoints.iter().map(|e| e.api.as_str()).collect();
    apis.sort_unstable();
    apis.dedup();
    let default_api = bound_api.or(if apis.len() == 1 { Some(apis[0]) } else { None });

    let mut unknown = Vec::new();
    let mut cases = Vec::with_capacity(queries.len());
    for q in queries {
        let mut gold = Vec::new();
        for g in &q.gold {
            let tool = by_name.get(g.trim()).or_else(|| {
                default_api.and_then(|api| by_name.get(&format!("{api} {}", g.trim())))
            });
            if let Some(&i) = tool {
                if !gold.contains(&i) {
                    gold.push(i);
                }
                continue;
            }
            match parse_entry(g, default_api) {
                Some((api, method, p)) => match by_key.get(&(api, method, p)) {
                    Some(&i) if !gold.contains(&i) => gold.push(i),
                    Some(_) => {}
                    None => unknown.push(format!("{}: {g:?}", q.id)),
                },
                None => unknown.push(format!(
                    "{}: {g:?} (expected {}METHOD /path)",
                    q.id,
                    if default_api.is_some() {
                        ""
                    } else {
                        "<spec_id> "
                    }
                )),
            }
        }
        cases.push(Case {
            id: q.id.clone(),
            query: q.query.clone(),
            gold,
            source: bound_api.map(str::to_string).unwrap_or_else(|| stem(path)),
        });
    }
    if unknown.is_empty() {
        Ok(cases)
    } else {
        Err(GoldError::Unknown {
            path: path.to_path_buf(),
            unknown,
        })
    }
}

/// `[spec_id] METHOD /path` -> (api, method, path). Surrounding whitespace is tolerated;
/// the path must match a `paths` key exactly.
fn parse_entry<'a>(
    entry: &'a str,
    default_api: Option<&'a str>,
) -> Option<(&'a str, Method, &'a str)> {
    let words: Vec<&str> = entry.split_whitespace().collect();
    match words.as_slice() {
        [m, p] if p.starts_with('/') => Some((default_api?, Method::parse(m)?, p)),
        [api, m, p] if p.starts_with('/') => Some((api, Method::parse(m)?, p)),
        _ => None,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("queries")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(api: &str, method: &str, path: &str) -> Endpoint {
        serde_json::from_value(serde_json::json!({
            "api": api, "api_title": api, "tool_name": format!("{api}{path}"), "method": method,
            "path": path, "operation_id": null, "summary": null, "description": null,
            "tags": [], "deprecated": false, "parameters": [], "request_body": null,
            "response_fields": [], "security": [], "servers": [], "generated_summary": null,
            "generated_questions": [], "description_provenance": null
        }))
        .unwrap()
    }

    fn q(id: &str, gold: &[&str]) -> RawQuery {
        RawQuery {
            id: id.into(),
            query: "x".into(),
            gold: gold.iter().map(|s| s.to_string()).collect(),
            catalog: None,
        }
    }

    #[test]
    fn resolves_plain_and_qualified_entries() {
        let one = [ep("a", "GET", "/x"), ep("a", "POST", "/x")];
        let p = Path::new("a_queries.jsonl");
        let c = resolve(p, &[q("1", &["POST /x", "GET /x", "a GET /x"])], &one, None).unwrap();
        assert_eq!(c[0].gold, [1, 0]);
        assert_eq!(c[0].source, "a_queries");

        let two = [ep("a", "GET", "/x"), ep("b", "GET", "/x")];
        let err = resolve(p, &[q("1", &["GET /x"])], &two, None).unwrap_err();
        assert!(err.to_string().contains("<spec_id> METHOD /path"), "{err}");
        let c = resolve(p, &[q("1", &["GET /x"])], &two, Some("b")).unwrap();
        assert_eq!(
            (c[0].gold.as_slice(), c[0].source.as_str()),
            (&[1][..], "b")
        );
        let c = resolve(p, &[q("1", &["a GET /x"])], &two, None).unwrap();
        assert_eq!(c[0].gold, [0]);
    }

    #[test]
    fn unknown_entries_are_named() {
        let one = [ep("a", "GET", "/x")];
        let err = resolve(
            Path::new("q.jsonl"),
            &[q("7", &["GET /y", "GET /x"]), q("8", &["FETCH /x"])],
            &one,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("2 gold endpoint(s)"), "{err}");
        assert!(
            err.contains("7: \"GET /y\"") && err.contains("8: \"FETCH /x\""),
            "{err}"
        );
    }

    #[test]
    fn reads_jsonl_with_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"1\",\"query\":\"a\",\"gold\":[\"GET /x\"]}\n\n",
        )
        .unwrap();
        assert_eq!(read_queries(&p).unwrap().len(), 1);
        std::fs::write(
            &p,
            "{\"id\":\"1\",\"query\":\"a\",\"gold\":[\"GET /x\"]}\n{oops\n",
        )
        .unwrap();
        assert!(read_queries(&p).unwrap_err().to_string().contains(":2:"));
        std::fs::write(&p, "{\"id\":\"1\",\"query\":\"a\",\"gold\":[]}\n").unwrap();
        assert!(read_queries(&p)
            .unwrap_err()
            .to_string()
            .contains("no gold"));
        std::fs::write(&p, "").unwrap();
        assert!(matches!(read_queries(&p), Err(GoldError::Empty { .. })));
    }
}
