//! Health and readiness for load balancers and Kubernetes probes: `GET /healthz` (the
//! process serves HTTP) and `GET /readyz` (a catalog is served, so MCP requests can be
//! answered; 503 once shutdown began, so a balancer drains the replica first).
//!
//! Probes come from the balancer or the kubelet, addressed by the pod's IP and without a
//! token, so these two routes sit outside the `Host` check and the token checks. They tell
//! nothing a caller could use: a status word, the catalog's generation number and, when the
//! catalog has MCP servers, how many are running and how many are not (never which: a
//! server's id can name an API some people may not see; the console names them).

use super::state::ServerState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct Probe {
    state: Arc<ServerState>,
    shutdown: CancellationToken,
}

/// The probe routes.
pub fn routes(state: Arc<ServerState>, shutdown: CancellationToken) -> Router {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(ready))
        .with_state(Probe { state, shutdown })
}

async fn ready(State(p): State<Probe>) -> Response {
    if p.shutdown.is_cancelled() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "shutting down"})),
        )
            .into_response();
    }
    let served = p.state.served();
    let upstreams = p.state.invoker().upstreams().filter(|u| !u.is_empty());
    // A catalog of MCP servers may be empty while every tool awaits review or no server
    // answers yet: it still answers MCP requests (with nothing found), so it is ready.
    if served.is_empty() && upstreams.is_none() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "no endpoint served"})),
        )
            .into_response();
    }
    let mut body = json!({"status": "ready", "generation": served.generation()});
    if let Some(upstreams) = upstreams {
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for (_, status) in upstreams.health() {
            *counts.entry(status.word()).or_default() += 1;
        }
        body["mcp_servers"] = json!(counts);
    }
    Json(body).into_response()
}
