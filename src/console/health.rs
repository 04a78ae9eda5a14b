//! Catalog health: what loaded, what did not and why, and how well each endpoint is
//! described, the way a platform team checks a catalog before assistants use it.
//!
//! An endpoint's description is judged as the enricher judges it (`enrich::plan`): on the
//! `description` its spec's author wrote, `missing` when there is none, `weak` when it only
//! repeats the operationId or path or is a placeholder (`catalog::weak`), `ok` otherwise. A
//! reviewed value counts as written by a person. Separately, an endpoint may have a
//! generated description awaiting review.

use super::review::ReviewItem;
use super::viewer::Shown;
use super::Snapshot;
use crate::catalog::weak::is_weak;
use crate::catalog::{Endpoint, Method};
use serde::Serialize;

/// Rows of the endpoint table in one answer: a catalog of thousands is narrowed by the
/// filter, not scrolled.
pub const MAX_ROWS: usize = 500;

/// How an endpoint is described.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DescriptionState {
    Ok,
    Weak,
    Missing,
}

impl DescriptionState {
    pub fn as_str(self) -> &'static str {
        match self {
            DescriptionState::Ok => "ok",
            DescriptionState::Weak => "weak",
            DescriptionState::Missing => "missing",
        }
    }
}

/// One API of the catalog.
#[derive(Debug, Clone, Serialize)]
pub struct ApiHealth {
    pub id: String,
    pub title: String,
    /// The spec's own version (`info.version`).
    pub version: String,
    /// The OpenAPI or Swagger version it declares.
    pub spec_version: String,
    /// The file read (the enriched copy when there is one).
    pub file: String,
    pub endpoints: usize,
    pub missing: usize,
    pub weak: usize,
    /// Endpoints with a generated description awaiting review.
    pub generated: usize,
    /// Share of endpoints whose author's description is missing or weak.
    pub poorly_described: f64,
    /// Load problems of this API's file (warnings: it loaded, something was dropped).
    pub problems: usize,
}

/// One MCP server, live.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ServerHealth {
    pub id: String,
    /// `idle`, `starting`, `running`, `down` or `crash_loop`.
    pub state: &'static str,
    /// Why it is not running, when it is not.
    pub reason: Option<String>,
    /// Tools it lists that wait for review (absent where definitions are not pinned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<usize>,
}

/// The state of each MCP server whose API the report shows (a viewer never learns of a
/// server they may not see).
pub fn servers(h: &Health, upstreams: Option<&crate::upstream::Upstreams>) -> Vec<ServerHealth> {
    let Some(u) = upstreams else {
        return Vec::new();
    };
    let held: std::collections::HashMap<String, usize> = u
        .pins()
        .map(|p| p.held_counts().into_iter().collect())
        .unwrap_or_default();
    let pinned = u.pins().is_some();
    u.health()
        .into_iter()
        .filter(|(id, _)| h.apis.iter().any(|a| &a.id == id))
        .map(|(id, s)| ServerHealth {
            held: pinned.then(|| held.get(&id).copied().unwrap_or(0)),
            id,
            state: s.word(),
            reason: s.reason().map(str::to_string),
        })
        .collect()
}

/// One endpoint row.
#[derive(Debug, Clone, Serialize)]
pub struct EndpointHealth {
    pub api: String,
    pub tool: String,
    pub method: &'static str,
    pub path: String,
    /// The line clients see first.
    pub summary: String,
    pub description: DescriptionState,
    /// A generated description awaits review.
    pub generated: bool,
}

/// One load problem.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemRow {
    pub severity: &'static str,
    pub file: String,
    pub pointer: Option<String>,
    pub message: String,
}

/// The whole report; `endpoints` is filtered and capped, the rest is not.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    pub apis: Vec<ApiHealth>,
    /// The catalog's MCP servers among the APIs shown, as they stand now.
    pub servers: Vec<ServerHealth>,
    pub problems: Vec<ProblemRow>,
    /// Specs skipped entirely (errors).
    pub skipped: usize,
    pub total_endpoints: usize,
    pub poorly_described: f64,
    /// Endpoints matching the filter.
    pub matching: usize,
    pub endpoints: Vec<EndpointHealth>,
}

/// What the endpoint table shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub api: Option<String>,
    pub method: Option<Method>,
    /// Case-insensitive text in the path, tool name or summary.
    pub text: Option<String>,
    pub state: Option<DescriptionState>,
    /// Only endpoints whose generated description awaits review.
    pub generated: bool,
}

impl Filter {
    /// The filter from query-string values; empty values mean no constraint.
    pub fn parse(
        api: Option<&str>,
        method: Option<&str>,
        text: Option<&str>,
        state: Option<&str>,
    ) -> Result<Filter, String> {
        let method = match nonempty(method) {
            Some(m) => Some(
                Method::parse(m)
                    .ok_or_else(|| format!("method: '{}' is not an HTTP method", clip(m)))?,
            ),
            None => None,
        };
        let generated = nonempty(state) == Some("generated");
        let state = match nonempty(state) {
            None | Some("generated") => None,
            Some("ok") => Some(DescriptionState::Ok),
            Some("weak") => Some(DescriptionState::Weak),
            Some("missing") => Some(DescriptionState::Missing),
            Some(other) => {
                return Err(format!(
                    "description: '{}' is not one of ok, weak, missing, generated",
                    clip(other)
                ))
            }
        };
        Ok(Filter {
            api: nonempty(api).map(str::to_string),
            method,
            text: nonempty(text).map(str::to_lowercase),
            state,
            generated,
        })
    }

