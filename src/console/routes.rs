//! The console's routes: the pages, their assets, and the JSON endpoints behind them
//! (`docs/console.md`). Errors are JSON `{"error": "..."}` naming the argument at fault.
//!
//! Every handler reads its [`Viewer`]: a person sees only the APIs their `visible_to` rules
//! show them (a hidden API is absent, as over MCP), and only admins read the audit log.
//!
//! Writes (`POST`) take JSON only: a page on another site can send a form to a loopback
//! server, but not a JSON body without the browser asking first, and the `Origin` guard in
//! front of these routes refuses it then.

use super::audit::{self, AuditQuery};
use super::health::Filter;
use super::review::Status;
use super::review_write::{Review, ReviewError};
use super::viewer::Viewer;
use super::{html, pages, tool_review, try_request, Console};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use rmcp::model::JsonObject;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

type Params = Query<HashMap<String, String>>;

/// Review cards on one page, and items in one JSON answer: a catalog with thousands of
/// generated values is narrowed by API or tool, not scrolled.
const MAX_CARDS: usize = 200;
const MAX_ITEMS: usize = 1000;

/// The console's router, every path under `/console`.
pub fn router(console: Arc<Console>) -> Router {
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::to("/console/health") }),
        )
        .route(
            "/console/",
            get(|| async { Redirect::to("/console/health") }),
        )
        .route("/console/health", get(health_page))
        .route("/console/review", get(review_page))
        .route("/console/try", get(try_page))
        .route("/console/tools", get(tools_page))
        .route("/console/audit", get(audit_page))
        .route("/console/assets/console.css", get(css))
        .route("/console/assets/console.js", get(js))
        .route("/console/assets/icon.svg", get(icon))
        .route("/console/api/health", get(health_json))
        .route("/console/api/review", get(review_json).post(review_save))
        .route("/console/api/try", axum::routing::post(try_json))
        .route("/console/api/tools", get(tools_json).post(tools_decide))
        .route("/console/api/audit", get(audit_json))
        .with_state(console)
        .layer(axum::middleware::map_response(secure_headers))
}

/// No page of the console may be framed, sniffed, cached or leak its address onwards.
async fn secure_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(html::CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(json!({"error": msg.into()}))).into_response()
}

fn param<'a>(q: &'a HashMap<String, String>, k: &str) -> Option<&'a str> {
    q.get(k).map(|s| s.trim()).filter(|s| !s.is_empty())
}

async fn css() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        html::CSS,
    )
}

async fn icon() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/svg+xml")], html::ICON)
}

async fn js() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        html::JS,
    )
}

fn filter(q: &HashMap<String, String>) -> Result<Filter, String> {
    Filter::parse(
        param(q, "api"),
        param(q, "method"),
        param(q, "q"),
        param(q, "description"),
    )
}

