//! The console's routes: the pages, their assets, and the JSON endpoints behind them
//! (`docs/console.md`). Errors are JSON `{"error": "..."}` naming the argument at fault.
//!
//! Every handler reads its [`Viewer`]: a person sees only the APIs their `visible_to` rules
//! show them (a hidden API is absent, as over MCP), and only admins read the audit log.
//!
//! Writes (`POST`) take JSON only: a page on another site can send a form to a loopback
//! server, but not a JSON body without the browser asking first, and the `Origin` guard in
//! front of these routes refuses it then.

use super::answers::{error, json_body, param, MAX_CARDS, MAX_ITEMS};
use super::audit::{self, AuditQuery};
use super::health::Filter;
use super::review::Status;
use super::review_write::{Review, ReviewError};
use super::viewer::Viewer;
use super::{html, pages, tool_routes, try_request, Console};
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
        .route("/console/tools", get(tool_routes::page))
        .route("/console/audit", get(audit_page))
        .route("/console/assets/console.css", get(css))
        .route("/console/assets/console.js", get(js))
        .route("/console/assets/icon.svg", get(icon))
        .route("/console/api/health", get(health_json))
        .route("/console/api/review", get(review_json).post(review_save))
        .route("/console/api/try", axum::routing::post(try_json))
        .route(
            "/console/api/tools",
            get(tool_routes::list).post(tool_routes::decide),
        )
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
