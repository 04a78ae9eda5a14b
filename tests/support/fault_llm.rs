//! A scriptable OpenAI-compatible chat completions server for enrichment tests: it answers
//! each request as a test script says (good JSON, 429, 500, a hang, invalid or truncated
//! JSON, a 400 refusing `response_format`, a 401 echoing the key), records every request,
//! and runs on its own thread so that the `shortlist` binary can be driven against it.
//!
//! Use with `#[path = "support/fault_llm.rs"] mod fault_llm;`.
#![allow(dead_code)]

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A valid answer built from the request's `json_schema` (or from the prompt).
    Good,
    /// This message content, `finish_reason: stop`.
    Content(String),
    /// This message content, `finish_reason: length` (cut off at max_tokens).
    Truncated(String),
    /// An error status with a JSON error body.
    Status(u16, String),
    /// 429 with `Retry-After: secs`.
    RateLimited(u64),
    /// Wait this long, then answer `Good`.
    Hang(Duration),
    /// 401 whose body echoes the Authorization header (a badly behaved server).
    EchoAuth401,
    /// 200 with a body that is not JSON at all.
    NotJson,
}

/// One received request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub body: Value,
    pub authorization: Option<String>,
}

impl Seen {
    /// The user prompt (the first user message).
    pub fn prompt(&self) -> String {
        self.body["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|x| x["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    }

    /// `json_schema`, `json_object` or `none`.
    pub fn format(&self) -> String {
        self.body["response_format"]["type"]
            .as_str()
            .unwrap_or("none")
            .to_string()
    }
}

pub type Script = Arc<dyn Fn(usize, &Seen) -> Reply + Send + Sync>;

#[derive(Clone)]
struct AppState {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A running fault server; stops when dropped.
pub struct FaultLlm {
    /// The base URL to pass as `--llm-url` (ends in `/v1`).
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultLlm {
    /// Starts a server answering request `n` (0-based) with `script(n, request)`.
    pub fn start(script: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> FaultLlm {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = AppState {
            script: Arc::new(script),
            seen: seen.clone(),
        };
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                addr_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("send addr");
                let app = Router::new()
                    .route("/v1/chat/completions", post(handle))
                    .with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop_rx.await;
                    })
                    .await;
            });
        });
        let addr = addr_rx.recv().expect("fault server address");
        FaultLlm {
            url: format!("http://{addr}/v1"),
            seen,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Every request received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for FaultLlm {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        // A hung handler would keep graceful shutdown waiting; don't join in that case.
        if let Some(t) = self.thread.take() {
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

async fn handle(
    State(st): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let seen = Seen {
        body,
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let n = {
        let mut log = st.seen.lock().expect("log");
        log.push(seen.clone());
        log.len() - 1
    };
    let mut reply = (st.script)(n, &seen);
    if let Reply::Hang(d) = reply {
        tokio::time::sleep(d).await;
        reply = Reply::Good;
    }
    match reply {
        Reply::Good => completion(&good_answer(&seen), "stop"),
        Reply::Content(c) => completion(&c, "stop"),
        Reply::Truncated(c) => completion(&c, "length"),
        Reply::Status(code, msg) => (
            StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            Json(json!({"error": {"message": msg}})),
        )
            .into_response(),
        Reply::RateLimited(secs) => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", secs.to_string())],
            Json(json!({"error": {"message": "slow down"}})),
        )
            .into_response(),
        Reply::EchoAuth401 => (
            StatusCode::UNAUTHORIZED,
            format!(
                "invalid credentials: {}",
                seen.authorization.unwrap_or_default()
            ),
        )
            .into_response(),
        Reply::NotJson => (StatusCode::OK, "<html>proxy error</html>").into_response(),
        Reply::Hang(_) => unreachable!(),
    }
}

fn completion(content: &str, finish: &str) -> Response {
    Json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "fault-model",
        "choices": [{"index": 0, "finish_reason": finish,
            "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
    .into_response()
}

/// A valid answer: an instance of the request's `json_schema`, or, without one, of the
/// task the prompt's last line names.
pub fn good_answer(seen: &Seen) -> String {
    let schema = &seen.body["response_format"]["json_schema"]["schema"];
    if schema.is_object() {
        return instance(schema, "x", 0).to_string();
    }
    let p = seen.prompt();
    let v = if p.contains("{\"questions\"") {
        json!({"questions": ["Which items does this endpoint list for me?", "How do I see all of them?"]})
    } else if p.contains("{\"summary\"") {
        json!({"summary": "Lists the requested items with their details."})
    } else {
        json!({"description": "Returns the requested items with their details."})
    };
    v.to_string()
}

/// A value matching a (simple) schema; `name` makes texts distinct.
pub fn instance(s: &Value, name: &str, i: usize) -> Value {
    if let Some(e) = s["enum"].as_array().and_then(|e| e.first()) {
        return e.clone();
    }
    match s["type"].as_str().unwrap_or("string") {
        "object" => {
            let mut m = Map::new();
            if let Some(props) = s["properties"].as_object() {
                for (k, v) in props {
                    m.insert(k.clone(), instance(v, k, 0));
                }
            }
            Value::Object(m)
        }
        "array" => {
            let n = s["minItems"].as_u64().unwrap_or(2).max(2) as usize;
            Value::Array((0..n).map(|j| instance(&s["items"], name, j + 1)).collect())
        }
        "integer" => json!(s["minimum"].as_i64().unwrap_or(1)),
        "number" => json!(s["minimum"].as_f64().unwrap_or(1.5)),
        "boolean" => json!(true),
        _ => json!(format!(
            "Generated text number {i} explaining what {name} means here."
        )),
    }
}
