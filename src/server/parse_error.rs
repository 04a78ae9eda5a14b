//! A body that is not a JSON-RPC message gets HTTP 400 with a JSON-RPC error, on both
//! HTTP transports: `-32700 Parse error` for text that is not JSON, `-32600 Invalid
//! Request` for JSON that is no message. The error has `id: null` (there is no id to
//! answer to).
//!
//! rmcp's streamable HTTP service answers such a body `415 Unsupported Media Type` with a
//! plain-text message (`expect_json` in rmcp's `transport/common/server_side_http.rs`),
//! which clients cannot tell from a wrong `Content-Type`; [`on_mcp`] checks the body in
//! front of it.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use rmcp::model::ClientJsonRpcMessage;

/// The message in `body`, or the 400 response saying why there is none.
pub fn message(body: &[u8]) -> Result<ClientJsonRpcMessage, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        let (code, what) = if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() {
            (-32600, "Invalid Request")
        } else {
            (-32700, "Parse error")
        };
        let text = crate::text::clip_chars(&e.to_string(), 200);
        Box::new(
            (
                StatusCode::BAD_REQUEST,
                Json(serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": code, "message": format!("{what}: {text}")}
                })),
            )
                .into_response(),
        )
    })
}

/// Middleware for `/mcp`: a JSON `POST` whose body is not a JSON-RPC message is answered
/// here; anything else goes on to rmcp unchanged (its body read once, up to
/// `max_body_bytes`, rmcp's own limit).
pub async fn on_mcp(State(max_body_bytes): State<usize>, req: Request, next: Next) -> Response {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("application/json")
        });
    if req.method() != Method::POST || !json {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, max_body_bytes).await {
        Ok(b) => b,
        Err(e) => {
            // axum reports the limit as a `LengthLimitError` somewhere in the chain.
            let mut too_large = false;
            let mut cur: Option<&dyn std::error::Error> = Some(&e);
            while let Some(err) = cur {
                too_large |= err.to_string().contains("length limit exceeded");
                cur = err.source();
            }
            return if too_large {
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("Payload Too Large: request body exceeds {max_body_bytes} bytes"),
                )
                    .into_response()
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {e}"),
                )
                    .into_response()
            };
        }
    };
    if let Err(rejection) = message(&bytes) {
        return *rejection;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
