//! Reaching an MCP server over the HTTP+SSE transport of protocol revision 2024-11-05,
//! which older remote servers still speak: the client opens a `GET` event stream, the
//! server names (in an `endpoint` event) the URL to `POST` messages to, and every answer
//! and notification comes back on the stream as a `message` event.
//!
//! The same rules as streamable HTTP apply (see [`super::http`]): no proxy, no redirects,
//! the address policy, the entry's bearer token and headers. The message endpoint must be
//! on the stream's own origin: a server cannot send shortlist's requests, and the token
//! with them, to another host. Events are bounded ([`MAX_EVENT_BYTES`]): a server that
//! writes more in one event loses its connection, not shortlist's memory.

use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::borrow::Cow;
use tokio::sync::mpsc;

/// The largest event (its data lines together) read from the stream.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Messages read ahead of the client.
const QUEUE: usize = 64;

/// Why the transport failed, in words.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SseError(String);

/// An open HTTP+SSE connection.
pub struct SseTransport {
    client: reqwest_mcp::Client,
    /// Where messages are posted (the `endpoint` event's URL).
    post_to: url::Url,
    headers: reqwest_mcp::header::HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One event as read: its type and its data lines joined.
#[derive(Debug, Default, PartialEq, Eq)]
struct Event {
    kind: Option<String>,
    data: String,
}

/// The stream's events, parsed line by line within [`MAX_EVENT_BYTES`].
#[derive(Default)]
struct Parser {
    pending: Vec<u8>,
    event: Event,
    has_data: bool,
}

impl Parser {
    /// Feeds `bytes`; the events they complete, or why the stream is refused.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, String> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if self.has_data || self.event.kind.is_some() {
                    out.push(std::mem::take(&mut self.event));
                }
                self.has_data = false;
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line, ""),
            };
            match field {
                "event" => self.event.kind = Some(value.to_string()),
                "data" => {
                    if self.has_data {
                        self.event.data.push('\n');
                    }
                    self.event.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
            if self.event.data.len() > MAX_EVENT_BYTES {
                return Err(format!(
                    "the server sent an event over {} MiB",
                    MAX_EVENT_BYTES / (1024 * 1024)
                ));
            }
        }
        if self.pending.len() > MAX_EVENT_BYTES {
            return Err(format!(
                "the server sent a line over {} MiB",
                MAX_EVENT_BYTES / (1024 * 1024)
            ));
        }
        Ok(out)
    }
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for the server to name its message
    /// endpoint.
    pub async fn connect(
        client: reqwest_mcp::Client,
        url: &str,
        headers: reqwest_mcp::header::HeaderMap,
    ) -> Result<SseTransport, String> {
        use futures::StreamExt;
        let base = url::Url::parse(url).map_err(|e| format!("`url` is not a URL: {e}"))?;
        let res = client
            .get(base.clone())
            .headers(headers.clone())
            .header(reqwest_mcp::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("cannot open the event stream: {}", without_url(&e)))?;
        if !res.status().is_success() {
            return Err(format!(
                "the event stream answered {} (an HTTP+SSE server answers 200 to GET)",
                res.status()
            ));
        }
        let mut body = res.bytes_stream();
        let mut parser = Parser::default();
        let mut ready = Vec::new();
        // The first event names the endpoint; what follows it in the same read is kept.
        let post_to = loop {
            let Some(chunk) = body.next().await else {
                return Err("the event stream ended before naming a message endpoint".into());
            };
            let chunk =
                chunk.map_err(|e| format!("the event stream failed: {}", without_url(&e)))?;
            let mut events = parser.feed(&chunk)?.into_iter();
            if let Some(at) = events
                .by_ref()
                .find(|e| e.kind.as_deref() == Some("endpoint"))
            {
                ready.extend(events);
                break endpoint(&base, at.data.trim())?;
            }
        };
        let (tx, incoming) = mpsc::channel(QUEUE);
        let reader = tokio::spawn(async move {
            let mut pending: std::collections::VecDeque<Event> = ready.into();
            loop {
                while let Some(e) = pending.pop_front() {
                    if !matches!(e.kind.as_deref(), None | Some("message")) {
                        continue;
                    }
                    match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&e.data) {
                        Ok(m) => {
                            if tx.send(m).await.is_err() {
                                return;
                            }
                        }
                        Err(err) => {
                            tracing::warn!(
                                "an MCP server sent a message that is not JSON-RPC: {err}"
                            )
                        }
                    }
                }
                match body.next().await {
                    Some(Ok(chunk)) => match parser.feed(&chunk) {
                        Ok(events) => pending.extend(events),
                        Err(why) => {
                            tracing::warn!("MCP event stream closed: {why}");
                            return;
                        }
                    },
                    Some(Err(e)) => {
                        tracing::warn!("MCP event stream failed: {}", without_url(&e));
                        return;
                    }
                    None => return,
                }
            }
        });
        Ok(SseTransport {
            client,
            post_to,
            headers,
            incoming,
            reader,
        })
    }
}

