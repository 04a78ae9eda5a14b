//! The HTTP client the OTLP exporter posts spans with: the process's own reqwest, in its
//! blocking form.
//!
//! The SDK's batch processor exports from a thread of its own, outside any async runtime,
//! so an async client (whose connections belong to a runtime) cannot serve it; reqwest's
//! blocking client runs its own. Sharing reqwest keeps a second HTTP and TLS stack out of
//! the binary.

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// Posts OTLP requests with reqwest's blocking client.
#[derive(Debug)]
pub struct BlockingReqwest(reqwest::blocking::Client);

impl BlockingReqwest {
    /// A client that never follows redirects (a collector does not send any) and gives
    /// up after `timeout`.
    pub fn new(timeout: std::time::Duration) -> Result<BlockingReqwest, reqwest::Error> {
        reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map(BlockingReqwest)
    }
}

#[async_trait::async_trait]
impl HttpClient for BlockingReqwest {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut req = self
            .0
            .request(parts.method, parts.uri.to_string())
            .body(body.to_vec());
        for (name, value) in parts.headers.iter() {
            req = req.header(name, value);
        }
        let res = req.send()?;
        let mut out = Response::builder().status(res.status());
        for (name, value) in res.headers() {
            out = out.header(name, value);
        }
        let bytes = res.bytes()?;
        Ok(out.body(bytes)?)
    }
}