async fn health_json(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    let f = match filter(&q) {
        Ok(f) => f,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    match c.snapshot().await {
        Ok(s) => Json(c.health(&s, &f, &viewer)).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn health_page(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    let f = match filter(&q) {
        Ok(f) => f,
        Err(e) => return (StatusCode::BAD_REQUEST, e).into_response(),
    };
    match c.snapshot().await {
        Ok(s) => Html(pages::health(
            &c.health(&s, &f, &viewer),
            &f,
            viewer.is_admin(),
        ))
        .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// Which review items a query asks for: `status` (pending, the default; reviewed; all),
/// `api`, and `tool` (one endpoint).
struct ItemQuery<'a> {
    status: &'a str,
    api: Option<&'a str>,
    tool: Option<&'a str>,
}

fn item_query(q: &HashMap<String, String>) -> Result<ItemQuery<'_>, String> {
    let status = param(q, "status").unwrap_or("pending");
    if !matches!(status, "pending" | "reviewed" | "rejected" | "all") {
        return Err(format!(
            "status: '{}' is not one of pending, reviewed, rejected, all",
            crate::text::clip_chars(status, 40)
        ));
    }
    Ok(ItemQuery {
        status,
        api: param(q, "api"),
        tool: param(q, "tool"),
    })
}

fn selected<'a>(
    items: &'a [super::review::ReviewItem],
    q: &ItemQuery,
    shown: &super::viewer::Shown,
) -> Vec<&'a super::review::ReviewItem> {
    items
        .iter()
        .filter(|i| shown.api(&i.api))
        .filter(|i| match q.status {
            "pending" => i.status == Status::Pending,
            "reviewed" => i.status == Status::Reviewed,
            "rejected" => i.status == Status::Rejected,
            _ => true,
        })
        .filter(|i| q.api.is_none_or(|a| i.api == a))
        .filter(|i| q.tool.is_none_or(|t| i.tool.as_deref() == Some(t)))
        .collect()
}

async fn review_json(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    let iq = match item_query(&q) {
        Ok(iq) => iq,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    match c.snapshot().await {
        Ok(s) => {
            let shown = viewer.shown(&s);
            let items = selected(&s.items, &iq, &shown);
            Json(json!({
                "matching": items.len(),
                "items": &items[..items.len().min(MAX_ITEMS)],
                "unreadable": unreadable(&s, &shown),
            }))
            .into_response()
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn review_page(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    let iq = match item_query(&q) {
        Ok(iq) => iq,
        Err(e) => return (StatusCode::BAD_REQUEST, e).into_response(),
    };
    match c.snapshot().await {
        Ok(s) => {
            let shown = viewer.shown(&s);
            let apis: Vec<String> = s
                .sources
                .iter()
                .filter(|x| shown.api(&x.id))
                .map(|x| x.id.clone())
                .collect();
            let items = selected(&s.items, &iq, &shown);
            Html(pages::review(
                &items[..items.len().min(MAX_CARDS)],
                items.len(),
                &apis,
                iq.api,
                iq.status,
                unreadable(&s, &shown),
                viewer.is_admin(),
            ))
            .into_response()
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// Enriched files that could not be read: they name files of any API, so they are the
/// platform team's to see, not a person's whose view is limited.
fn unreadable<'a>(s: &'a super::Snapshot, shown: &super::viewer::Shown) -> &'a [String] {
    if shown.is_everything() {
        &s.unreadable
    } else {
        &[]
    }
}

/// A JSON object body, or the status and message for anything else.
fn json_body(headers: &HeaderMap, body: &[u8]) -> Result<JsonObject, (StatusCode, String)> {
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json_type {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the body as Content-Type: application/json".into(),
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err((
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object".into(),
        )),
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            format!("the body is not valid JSON: {e}"),
        )),
    }
}

async fn review_save(
    State(c): State<Arc<Console>>,
    viewer: Viewer,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let obj = match json_body(&headers, &body) {
        Ok(o) => o,
        Err((status, msg)) => return error(status, msg),
    };
    // What every colleague's agent reads is written only by those allowed to write it.
    if !viewer.may_review() {
        tracing::warn!(viewer = %viewer.describe(), "console: a review by someone who may not review was refused");
        return error(StatusCode::FORBIDDEN, not_a_reviewer(&viewer));
    }
    let review: Review = match serde_json::from_value(Value::Object(obj)) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("review: {e}")),
    };
    // An API the viewer does not see does not exist for them: the same answer as an
    // unknown one.
    if !viewer.is_admin() {
        match c.snapshot().await {
            Ok(s) if viewer.shown(&s).api(&review.api) => {}
            Ok(_) => {
                return error(
                    StatusCode::NOT_FOUND,
                    ReviewError::NotFound(format!(
                        "api: no API '{}'",
                        crate::text::clip_chars(&review.api, 60)
                    ))
                    .to_string(),
                )
            }
            Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
        }
    }
    // Recorded before it is written: with a store, a review the audit log cannot hold is
    // not made.
    let recorded = match super::audit::begin_review(c.server().store(), &viewer, &review).await {
        Ok(id) => id,
        Err(why) => return error(StatusCode::SERVICE_UNAVAILABLE, why),
    };
    let store = c.server().store();
    match c.review(review.clone()).await {
        Ok(saved) => {
            if let Some(id) = recorded {
                let detail = super::audit::review_detail(&review, Some(&saved));
                crate::server::audit::finish(store, id, 200, 0, Some(detail)).await;
            }
            Json(json!({"saved": saved})).into_response()
        }
        Err(e) => {
            let status = match &e {
                ReviewError::Invalid(_) => StatusCode::BAD_REQUEST,
                ReviewError::NotFound(_) => StatusCode::NOT_FOUND,
                ReviewError::Conflict(_) => StatusCode::CONFLICT,
                ReviewError::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            if status == StatusCode::INTERNAL_SERVER_ERROR {
                tracing::error!(error = %e, "console: saving a review failed");
            }
            if let Some(id) = recorded {
                crate::server::audit::finish(store, id, status.as_u16(), 0, None).await;
            }
            error(status, e.to_string())
        }
    }
}

/// Why a viewer may not write reviews.
fn not_a_reviewer(viewer: &Viewer) -> String {
    format!(
        "Generated tool text is what every colleague's agent reads, so only the console's \
         admins and reviewers may accept, edit or reject it, and {} is neither: `admins` and \
         `reviewers` in the [auth] table of the catalog config name them (groups, scopes or subs).",
        viewer.describe()
    )
}

async fn try_json(
    State(c): State<Arc<Console>>,
    viewer: Viewer,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let obj = match json_body(&headers, &body) {
        Ok(o) => o,
        Err((status, msg)) => return error(status, msg),
    };
    let sight = viewer.sight(&c.server().served());
    match try_request::try_request(c.server(), &obj, &sight).await {
        Ok(t) => Json(t).into_response(),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
}

async fn try_page(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    let served = c.server().served();
    let sight = viewer.sight(&served);
    let apis: Vec<String> = {
        let mut v: Vec<String> = served
            .shortlister()
            .tables()
            .apis
            .iter()
            .filter(|(id, _)| sight.sees(id))
            .map(|(id, _)| id.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let query = param(&q, "q").unwrap_or("");
    let api = param(&q, "api");
    let k = match param(&q, "k").map(str::parse::<usize>) {
        None => None,
        Some(Ok(k)) => Some(k),
        Some(Err(_)) => {
            let page = pages::try_page(
                query,
                None,
                api,
                &apis,
                Some(Err("k: must be a whole number")),
                viewer.is_admin(),
            );
            return (StatusCode::BAD_REQUEST, Html(page)).into_response();
        }
    };
    if query.is_empty() {
        return Html(pages::try_page("", k, api, &apis, None, viewer.is_admin())).into_response();
    }
    let mut args = JsonObject::new();
    args.insert("query".into(), Value::from(query));
    if let Some(k) = k {
        args.insert("k".into(), Value::from(k));
    }
    if let Some(a) = api {
        args.insert("api".into(), Value::from(a));
    }
    match try_request::try_request(c.server(), &args, &sight).await {
        Ok(t) => Html(pages::try_page(
            query,
            k,
            api,
            &apis,
            Some(Ok(&t)),
            viewer.is_admin(),
        ))
        .into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Html(pages::try_page(
                query,
                k,
                api,
                &apis,
                Some(Err(&e)),
                viewer.is_admin(),
            )),
        )
            .into_response(),
    }
}

/// Why a viewer who is not an admin gets no audit log.
fn not_an_admin(viewer: &Viewer) -> String {
    format!(
        "The audit log records every person's calls, so it is shown to the console's admins \
         only, and {} is not one: `admins` in the [auth] table of the catalog config names \
         them (groups, scopes or subs).",
        viewer.describe()
    )
}

/// The status of an audit log that cannot be read: 503, as the store's absence or failure
/// is the server's state, not the request's fault, and may pass.
const NO_AUDIT: StatusCode = StatusCode::SERVICE_UNAVAILABLE;

async fn audit_json(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    if !viewer.is_admin() {
        return error(StatusCode::FORBIDDEN, not_an_admin(&viewer));
    }
    let aq = match AuditQuery::parse(param(&q, "sub"), param(&q, "limit")) {
        Ok(aq) => aq,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    match audit::read(c.server().store(), &aq, audit::WAIT).await {
        Ok(rows) => {
            Json(json!({"sub": aq.sub, "limit": aq.limit, "entries": rows})).into_response()
        }
        Err(e) => {
            tracing::warn!(error = %e, "console: the audit log cannot be read");
            error(NO_AUDIT, e.to_string())
        }
    }
}

async fn audit_page(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
    if !viewer.is_admin() {
        let page = pages::forbidden(
            html::Page::Audit,
            "Audit log",
            &not_an_admin(&viewer),
            false,
        );
        return (StatusCode::FORBIDDEN, Html(page)).into_response();
    }
    let who = viewer.describe();
    let aq = match AuditQuery::parse(param(&q, "sub"), param(&q, "limit")) {
        Ok(aq) => aq,
        Err(e) => {
            let fallback = AuditQuery {
                sub: param(&q, "sub").map(str::to_string),
                limit: audit::DEFAULT_LIMIT,
            };
            let page = pages::audit(&who, &fallback, Err(&e));
            return (StatusCode::BAD_REQUEST, Html(page)).into_response();
        }
    };
    match audit::read(c.server().store(), &aq, audit::WAIT).await {
        Ok(rows) => Html(pages::audit(&who, &aq, Ok(&rows))).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "console: the audit log cannot be read");
            let page = pages::audit(&who, &aq, Err(&e.to_string()));
            (NO_AUDIT, Html(page)).into_response()
        }
    }
}

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

async fn tools_json(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
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

async fn tools_page(State(c): State<Arc<Console>>, viewer: Viewer, Query(q): Params) -> Response {
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

async fn tools_decide(
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
    let recorded = match store {
        Some(store) => {
            let entry = crate::store::AuditEntry::event(
                crate::store::Event::ToolReview,
                viewer.audit_sub(),
                viewer.client_id(),
                &d.server,
            )
            .on(&d.tool)
            .with_detail(json!({"action": d.action.as_str(), "digest": d.digest}));
            match tokio::time::timeout(audit::WAIT, store.record(&entry)).await {
                Ok(Ok(id)) => Some(id),
                Ok(Err(e)) => {
                    return error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("not decided: it could not be recorded in the audit log ({e})"),
                    )
                }
                Err(_) => {
                    return error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "not decided: the audit log's store did not answer in time",
                    )
                }
            }
        }
        None => None,
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