/// The message endpoint an `endpoint` event names, on the stream's own origin only.
fn endpoint(base: &url::Url, named: &str) -> Result<url::Url, String> {
    let url = base
        .join(named)
        .map_err(|e| format!("the server named a message endpoint that is not a URL: {e}"))?;
    if url.origin() != base.origin() {
        return Err(format!(
            "the server named a message endpoint on another origin ({}): refused, messages \
             and credentials go only where the catalog config points",
            url.origin().ascii_serialization()
        ));
    }
    Ok(url)
}

/// A request error without its URL, which may carry a query credential.
fn without_url(e: &reqwest_mcp::Error) -> String {
    let mut text = e.to_string();
    if let Some(u) = e.url() {
        text = text.replace(u.as_str(), "(the server's URL)");
    }
    text
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        "HTTP+SSE".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), SseError>> + Send + 'static {
        let request = self
            .client
            .post(self.post_to.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let res = request
                .send()
                .await
                .map_err(|e| SseError(format!("cannot post a message: {}", without_url(&e))))?;
            if res.status().is_success() {
                Ok(())
            } else {
                Err(SseError(format!(
                    "the message endpoint answered {}",
                    res.status()
                )))
            }
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), SseError> {
        self.reader.abort();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_across_chunks() {
        let mut p = Parser::default();
        assert!(p
            .feed(b"event: endpoint\r\ndata: /message?sessionId=1")
            .unwrap()
            .is_empty());
        let got = p
            .feed(b"\r\n\r\n: a comment\n\ndata: {\"a\":\ndata: 1}\n\n")
            .unwrap();
        assert_eq!(
            got,
            vec![
                Event {
                    kind: Some("endpoint".into()),
                    data: "/message?sessionId=1".into()
                },
                Event {
                    kind: None,
                    data: "{\"a\":\n1}".into()
                },
            ]
        );
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut p = Parser::default();
        let line = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(p.feed(&line).is_err());
        let mut p = Parser::default();
        let chunk = format!("data: {}\n", "y".repeat(1024 * 1024));
        let mut failed = false;
        for _ in 0..20 {
            if p.feed(chunk.as_bytes()).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed);
    }

    #[test]
    fn the_message_endpoint_stays_on_the_streams_origin() {
        let base = url::Url::parse("https://mcp.example.com/sse").unwrap();
        assert_eq!(
            endpoint(&base, "/message?sessionId=a").unwrap().as_str(),
            "https://mcp.example.com/message?sessionId=a"
        );
        for elsewhere in [
            "https://attacker.example/collect",
            "http://mcp.example.com/message",
            "https://mcp.example.com:8443/message",
            "//attacker.example/x",
        ] {
            assert!(endpoint(&base, elsewhere).is_err(), "{elsewhere}");
        }
    }
}
