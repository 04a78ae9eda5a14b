//! The HTTP+SSE transport of protocol 2024-11-05, for clients that predate streamable HTTP.
//!
//! rmcp dropped this transport (0.11), so this is a thin adapter over rmcp's generic one:
//! each `GET /sse` connection gets a pair of channels that rmcp serves like any other
//! transport (a sink of server messages, a stream of client messages), and a session id.
//!
//! - `GET /sse` answers an event stream whose first event, `endpoint`, tells the client
//!   where to post (`/message?sessionId=<id>`); every server message follows as a
//!   `message` event.
//! - `POST /message?sessionId=<id>` takes one JSON-RPC message and answers 202; the reply
//!   travels on the event stream. A body that is not JSON-RPC is answered 400 with a
//!   JSON-RPC error at once: with no id to answer to, the stream could not carry it.
//!
//! Closing the event stream ends the session and frees its exposed tools.
//!
//! On a server that verifies people (`[auth]`), a connection is its person's: the one
//! whose token opened `GET /sse`. A `POST /message` naming it with anyone else's token is
//! answered as for a connection that does not exist, and each message carries the
//! request it came in (the verified person and their token, as on `/mcp`), so visibility,
//! per-person credentials and the audit log work here as they do there.

use super::clients::ClientKey;
use super::handler::ShortlistServer;
use super::state::ServerState;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use serde::Deserialize;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Messages buffered per direction before a slow peer applies back-pressure.
const CHANNEL_CAPACITY: usize = 64;

/// One open connection: where its messages go, and whose it is (`None` on a server
/// without `[auth]`).
struct Connection {
    to_server: mpsc::Sender<ClientJsonRpcMessage>,
    owner: Option<String>,
}

/// The open legacy SSE connections.
pub struct LegacySse {
    state: Arc<ServerState>,
    connections: Mutex<HashMap<String, Connection>>,
    shutdown: CancellationToken,
    keep_alive: Duration,
}

impl LegacySse {
    pub fn new(state: Arc<ServerState>, shutdown: CancellationToken) -> Arc<LegacySse> {
        Arc::new(LegacySse {
            state,
            connections: Mutex::new(HashMap::new()),
            shutdown,
            keep_alive: Duration::from_secs(15),
        })
    }

    /// The sender of connection `id`, if it is `sub`'s (anyone's without people).
    fn sender(&self, id: &str, sub: Option<&str>) -> Option<mpsc::Sender<ClientJsonRpcMessage>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .filter(|c| c.owner.as_deref() == sub)
            .map(|c| c.to_server.clone())
    }

    fn forget(&self, id: &str) {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// Number of open connections.
    pub fn len(&self) -> usize {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `GET /sse`: opens a connection, for the person whose token opened it.
pub async fn connect(
    State(sse): State<Arc<LegacySse>>,
    parts: axum::http::request::Parts,
) -> Response {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = mpsc::channel::<ClientJsonRpcMessage>(CHANNEL_CAPACITY);
    let (to_client, from_server) = mpsc::channel::<ServerJsonRpcMessage>(CHANNEL_CAPACITY);
    let owner = crate::auth::Principal::from_parts(&parts).map(|p| p.sub.clone());
    sse.connections
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id.clone(), Connection { to_server, owner });

    let ct = sse.shutdown.child_token();
    let handler = super::Observed::new(ShortlistServer::for_connection(
        Arc::clone(&sse.state),
        ClientKey::sse(&id),
    ));
    {
        let sse = Arc::clone(&sse);
        let id = id.clone();
        let ct = ct.clone();
        tokio::spawn(async move {
            match rmcp::service::serve_server_with_ct(handler, (to_client, from_client), ct).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "legacy SSE session ended before initialization")
                }
            }
            sse.forget(&id);
            tracing::debug!(client = %ClientKey::sse(&id), "legacy SSE session closed");
        });
    }
    tracing::debug!(client = %ClientKey::sse(&id), "legacy SSE session opened");

    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    // The guard lives in the stream: when the client goes away axum drops the stream, the
    // token is cancelled and the rmcp session (and the client's exposed set) ends with it.
    let guard = ct.drop_guard();
    let messages = from_server.map(move |m| {
        let _keep = &guard;
        let data = serde_json::to_string(&m).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot serialize a server message");
            String::from("{}")
        });
        Event::default().event("message").data(data)
    });
    let stream = futures::stream::once(async move { endpoint })
        .chain(messages)
        .map(Ok::<_, Infallible>);
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(sse.keep_alive))
        .into_response()
}

#[derive(Deserialize)]
pub struct MessageQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// `POST /message?sessionId=<id>`: one client message for a connection, from its person.
pub async fn message(
    State(sse): State<Arc<LegacySse>>,
    Query(q): Query<MessageQuery>,
    parts: axum::http::request::Parts,
    body: Bytes,
) -> Response {
    let Some(id) = q.session_id.filter(|s| !s.is_empty()) else {
        return (
            StatusCode::BAD_REQUEST,
            "Bad Request: sessionId is required",
        )
            .into_response();
    };
    let sub = crate::auth::Principal::from_parts(&parts).map(|p| p.sub.clone());
    let Some(mut tx) = sse.sender(&id, sub.as_deref()) else {
        if sub.is_some() {
            tracing::debug!("a legacy SSE message named a connection that is not its sender's");
        }
        return (StatusCode::NOT_FOUND, "Not Found: no such session").into_response();
    };
    let mut msg = match super::parse_error::message(&body) {
        Ok(m) => m,
        Err(rejection) => return *rejection,
    };
    // As on /mcp: the handler reads the person (and their token) from the request.
    match &mut msg {
        ClientJsonRpcMessage::Request(r) => {
            r.request.extensions_mut().insert(parts);
        }
        ClientJsonRpcMessage::Notification(n) => {
            n.notification.extensions_mut().insert(parts);
        }
        _ => {}
    }
    match tx.send(msg).await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(_) => {
            sse.forget(&id);
            (StatusCode::NOT_FOUND, "Not Found: the session has ended").into_response()
        }
    }
}
