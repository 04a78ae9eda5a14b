//! The MCP service as transports serve it: the handler ([`super::ShortlistServer`]) with
//! what every request passes through on its way in and out, and what the server declares.
//!
//! - Declared is what is answered ([`capabilities`]): tools; prompts, resources and
//!   completions, of which the server has none (their lists are empty, `prompts/get` and
//!   `resources/read` name nothing that exists, completions have no values); logging.
//!   Anything else (resource subscriptions, tasks, skills, unknown methods) answers
//!   method-not-found.
//! - `logging/setLevel`, for clients with sessions: the level is kept for the session.
//!   The server sends no `notifications/message` at present, so every level is honoured
//!   by sending nothing below it. The 2026-07-28 revision has no such method: a stateless
//!   request for it answers method-not-found.
//! - Every request is counted by method and result ([`crate::telemetry::metrics`]).

#![allow(deprecated)] // logging: deprecated for 2026-07-28, still the sessions' capability

use rmcp::model::*;
use rmcp::service::{
    MaybeSendFuture, NotificationContext, RequestContext, RoleServer, SubscriptionContext,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use std::borrow::Cow;
use std::future::Future;
use std::sync::{Mutex, PoisonError};

/// A handler `S` served with the checks and counts above. Every `ServerHandler` method is
/// passed on to `S` (requests counted), but for `prompts/get`, `resources/read` and
/// `logging/setLevel`, answered here.
pub struct Observed<S> {
    inner: S,
    /// The session's `logging/setLevel`, if it sent one.
    level: Mutex<Option<LoggingLevel>>,
}

impl<S> Observed<S> {
    pub fn new(inner: S) -> Observed<S> {
        Observed {
            inner,
            level: Mutex::new(None),
        }
    }

    /// The level the session asked for with `logging/setLevel`.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        *self.level.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the server declares, at initialization and in `server/discover`: exactly what
/// [`Observed`] and the handler answer. `list_changed` where the tool list can change.
pub fn capabilities(list_changed: bool) -> ServerCapabilities {
    let declared = ServerCapabilities::builder()
        .enable_logging()
        .enable_completions()
        .enable_prompts()
        .enable_resources()
        .enable_tools();
    if list_changed {
        declared.enable_tool_list_changed().build()
    } else {
        declared.build()
    }
}

/// Whether a request comes from a session (2025-11-25 or older), not a stateless
/// 2026-07-28 request, whose revision has no `logging/setLevel`.
fn in_session(context: &RequestContext<RoleServer>) -> bool {
    let version = context
        .meta
        .protocol_version()
        .or_else(|| context.protocol_version());
    version.is_none_or(|v| v.as_str() < ProtocolVersion::V_2026_07_28.as_str())
}

/// `answer`, counted under `method` by whether it was an error.
async fn counted<T>(
    method: &'static str,
    answer: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    let result = answer.await;
    let label = if result.is_ok() { "ok" } else { "error" };
    crate::telemetry::metrics::mcp_request(method, label);
    result
}

impl<S: ServerHandler> ServerHandler for Observed<S> {
    fn ping(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        counted("ping", self.inner.ping(context))
    }

    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, McpError>> + MaybeSendFuture + '_ {
        counted("initialize", self.inner.initialize(request, context))
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, McpError> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, McpError>> + MaybeSendFuture + '_ {
        counted("server/discover", self.inner.discover(context))
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + MaybeSendFuture + '_ {
        counted("completion/complete", self.inner.complete(request, context))
    }

    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        let session = in_session(&context);
        if session {
            *self.level.lock().unwrap_or_else(PoisonError::into_inner) = Some(request.level);
            tracing::debug!(level = ?request.level, "logging level set for the session");
        }
        counted("logging/setLevel", async move {
            if session {
                Ok(())
            } else {
                Err(McpError::method_not_found::<SetLevelRequestMethod>())
            }
        })
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + MaybeSendFuture + '_ {
        let _ = context;
        let name = crate::text::clip_chars(&request.name, 80);
        counted("prompts/get", async move {
            Err(McpError::invalid_params(
                format!("no prompt named '{name}': this server has none"),
                None,
            ))
        })
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + MaybeSendFuture + '_ {
        counted("prompts/list", self.inner.list_prompts(request, context))
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, McpError>> + MaybeSendFuture + '_ {
        counted(
            "resources/list",
            self.inner.list_resources(request, context),
        )
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, McpError>> + MaybeSendFuture + '_
    {
        counted(
            "resources/templates/list",
            self.inner.list_resource_templates(request, context),
        )
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceResponse, McpError>> + MaybeSendFuture + '_ {
        let _ = context;
        let shown = crate::text::clip_chars(&request.uri, 80);
        let data = serde_json::json!({ "uri": request.uri });
        counted("resources/read", async move {
            Err(McpError::resource_not_found(
                format!("no resource '{shown}': this server has none"),
                Some(data),
            ))
        })
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        counted("subscriptions/listen", self.inner.listen(context))
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        counted(
            "resources/subscribe",
            self.inner.subscribe(request, context),
        )
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        counted(
            "resources/unsubscribe",
            self.inner.unsubscribe(request, context),
        )
    }

    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        let call = self.inner.call_tool(request, context);
        async move {
            let result = call.await;
            let label = match &result {
                Err(_) => "error",
                Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => "tool_error",
                Ok(_) => "ok",
            };
            crate::telemetry::metrics::mcp_request("tools/call", label);
            result
        }
    }

    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + MaybeSendFuture + '_ {
        counted("tools/list", self.inner.list_tools(request, context))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, McpError>> + MaybeSendFuture + '_ {
        counted("other", self.inner.on_custom_request(request, context))
    }

    fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_cancelled(notification, context)
    }

    fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_progress(notification, context)
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_initialized(context)
    }

    fn on_roots_list_changed(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_roots_list_changed(context)
    }

    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_custom_notification(notification, context)
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetTaskResult, McpError>> + MaybeSendFuture + '_ {
        counted("tasks/get", self.inner.get_task(request, context))
    }

    fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        counted("tasks/update", self.inner.update_task(request, context))
    }

    fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        counted("tasks/cancel", self.inner.cancel_task(request, context))
    }

    fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListSkillsResult, McpError>> + MaybeSendFuture + '_ {
        counted("skills/list", self.inner.list_skills(request, context))
    }

    fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetSkillResult, McpError>> + MaybeSendFuture + '_ {
        counted("skills/get", self.inner.get_skill(request, context))
    }

    fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceDirectoryResult, McpError>> + MaybeSendFuture + '_
    {
        counted(
            "resources/directory/read",
            self.inner.read_resource_directory(request, context),
        )
    }
}
