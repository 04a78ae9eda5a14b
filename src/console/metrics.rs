//! `GET /metrics`: the server's Prometheus metrics ([`crate::telemetry::metrics`]), for
//! the platform team's scraper.
//!
//! Mounted with the console, so behind its guards (loopback or `--allow-host` names, the
//! static token or a verified access token), and answered to admins only: the per-API
//! labels name every API of the catalog, hidden ones included, which a person whose
//! `visible_to` rules hide an API must not learn of. A scraper authenticates as the
//! operator (the static token) or as a client whose token `[auth] admins` names.

use super::viewer::Viewer;
use super::Console;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The content type of the Prometheus text exposition format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metrics route, with the console's state (the admins of the catalog now served).
pub fn router(console: Arc<Console>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(metrics))
        .with_state(console)
}

async fn metrics(
    axum::extract::State(console): axum::extract::State<Arc<Console>>,
    viewer: Viewer,
) -> Response {
    if !viewer.is_admin() {
        tracing::info!(viewer = %viewer.describe(), "metrics refused: not an admin");
        return (
            StatusCode::FORBIDDEN,
            "metrics are for the console's admins ([auth] admins)\n",
        )
            .into_response();
    }
    if let Some(u) = console
        .server()
        .invoker()
        .upstreams()
        .filter(|u| !u.is_empty())
    {
        let mut states = std::collections::BTreeMap::new();
        for word in crate::upstream::Status::WORDS {
            states.insert(word, 0);
        }
        for (_, status) in u.health() {
            *states.entry(status.word()).or_default() += 1;
        }
        let held = u.pins().map(|p| p.held_counts()).unwrap_or_default();
        crate::telemetry::metrics::mcp_servers(&states, &held);
        crate::telemetry::metrics::mcp_waiting(
            u.personal_connections(),
            console.server().parked().len(),
        );
    }
    match crate::telemetry::metrics::render() {
        Some(text) => ([(header::CONTENT_TYPE, TEXT_FORMAT)], text).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "this command records no metrics (shortlist serve --http does)\n",
        )
            .into_response(),
    }
}
