//! The routes of the Tool definitions page (`docs/console.md`): the pinned definitions of
//! MCP servers' tools a reviewer may read, and their decisions. Reviewers and admins only:
//! a held definition is text no agent has been given yet, and what is served is theirs to
//! decide.

use super::answers::{error, json_body, param, MAX_CARDS, MAX_ITEMS};
use super::audit;
use super::viewer::Viewer;
use super::{html, pages, tool_review, Console};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

type Params = Query<HashMap<String, String>>;

/// Why a viewer may not read or decide tool definitions.
fn not_a_tool_reviewer(viewer: &Viewer) -> String {
    format!(
        "MCP servers' tool definitions are what every colleague's agent reads, so only the \
         console's admins and reviewers may read the held ones and approve them, and {} is \
         neither: `admins` and `reviewers` in the [auth] table of the catalog config name them.",
        viewer.describe()
    )
}

/// Why there is nothing to review: no pins are kept.
const NO_PINS: &str = "tool definitions are not pinned here: this server names no MCP server, \
     or keeps no state store (`serve --http` keeps one; `--state` names one)";

/// The pins the viewer may see, narrowed by `status` (held, the default; approved; all).
async fn tool_views(
    c: &Console,
    viewer: &Viewer,
    q: &HashMap<String, String>,
) -> Result<Vec<tool_review::PinView>, (StatusCode, String)> {
    let status = param(q, "status").unwrap_or("held");
    if !matches!(
        status,
        "held" | "approved" | "new" | "changed" | "rejected" | "all"
    ) {
        return Err((
            StatusCode::BAD_REQUEST,
            format!(
                "status: '{}' is not one of held, approved, new, changed, rejected, all",
                crate::text::clip_chars(status, 40)
            ),
        ));
    }
    let Some(pins) = c.server().invoker().upstreams().and_then(|u| u.pins()) else {
        return Err((StatusCode::NOT_FOUND, NO_PINS.into()));
    };
    let snap = c
        .snapshot()
        .await
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e))?;
    let shown = viewer.shown(&snap);
    let all = tokio::time::timeout(audit::WAIT, pins.all())
        .await
        .map_err(|_| {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the state store did not answer in time".to_string(),
            )
        })?
        .map_err(|e| (StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    let visible: Vec<_> = all.into_iter().filter(|p| shown.api(&p.server)).collect();
    let mut views: Vec<_> = tool_review::PinView::all(&visible)
        .into_iter()
        .filter(|v| v.state.matches(status))
        .collect();
    // Held first, then by server and tool.
    views.sort_by(|a, b| {
        (!a.state.is_held(), &a.server, &a.tool).cmp(&(!b.state.is_held(), &b.server, &b.tool))
    });
    Ok(views)
}

pub async fn list(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    if !viewer.may_review() {
        return error(StatusCode::FORBIDDEN, not_a_tool_reviewer(&viewer));
    }
    match tool_views(&c, &viewer, &q).await {
        Ok(views) => Json(json!({
            "matching": views.len(),
            "tools": &views[..views.len().min(MAX_ITEMS)],
        }))
        .into_response(),
        Err((status, e)) => error(status, e),
    }
}

pub async fn page(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    if !viewer.may_review() {
        let page = pages::forbidden(
            html::Page::Tools,
            "Tool definitions",
            &not_a_tool_reviewer(&viewer),
            viewer.is_admin(),
        );
        return (StatusCode::FORBIDDEN, Html(page)).into_response();
    }
    let status = param(&q, "status").unwrap_or("held");
    match tool_views(&c, &viewer, &q).await {
        Ok(views) => {
            let note = (views.len() > MAX_CARDS)
                .then(|| format!("showing the first {MAX_CARDS} of {}", views.len()));
            Html(tool_review::page(
                &views[..views.len().min(MAX_CARDS)],
                status,
                note.as_deref(),
                viewer.is_admin(),
            ))
            .into_response()
        }
        Err((code, e)) => (
            code,
            Html(tool_review::page(&[], status, Some(&e), viewer.is_admin())),
        )
            .into_response(),
    }
}

pub async fn decide(
    State(c): State<Arc<Console>>,
    viewer: Viewer,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let obj = match json_body(&headers, &body) {
        Ok(o) => o,
        Err((status, msg)) => return error(status, msg),
    };
    if !viewer.may_review() {
        tracing::warn!(viewer = %viewer.describe(), "console: a tool decision by someone who may not review was refused");
        return error(StatusCode::FORBIDDEN, not_a_tool_reviewer(&viewer));
    }
    let d: tool_review::Decision = match serde_json::from_value(Value::Object(obj)) {
        Ok(d) => d,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("decision: {e}")),
    };
    let Some(upstreams) = c.server().invoker().upstreams() else {
        return error(StatusCode::NOT_FOUND, NO_PINS);
    };
    let Some(pins) = upstreams.pins() else {
        return error(StatusCode::NOT_FOUND, NO_PINS);
    };
    let unknown = || {
        error(
            StatusCode::NOT_FOUND,
            format!(
                "server: no MCP server '{}'",
                crate::text::clip_chars(&d.server, 60)
            ),
        )
    };
    if !pins.servers().contains(&d.server) {
        return unknown();
    }
    // A server the viewer does not see does not exist for them.
    if !viewer.is_admin() {
        match c.snapshot().await {
            Ok(s) if viewer.shown(&s).api(&d.server) => {}
            Ok(_) => return unknown(),
            Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
        }
    }
    let store = c.server().store();
    // Recorded before it is written, as every review is.
    let entry = crate::store::AuditEntry::event(
        crate::store::Event::ToolReview,
        viewer.audit_sub(),
        viewer.client_id(),
        &d.server,
    )
    .on(&d.tool)
    .with_detail(json!({"action": d.action.as_str(), "digest": d.digest}));
    let recorded = match audit::begin_write(store, &entry, "not decided").await {
        Ok(id) => id,
        Err(why) => return error(StatusCode::SERVICE_UNAVAILABLE, why),
    };
    let by = viewer.audit_sub().to_string();
    let decided = tokio::time::timeout(
        audit::WAIT,
        pins.decide(&d.server, &d.tool, &d.digest, d.action.decision(), &by),
    )
    .await;
    let (status, answer) = match decided {
        Ok(Ok(true)) => {
            // This replica serves the decision at once; the others within seconds.
            upstreams.sync_pins().await;
            (
                StatusCode::OK,
                Json(json!({"decided": {"server": d.server, "tool": d.tool,
                    "digest": d.digest, "action": d.action}}))
                .into_response(),
            )
        }
        Ok(Ok(false)) => {
            let msg = format!(
                "not decided: '{}' of '{}' is not listed in the definition you read (digest {}); \
                 it changed since, or there is no such tool: read it again",
                crate::text::clip_chars(&d.tool, 80),
                crate::text::clip_chars(&d.server, 60),
                crate::text::clip_chars(&d.digest, 16),
            );
            (StatusCode::CONFLICT, error(StatusCode::CONFLICT, msg))
        }
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            error(StatusCode::SERVICE_UNAVAILABLE, format!("not decided: {e}")),
        ),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "not decided: the state store did not answer in time",
            ),
        ),
    };
    if let Some(id) = recorded {
        crate::server::audit::finish(store, id, status.as_u16(), 0, None).await;
    }
    answer
}
