//! The client side shortlist plays towards an upstream MCP server.
//!
//! It advertises no capability (no roots, no sampling, no elicitation): an upstream may
//! ask its client for them, and shortlist never answers on a person's behalf. An
//! elicitation or a sampling request is passed to the person whose call it belongs to
//! where that can be known ([`super::elicit`]), and declined otherwise. Roots are always
//! declined: they name folders on the person's machine, which a server behind shortlist
//! (running where shortlist runs, and shared on a team server) is not told. What it
//! listens for is `notifications/tools/list_changed`, which makes the server's owner list
//! it again, and the progress of calls that asked for it ([`super::progress`]).

// Roots, sampling and logging are deprecated in the newest revision, but upstreams on older
// ones still use them: declining and logging them is what this handler is for.
#![allow(deprecated)]

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorData, Implementation,
    ListRootsRequestMethod, ListRootsResult, LoggingMessageNotificationParam, NumberOrString,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use std::sync::Arc;

/// What the handler calls when the upstream says its tools changed.
pub type OnListChanged = Arc<dyn Fn() + Send + Sync>;

/// One connection's client handler.
#[derive(Clone)]
pub struct Handler {
    server: Arc<str>,
    on_list_changed: OnListChanged,
    relays: super::progress::Relays,
    in_flight: super::elicit::InFlight,
}

impl Handler {
    pub fn new(
        server: &str,
        on_list_changed: OnListChanged,
        relays: super::progress::Relays,
        in_flight: super::elicit::InFlight,
    ) -> Handler {
        Handler {
            server: server.into(),
            on_list_changed,
            relays,
            in_flight,
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("shortlist", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(ask) = self.in_flight.sole_asker() else {
            tracing::info!(server = %self.server, "an elicitation nobody can answer was declined");
            return Ok(super::elicit::declined());
        };
        match ask(super::elicit::labelled(&self.server, params)).await {
            Ok(answer) => Ok(answer),
            Err(why) => {
                tracing::info!(server = %self.server, "an elicitation was declined: {why}");
                Ok(super::elicit::declined())
            }
        }
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let token = match &params.progress_token.0 {
            NumberOrString::String(s) => s.to_string(),
            NumberOrString::Number(n) => n.to_string(),
        };
        if !self
            .relays
            .relay(&token, params.progress, params.total, params.message)
        {
            tracing::debug!(server = %self.server, "progress for no call in flight, dropped");
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "the MCP server's tools changed");
        (self.on_list_changed)();
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Err(ErrorData::method_not_found::<ListRootsRequestMethod>())
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(sample) = self.in_flight.sole_sampler() else {
            tracing::info!(server = %self.server, "a sampling request nobody can answer was refused");
            return Err(ErrorData::method_not_found::<CreateMessageRequestMethod>());
        };
        sample(params).await.map_err(|why| {
            tracing::info!(server = %self.server, "a sampling request was refused: {why}");
            ErrorData::invalid_request(format!("the client did not sample: {why}"), None)
        })
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = crate::text::clip_chars(&params.data.to_string(), 2_000);
        tracing::info!(server = %self.server, level = ?params.level, "{text}");
    }
}
