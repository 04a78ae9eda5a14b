//! A real HTTP upstream for integration tests: a TMDB-shaped axum app on 127.0.0.1:0
//! that records every request it receives, so tests assert exactly what reached it
//! (method, raw path, raw query, headers, body) rather than what the client meant to send.
//!
//! Endpoints (all under `/3`, faults also at the root):
//! - `GET /3/search/movie?query=` (422 without `query`), `GET /3/movie/{movie_id}/credits`
//!   (404 unless numeric), `GET /3/movie/top_rated`, `POST /3/list` (JSON body, 201),
//!   `DELETE /3/list/{list_id}`;
//! - `GET /3/echo`: 200 echoing the request URI and headers; `GET /3/account`: 401 echoing
//!   the URI (secrets must be masked even when the upstream repeats them);
//! - faults: `/slow` (answers after 10 s), `/html500`, `/huge` (50 MB stream with a
//!   Content-Length), `/redirect-other-host` (302 to http://other.invalid/),
//!   `/redirect-same` (302 to /3/movie/top_rated), `/redirect-loop` (302 to itself);
//! - anything else: a recorded 404.
//!
//! The matching OpenAPI spec is `tests/fixtures/upstream_tmdb.json`.

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// Size of the `/huge` body.
pub const HUGE_BYTES: usize = 50 * 1024 * 1024;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// The path exactly as sent (still percent-encoded).
    pub path: String,
    /// The query exactly as sent, without `?`.
    pub query: Option<String>,
    /// Header names lower-case, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first value of a header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

pub type Log = Arc<Mutex<Vec<Recorded>>>;

/// A running upstream; stops when dropped (or with its runtime).
pub struct Upstream {
    pub addr: SocketAddr,
    pub requests: Log,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Upstream {
    /// `http://127.0.0.1:<port>/3`, the base URL to configure for the fixture spec.
    pub fn base_url(&self) -> String {
        format!("http://{}/3", self.addr)
    }

    /// A copy of everything received so far.
    pub fn received(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The only request received; panics (failing the test) otherwise.
    pub fn only(&self) -> Recorded {
        let r = self.received();
        assert_eq!(r.len(), 1, "expected exactly one request, got {r:#?}");
        r.into_iter().next().expect("one request")
    }

    pub fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the upstream on an ephemeral port.
pub async fn start() -> Upstream {
    let requests: Log = Arc::default();
    let faults = Router::new()
        .route("/slow", get(slow))
        .route("/html500", get(html500))
        .route("/huge", get(huge))
        .route(
            "/redirect-other-host",
            get(|| async { redirect("http://other.invalid/") }),
        )
        .route(
            "/redirect-same",
            get(|| async { redirect("/3/movie/top_rated") }),
        )
        .route(
            "/redirect-loop",
            get(|| async { redirect("/3/redirect-loop") }),
        );
    let tmdb = Router::new()
        .route("/search/movie", get(search_movie))
        .route("/movie/{movie_id}/credits", get(credits))
        .route("/movie/top_rated", get(top_rated))
        .route("/list", post(create_list))
        .route("/list/{list_id}", delete(delete_list))
        .route("/echo", get(echo))
        .route("/account", get(account))
        .merge(faults.clone());
    let app = Router::new()
        .nest("/3", tmdb)
        .merge(faults)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(requests.clone(), record));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = rx.await;
            })
            .await;
    });
    Upstream {
        addr,
        requests,
        shutdown: Some(tx),
    }
}

/// Records the request, then passes it on with its body intact.
async fn record(State(log): State<Log>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let rec = Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: bytes.to_vec(),
    };
    if let Ok(mut l) = log.lock() {
        l.push(rec);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

async fn search_movie(Query(q): Query<HashMap<String, String>>) -> Response {
    match q.get("query") {
        Some(text) if !text.is_empty() => Json(json!({
            "page": q.get("page").and_then(|p| p.parse::<u32>().ok()).unwrap_or(1),
            "results": [{"id": 550, "title": "Fight Club", "matched": text}],
            "total_results": 1
        }))
        .into_response(),
        _ => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"errors": ["query must be provided"]})),
        )
            .into_response(),
    }
}

async fn credits(Path(movie_id): Path<String>) -> Response {
    match movie_id.parse::<u64>() {
        Ok(id) => Json(json!({
            "id": id,
            "cast": [{"name": "Edward Norton", "character": "The Narrator"}],
            "crew": [{"name": "David Fincher", "job": "Director"}]
        }))
        .into_response(),
        Err(_) => (
            StatusCode::NOT_FOUND,
            Json(json!({"status_code": 34, "status_message": "The resource you requested could not be found."})),
        )
            .into_response(),
    }
}

async fn top_rated() -> Json<Value> {
    Json(json!({"page": 1, "results": [{"id": 278, "title": "The Shawshank Redemption"}]}))
}

async fn create_list(Json(body): Json<Value>) -> Response {
    (
        StatusCode::CREATED,
        Json(json!({"status_code": 1, "success": true, "list_id": 8245, "received": body})),
    )
        .into_response()
}

async fn delete_list(Path(list_id): Path<String>) -> Json<Value> {
    Json(
        json!({"status_code": 13, "status_message": "The item/record was deleted successfully.", "list_id": list_id}),
    )
}

async fn echo(uri: Uri, headers: HeaderMap) -> Json<Value> {
    let headers: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            )
        })
        .collect();
    Json(json!({"uri": uri.to_string(), "headers": headers}))
}

async fn account(uri: Uri) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        Json(json!({"status_code": 7, "status_message": format!("Invalid API key for {uri}")})),
    )
        .into_response()
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(10)).await;
    "finally"
}

async fn html500() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!DOCTYPE html><html><head><title>Oops</title></head><body><h1>Internal Server Error</h1>\
         <p>Something broke while rendering <b>movie</b> 550.</p></body></html>",
    )
        .into_response()
}

async fn huge() -> Response {
    const CHUNK: usize = 64 * 1024;
    let chunks = futures::stream::iter(
        (0..HUGE_BYTES / CHUNK).map(|_| Ok::<_, Infallible>(Bytes::from(vec![b'x'; CHUNK]))),
    );
    (
        [
            (header::CONTENT_TYPE, "text/plain".to_string()),
            (header::CONTENT_LENGTH, HUGE_BYTES.to_string()),
        ],
        Body::from_stream(chunks),
    )
        .into_response()
}

fn redirect(location: &str) -> Response {
    (
        StatusCode::FOUND,
        [(header::LOCATION, location.to_string())],
    )
        .into_response()
}

async fn not_found(uri: Uri) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": "no such route", "path": uri.path()})),
    )
        .into_response()
}
