//! A streamable-HTTP session is its person's, on every method.
//!
//! A 2025-11-25 session id (`Mcp-Session-Id`) is a bearer of state: the person's
//! shortlist, the answers the SDK's event store keeps to replay on a `GET` with
//! `Last-Event-ID`, the power to end the session with `DELETE`. On a server that verifies
//! people (`[auth]`), the session is bound to the person whose token initialized it, in
//! front of the SDK's transport (GET and DELETE never reach the MCP handler), and a
//! request naming it with anyone else's token is answered exactly as for a session that
//! does not exist, so as not to confirm that it does.

use crate::auth::Principal;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The header a streamable HTTP session is named by.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Who each session belongs to.
pub struct SessionOwners {
    owners: Mutex<HashMap<String, String>>,
    manager: Arc<LocalSessionManager>,
}

impl SessionOwners {
    pub fn new(manager: Arc<LocalSessionManager>) -> Arc<SessionOwners> {
        Arc::new(SessionOwners {
            owners: Mutex::new(HashMap::new()),
            manager,
        })
    }

    fn owner(&self, id: &str) -> Option<String> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// How many sessions are bound (tests, diagnostics).
    pub fn len(&self) -> usize {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no session is bound.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets the owners of sessions the transport no longer has (ended, expired), now
    /// and then, so the map does not outgrow the sessions alive.
    pub fn spawn_sweeper(self: &Arc<Self>, shutdown: CancellationToken) {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tick.tick() => me.sweep().await,
                }
            }
        });
    }

    /// Forgets owners of sessions that ended.
    pub async fn sweep(&self) {
        let ids: Vec<String> = self
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for id in ids {
            let alive = self
                .manager
                .has_session(&Arc::from(id.as_str()))
                .await
                .unwrap_or(true);
            if !alive {
                self.owners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            }
        }
    }
}

/// The answer for a session this person has none of: the transport's own words for an
/// unknown session.
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// Middleware in front of `/mcp` (behind the access-token check): binds a new session to
/// the person whose request created it, and lets only that person name it afterwards.
/// Without a verified person (no `[auth]` table) there is one identity, and nothing to do.
pub async fn bind_sessions(
    State(owners): State<Arc<SessionOwners>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(sub) = req.extensions().get::<Principal>().map(|p| p.sub.clone()) else {
        return next.run(req).await;
    };
    let named = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match named {
        Some(id) => {
            // A session this server bound to someone else, or never bound (every session
            // of a server with people is bound when it is created): not this person's.
            if owners.owner(&id).as_deref() != Some(sub.as_str()) {
                tracing::warn!(sub = %sub, method = %req.method(), "a session id was used with a token of someone else than its person; answered as unknown");
                return unknown_session();
            }
            let delete = req.method() == Method::DELETE;
            let res = next.run(req).await;
            if delete && res.status().is_success() {
                owners
                    .owners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
            }
            res
        }
        None => {
            let res = next.run(req).await;
            // An initialize that created a session: it is this person's.
            if let Some(id) = res
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                owners
                    .owners
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id.to_string(), sub);
            }
            res
        }
    }
}
