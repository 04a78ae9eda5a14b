//! "Try a request": the shortlist a client would get for a request, and why.
//!
//! The ranking is `find_tools`' own ([`ServerState::rank`]: same arguments, same defaults,
//! same limits), without exposing anything to any client. Each tool comes with the parts of
//! its score ([`crate::shortlist::explain`]), its definition exactly as `tools/list` sends
//! it ([`crate::server::tools::endpoint_tool`]) and what that definition costs a client in
//! tokens ([`crate::server::tokens`]).

use crate::server::tools::endpoint_tool;
use crate::server::{tokens, ServerState, Sight};
use crate::shortlist::explain::{Explanation, Origin};
use crate::shortlist::matched::Judgement;
use rmcp::model::JsonObject;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// One shortlisted tool.
#[derive(Debug, Clone, Serialize)]
pub struct TriedTool {
    pub rank: usize,
    pub name: String,
    pub api: String,
    pub call: String,
    pub summary: String,
    pub score: f32,
    /// `request`, `task_part` or `prerequisite`.
    pub origin: &'static str,
    /// What the origin means for this tool, in words.
    pub why: String,
    pub explanation: Explanation,
    /// cl100k tokens of `definition` as compact JSON.
    pub tokens: Option<usize>,
    /// The MCP tool definition a client receives.
    pub definition: Value,
}

/// The answer for one request.
#[derive(Debug, Clone, Serialize)]
pub struct Tried {
    pub query: String,
    pub k: usize,
    pub api: Option<String>,
    /// The tasks the request was split into (empty: one task).
    pub tasks: Vec<String>,
    pub tools: Vec<TriedTool>,
    /// Tokens of all shortlisted definitions together.
    pub tools_tokens: Option<usize>,
    /// Tokens of the three meta-tool definitions every client always has.
    pub meta_tokens: Option<usize>,
    /// Whether anything in the catalog fits the request, and the evidence, as `find_tools`
    /// judges it (`None`: not judged, as under lexical retrieval).
    pub judgement: Option<Judgement>,
}

/// Ranks `args` (`find_tools` arguments: `query`, `k`, `api`) and explains the result.
/// The error is the message `find_tools` would give.
/// `sight` is what the console's viewer sees: the whole catalog for its operator and admins,
/// a person's own APIs otherwise, so "Try" shows what that person's client would get.
pub async fn try_request(
    state: &Arc<ServerState>,
    args: &JsonObject,
    sight: &Sight,
) -> Result<Tried, String> {
    // What a 2026-07-28 client, today's default, would get.
    let exposure = state.exposure(crate::server::Era::Stateless);
    let (ranked, explained) = state.rank_explained(args, exposure, sight).await?;
    let sl = ranked.served.shortlister();
    // Without `k`, a client gets as many hits as fit the answer's token budget: show those.
    let mut explained = explained;
    if ranked.args.k.is_none() {
        let rendered: Vec<Value> = ranked
            .hits
            .iter()
            .filter_map(|h| sl.endpoint(h.position))
            .map(|e| crate::server::discovery::hit(e, None))
            .collect();
        let fit = crate::server::discovery::fitting(&rendered, state.options().answer_tokens);
        explained.hits.truncate(fit);
    }
    let name_at = |p: usize| {
        sl.endpoint(p)
            .map(|e| e.tool_name.clone())
            .unwrap_or_default()
    };
    let mut definitions = Vec::new();
    let tools: Vec<TriedTool> = explained
        .hits
        .into_iter()
        .enumerate()
        .filter_map(|(i, x)| {
            let ep = sl.endpoint(x.position)?;
            let definition = serde_json::to_value(endpoint_tool(ep)).unwrap_or(Value::Null);
            definitions.push(definition.clone());
            let (origin, why) = match &x.origin {
                Origin::Request => ("request", describe_scores(&x, "the whole request")),
                Origin::TaskPart { task } => (
                    "task_part",
                    describe_scores(
                        &x,
                        &format!(
                            "task part {}: \u{201c}{}\u{201d}",
                            task + 1,
                            explained.tasks.get(*task).map_or("", String::as_str)
                        ),
                    ),
                ),
                Origin::Prerequisite { for_position } => (
                    "prerequisite",
                    format!(
                        "prerequisite of {}: it produces an identifier that tool needs",
                        name_at(*for_position)
                    ),
                ),
            };
            Some(TriedTool {
                rank: i + 1,
                name: ep.tool_name.clone(),
                api: ep.api.clone(),
                call: format!("{} {}", ep.method.as_str(), ep.path),
                summary: ep.one_line(),
                score: x.score,
                origin,
                why,
                tokens: tokens::count_json(&definition),
                definition,
                explanation: x,
            })
        })
        .collect();
    let meta = serde_json::to_value(state.meta_tools(exposure)).unwrap_or(Value::Null);
    Ok(Tried {
        query: ranked.args.query.unwrap_or_default(),
        k: ranked.args.k.unwrap_or(tools.len()),
        api: ranked.args.api,
        tasks: explained.tasks,
        tools_tokens: tokens::count_json(&Value::Array(definitions)),
        meta_tokens: tokens::count_json(&meta),
        judgement: ranked.judged,
        tools,
    })
}

/// "matched the whole request: dense 0.91 (cosine 0.62), lexical 0.40".
fn describe_scores(x: &Explanation, what: &str) -> String {
    let mut parts = Vec::new();
    if let (Some(d), Some(c)) = (x.dense, x.dense_cosine) {
        parts.push(format!("dense {d:.2} (cosine {c:.2})"));
    }
    if let (Some(l), Some(b)) = (x.lexical, x.lexical_bm25) {
        parts.push(format!("lexical {l:.2} (BM25 {b:.1})"));
    }
    let mut s = format!("matched {what}");
    if matches!(x.origin, Origin::Request) && !parts.is_empty() {
        s.push_str(&format!(": {}", parts.join(", ")));
    } else if let Some((_, t)) = x.best_task {
        s.push_str(&format!(
            " (weighted {t:.2}; whole request {:.2})",
            x.request
        ));
    }
    if x.weight < 1.0 {
        s.push_str(&format!(
            "; lowered \u{00d7}{:.2}: {}",
            x.weight,
            x.weight_reasons.join("; ")
        ));
    }
    s
}