    fn matches(&self, row: &EndpointHealth) -> bool {
        self.api.as_deref().is_none_or(|a| row.api == a)
            && self.method.is_none_or(|m| row.method == m.as_str())
            && self.state.is_none_or(|s| row.description == s)
            && (!self.generated || row.generated)
            && self.text.as_deref().is_none_or(|t| {
                row.path.to_lowercase().contains(t)
                    || row.tool.to_lowercase().contains(t)
                    || row.summary.to_lowercase().contains(t)
            })
    }
}

fn clip(s: &str) -> String {
    crate::text::clip_chars(s, 60)
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

/// How `ep`'s author described it, and whether a generated description awaits review.
/// `pending` is that generated description's review item: the author's description is then
/// the one it was written beside, or none when it was filled in place.
pub fn judge(ep: &Endpoint, pending: Option<&ReviewItem>) -> (DescriptionState, bool) {
    let op_id = ep.operation_id.as_deref().unwrap_or("");
    let names = [op_id, ep.path.as_str()];
    let description = match pending {
        Some(it) => it.spec.get("description").and_then(|d| d.as_str()),
        None => ep.description.as_deref(),
    };
    let state = match description.filter(|d| !d.trim().is_empty()) {
        None => DescriptionState::Missing,
        Some(d) if is_weak(d, &names) => DescriptionState::Weak,
        Some(_) => DescriptionState::Ok,
    };
    (state, pending.is_some())
}

/// The report for `snap` as one viewer sees it (`shown`: their APIs, and the load problems
/// of those APIs' files), its endpoint table narrowed by `filter`.
pub fn report(snap: &Snapshot, filter: &Filter, shown: &Shown) -> Health {
    let rows: Vec<EndpointHealth> = snap
        .catalog
        .endpoints
        .iter()
        .filter(|ep| shown.api(&ep.api))
        .map(|ep| {
            let (description, generated) = judge(ep, snap.pending_description(ep));
            EndpointHealth {
                api: ep.api.clone(),
                tool: ep.tool_name.clone(),
                method: ep.method.as_str(),
                path: ep.path.clone(),
                summary: ep.one_line(),
                description,
                generated,
            }
        })
        .collect();
    let mut by_api: std::collections::HashMap<&str, Vec<&EndpointHealth>> =
        std::collections::HashMap::new();
    for r in &rows {
        by_api.entry(r.api.as_str()).or_default().push(r);
    }
    let apis = snap
        .catalog
        .apis
        .iter()
        .filter(|a| shown.api(&a.id))
        .map(|a| {
            let mine: &[&EndpointHealth] = by_api.get(a.id.as_str()).map_or(&[], Vec::as_slice);
            let count = |s: DescriptionState| mine.iter().filter(|r| r.description == s).count();
            let (missing, weak) = (
                count(DescriptionState::Missing),
                count(DescriptionState::Weak),
            );
            let generated = mine.iter().filter(|r| r.generated).count();
            ApiHealth {
                id: a.id.clone(),
                title: a.title.clone(),
                version: a.version.clone(),
                spec_version: a.spec_version.clone(),
                file: a.source.display().to_string(),
                endpoints: mine.len(),
                missing,
                weak,
                generated,
                poorly_described: share(missing + weak, mine.len()),
                problems: snap
                    .catalog
                    .problems
                    .iter()
                    .filter(|p| p.file == a.source)
                    .count(),
            }
        })
        .collect();
    let problems: Vec<ProblemRow> = snap
        .catalog
        .problems
        .iter()
        .filter(|p| shown.file(&p.file.display().to_string()))
        .map(|p| ProblemRow {
            severity: match p.severity {
                crate::catalog::Severity::Error => "error",
                crate::catalog::Severity::Warning => "warning",
            },
            file: p.file.display().to_string(),
            pointer: p.pointer.clone(),
            message: p.message.clone(),
        })
        .collect();
    // Skipped specs are the error-level problems (a spec with one did not load).
    let skipped = problems.iter().filter(|p| p.severity == "error").count();
    let poor = rows
        .iter()
        .filter(|r| r.description != DescriptionState::Ok)
        .count();
    let total = rows.len();
    let matching: Vec<EndpointHealth> = rows.into_iter().filter(|r| filter.matches(r)).collect();
    Health {
        apis,
        servers: Vec::new(),
        problems,
        skipped,
        total_endpoints: total,
        poorly_described: share(poor, total),
        matching: matching.len(),
        endpoints: matching.into_iter().take(MAX_ROWS).collect(),
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_refuse_nonsense() {
        let f = Filter::parse(Some("xkcd"), Some("get"), Some(" Comic "), Some("")).unwrap();
        assert_eq!(f.method, Some(Method::Get));
        assert_eq!(f.text.as_deref(), Some("comic"));
        assert_eq!(f.state, None);
        let g = Filter::parse(None, None, None, Some("generated")).unwrap();
        assert!(g.generated && g.state.is_none());
        assert!(Filter::parse(None, Some("FETCH"), None, None)
            .unwrap_err()
            .starts_with("method:"));
        assert!(Filter::parse(None, None, None, Some("bad"))
            .unwrap_err()
            .starts_with("description:"));
    }
}
