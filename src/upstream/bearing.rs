//! The token an HTTP connection to an MCP server carries, read afresh for every request.
//!
//! A connection lives longer than the tokens it is opened with: an exchanged or consented
//! token expires in minutes, a machine token is renewed. So the connection does not keep a
//! token of its own; each request takes whatever its [`TokenSlot`] holds now, and a refusal
//! (`401`) is noted there, so the caller can fetch a fresh token and call again instead of
//! backing the server off as if it were down.

use reqwest_mcp::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// The token one connection sends now, and whether the server refused it.
#[derive(Default)]
pub struct TokenSlot {
    token: RwLock<Option<String>>,
    refused: AtomicBool,
}

impl std::fmt::Debug for TokenSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSlot")
            .field("refused", &self.refused())
            .finish_non_exhaustive()
    }
}

impl TokenSlot {
    /// A slot holding `token` from the start.
    pub fn holding(token: Option<String>) -> TokenSlot {
        TokenSlot {
            token: RwLock::new(token),
            refused: AtomicBool::new(false),
        }
    }

    /// The token the next requests carry; a new token clears an earlier refusal.
    pub fn set(&self, token: Option<String>) {
        let mut held = self.token.write().unwrap_or_else(|e| e.into_inner());
        if *held != token {
            self.refused.store(false, Ordering::SeqCst);
        }
        *held = token;
    }

    fn get(&self) -> Option<String> {
        self.token.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether the server refused the token held now (`401`).
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::SeqCst)
    }

    /// Notes what a request's answer says of the token.
    fn note<T, E: std::error::Error + Send + Sync + 'static>(
        &self,
        answered: &Result<T, StreamableHttpError<E>>,
    ) {
        // A 401 with a challenge, or one without (rmcp then says `HTTP 401 ...`).
        let refused = match answered {
            Err(StreamableHttpError::AuthRequired(_)) => true,
            Err(StreamableHttpError::UnexpectedServerResponse(m)) => m.starts_with("HTTP 401"),
            _ => false,
        };
        if refused {
            self.refused.store(true, Ordering::SeqCst);
        }
    }
}

/// An HTTP client whose requests carry the token in `slot` (see the module documentation).
#[derive(Clone)]
pub struct Bearing {
    pub inner: reqwest_mcp::Client,
    pub slot: Arc<TokenSlot>,
}

type Headers = HashMap<HeaderName, HeaderValue>;

/// The event bound rmcp's transport passes when none is configured.
fn default_max() -> usize {
    rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::default()
        .max_sse_event_size
}
type Stream = futures::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>;
type Failed = StreamableHttpError<reqwest_mcp::Error>;

impl StreamableHttpClient for Bearing {
    type Error = reqwest_mcp::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth,
            headers,
            default_max(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth: Option<String>,
        headers: Headers,
        max: usize,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let answered = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                self.slot.get(),
                headers,
                max,
            )
            .await;
        self.slot.note(&answered);
        answered
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth: Option<String>,
        headers: Headers,
    ) -> Result<(), Failed> {
        self.inner
            .delete_session(uri, session_id, self.slot.get(), headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: Headers,
    ) -> Result<Stream, Failed> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth,
            headers,
            default_max(),
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth: Option<String>,
        headers: Headers,
        max: usize,
    ) -> Result<Stream, Failed> {
        let answered = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                self.slot.get(),
                headers,
                max,
            )
            .await;
        self.slot.note(&answered);
        answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_clears_a_refusal() {
        let slot = TokenSlot::holding(Some("a".into()));
        let refused: Result<(), StreamableHttpError<std::io::Error>> =
            Err(StreamableHttpError::AuthRequired(
                rmcp::transport::streamable_http_client::AuthRequiredError::new("Bearer".into()),
            ));
        slot.note(&refused);
        assert!(slot.refused());
        slot.set(Some("a".into()));
        assert!(slot.refused(), "the same token stays refused");
        slot.set(Some("b".into()));
        assert!(!slot.refused());
        assert_eq!(slot.get().as_deref(), Some("b"));
        // Other failures say nothing of the token, whatever digits their text holds.
        let other: Result<(), StreamableHttpError<std::io::Error>> = Err(
            StreamableHttpError::UnexpectedServerResponse("HTTP 500: error 401 in body".into()),
        );
        slot.note(&other);
        assert!(!slot.refused());
        let bare: Result<(), StreamableHttpError<std::io::Error>> = Err(
            StreamableHttpError::UnexpectedServerResponse("HTTP 401 Unauthorized: no".into()),
        );
        slot.note(&bare);
        assert!(slot.refused());
    }
}
