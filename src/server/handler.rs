//! The MCP handler: maps protocol requests onto [`ServerState`], with the exposure the
//! request's protocol era gets ([`super::exposure`]), and announces tool list changes the
//! way that era expects.
//!
//! A handler is built per connection (stdio, legacy SSE), per HTTP session (2025-11-25 and
//! older) or per request (stateless 2026-07-28 HTTP), so it holds no state of its own beyond
//! the key of the client it serves; see [`super::clients`]. Which person may use a session
//! or connection is settled before a request reaches it ([`super::sessions`],
//! [`super::legacy_sse`]); the handler reads that person from each request.
//!
//! Announcing changes:
//! - up to 2025-11-25 a plain `notifications/tools/list_changed` goes to the peer (over
//!   HTTP rmcp routes it to the session's standalone GET stream): after a `find_tools` that
//!   changed this client's shortlist, and to every connection when the catalog changes;
//! - from 2026-07-28 a list never changes as a side effect of a request, and notifications
//!   travel only on `subscriptions/listen` streams: each open stream's sink is kept in the
//!   registry and told when the catalog changes.

use super::clients::ClientKey;
use super::consent;
use super::exposure::Era;
use super::meta_tools::{self, CALL_TOOL, DESCRIBE_TOOL, FIND_TOOLS};
use super::parked;
use super::state::{error_result, json_result, CallResult, Caller, ServerState};
use super::visibility::Sight;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InputResponses, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::sync::{Arc, Mutex, PoisonError};

/// The header a streamable HTTP session is named by.
const SESSION_HEADER: &str = "mcp-session-id";

/// What the server tells clients at initialization.
const INSTRUCTIONS: &str = "This server gives access to a catalog of REST APIs. Call \
find_tools with a plain description of the task to get the matching API endpoints, each with \
its required arguments, then call one with call_tool(name, arguments) (or directly, when it \
is in your tool list). describe_tool(name) returns a tool's full definition.";

/// The MCP handler; see the module documentation.
pub struct ShortlistServer {
    state: Arc<ServerState>,
    /// The client of a stdio or legacy SSE connection: one handler, one client.
    connection: Option<ClientKey>,
    /// The HTTP session this handler turned out to serve, forgotten when it is dropped.
    session: Mutex<Option<ClientKey>>,
    /// The session-era connection registered for catalog change announcements.
    peer: Mutex<Option<u64>>,
}

impl ShortlistServer {
    /// A handler for a connection with exactly one client (stdio, legacy SSE). The client's
    /// exposed set is forgotten when the connection (and so the handler) ends.
    pub fn for_connection(state: Arc<ServerState>, key: ClientKey) -> ShortlistServer {
        ShortlistServer {
            state,
            connection: Some(key),
            session: Mutex::new(None),
            peer: Mutex::new(None),
        }
    }

    /// A handler for streamable HTTP, where the client is known from each request.
    pub fn for_http(state: Arc<ServerState>) -> ShortlistServer {
        ShortlistServer {
            state,
            connection: None,
            session: Mutex::new(None),
            peer: Mutex::new(None),
        }
    }

    /// Who sent this request: the connection's client, else the HTTP session, else (the
    /// stateless era) the credential the request carries.
    fn client_key(&self, ctx: &RequestContext<RoleServer>) -> ClientKey {
        if let Some(k) = &self.connection {
            return k.clone();
        }
        let Some(parts) = ctx.extensions.get::<axum::http::request::Parts>() else {
            return ClientKey::credential(None);
        };
        if let Some(id) = parts
            .headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            let key = ClientKey::session(id);
            let mut slot = self.session.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.is_none() {
                *slot = Some(key.clone());
            }
            return key;
        }
        ClientKey::credential(
            parts
                .headers
                .get(axum::http::header::AUTHORIZATION)
                .map(|v| v.as_bytes()),
        )
    }

    /// The exposure this request gets: by its era and, for sessions, by the client.
    fn exposure(&self, ctx: &RequestContext<RoleServer>) -> super::exposure::Exposure {
        let info = ctx.peer.peer_info();
        let client = info.as_ref().map(|i| i.client_info.name.as_str());
        self.state.exposure_for(era(ctx), client)
    }

    /// The APIs this request's caller sees: by the person its access token names (the
    /// `[auth]` layer puts the verified `Principal` in the request's extensions).
    fn sight(&self, ctx: &RequestContext<RoleServer>) -> Sight {
        Sight::of(&self.state.served(), principal(ctx))
    }

    /// Calls the endpoint `name` for this request's caller: the one path behind a direct
    /// call and `call_tool`. `Err` is the message for a name the caller has no tool of.
    /// An API that needs the person's consent first asks for it ([`consent`]); an
    /// upstream's question to a 2026-07-28 client parks the call ([`parked`]); `retry` is
    /// what a 2026-07-28 retry brings back.
    async fn call_endpoint(
        &self,
        ctx: &RequestContext<RoleServer>,
        name: &str,
        args: &JsonObject,
        retry: Retry<'_>,
    ) -> Result<CallToolResponse, String> {
        let called = match parking(ctx) {
            Some((form, url)) => match self.call_parked(ctx, name, args, retry, form, url).await {
                parked::Step::Asked(r) => return Ok(*r),
                parked::Step::Done(Ok(c)) => c,
                parked::Step::Done(Err(why)) => Some(CallResult::Done(error_result(why))),
            },
            None => {
                let mut caller = self.caller(ctx);
                let relay = progress(ctx);
                caller.hooks.progress = relay.as_ref().map(|(sink, _)| sink.clone());
                caller.hooks.ask = asker(ctx);
                caller.hooks.sample = sampler(ctx);
                let called = self.state.call_endpoint(&caller, name, args).await;
                // What the upstream reported reaches the client before the result does.
                drop(caller);
                delivered(relay).await;
                called
            }
        };
        let caller = self.caller(ctx);
        let Some(called) = called else {
            return Err(self.state.unknown_tool(name, &caller.sight));
        };
        let (api, link, state) = match called {
            CallResult::Done(r) => return Ok(r.into()),
            CallResult::Consent { api, link, state } => (api, link, state),
        };
        match consent::ask(ctx, era(ctx), &api, &link, &state, retry.answered).await {
            consent::Asked::Answer(r) => Ok(*r),
            consent::Asked::Retry => match self.state.call_endpoint(&caller, name, args).await {
                Some(CallResult::Done(r)) => Ok(r.into()),
                Some(CallResult::Consent { api, link, .. }) => {
                    Ok(consent::unfinished(&api, &link).into())
                }
                None => Err(self.state.unknown_tool(name, &caller.sight)),
            },
        }
    }

    /// A 2026-07-28 client's call that an upstream may ask questions during: run in a task
    /// of its own and parked at a question, or the parked call `retry` names resumed with
    /// the person's answer.
    async fn call_parked(
        &self,
        ctx: &RequestContext<RoleServer>,
        name: &str,
        args: &JsonObject,
        retry: Retry<'_>,
        form: bool,
        url: bool,
    ) -> parked::Step<Option<CallResult>> {
        let parked = self.state.parked();
        let mut caller = self.caller(ctx);
        let owner = match &caller.person {
            Some(p) => p.sub.clone(),
            None => caller.key.to_string(),
        };
        if let Some(state) = retry.state {
            return match parked.resume(state, &owner, name, retry.answered) {
                Some(running) => parked.drive(running, &owner, name).await,
                None => parked::Step::Done(Ok(Some(CallResult::Done(parked::gone())))),
            };
        }
        let (ask, questions) = parked::asker(form, url);
        let relay = progress(ctx);
        caller.hooks.progress = relay.as_ref().map(|(sink, _)| sink.clone());
        caller.hooks.ask = Some(ask);
        let state = Arc::clone(&self.state);
        let (tool, args) = (name.to_string(), args.clone());
        let call = tokio::spawn(async move { state.call_endpoint(&caller, &tool, &args).await });
        let step = parked
            .drive(parked::Running { call, questions }, &owner, name)
            .await;
        if matches!(step, parked::Step::Done(_)) {
            delivered(relay).await;
        }
        step
    }

    /// Who this request comes from and what it may see.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Caller {
        Caller {
            key: self.client_key(ctx),
            exposure: self.exposure(ctx),
            sight: self.sight(ctx),
            person: person(ctx),
            client_id: principal(ctx).and_then(|p| p.client_id.clone()),
            hooks: Default::default(),
        }
    }

    async fn find_tools(
        &self,
        ctx: &RequestContext<RoleServer>,
        args: &JsonObject,
    ) -> CallToolResponse {
        let caller = self.caller(ctx);
        let key = &caller.key;
        let found = self.state.find(&caller, args).await;
        if found.is_error() {
            let msg = found.result["error"]
                .as_str()
                .unwrap_or("invalid arguments")
                .to_string();
            return error_result(format!("find_tools: {msg}")).into();
        }
        // Only a session-era client's own list changes here (dynamic exposure), and only
        // that client is told, on its own connection.
        if found.change.is_change() {
            tracing::debug!(client = %key, added = found.change.added.len(), removed = found.change.removed.len(), "exposed tools changed");
            if let Err(e) = ctx.peer.notify_tool_list_changed().await {
                tracing::debug!(client = %key, error = %e, "list_changed not delivered");
            }
        }
        json_result(found.result).into()
    }
}

impl Drop for ShortlistServer {
    fn drop(&mut self) {
        // A connection or session that ended will never ask again: give its memory back now
        // rather than at idle expiry. Stateless clients have no end and rely on expiry.
        let session = self
            .session
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for k in self.connection.iter().chain(session.as_ref()) {
            self.state.clients().remove(k);
            tracing::debug!(client = %k, clients = self.state.clients().len(), "client state released");
        }
        let peer = self.peer.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(id) = peer.take() {
            self.state.clients().remove_peer(id);
        }
    }
}

/// The person a request comes from, as the `[auth]` layer verified it.
/// A sink that sends the client `notifications/progress` for its request, in order, when
/// the request carries a progress token, and the task that sends them (done once every
/// copy of the sink is dropped and what it was given is delivered).
fn progress(
    ctx: &RequestContext<RoleServer>,
) -> Option<(crate::upstream::Progress, tokio::task::JoinHandle<()>)> {
    let token = ctx.meta.get_progress_token()?;
    let peer = ctx.peer.clone();
    // Bounded: an upstream reporting faster than the client reads loses notifications,
    // never memory.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(f64, Option<f64>, Option<String>)>(64);
    let delivered = tokio::spawn(async move {
        while let Some((progress, total, message)) = rx.recv().await {
            let mut p = rmcp::model::ProgressNotificationParam::new(token.clone(), progress);
            p.total = total;
            p.message = message;
            if let Err(e) = peer.notify_progress(p).await {
                tracing::debug!(error = %e, "progress not delivered");
                return;
            }
        }
    });
    let sink: crate::upstream::Progress = std::sync::Arc::new(move |p, t, m| {
        let _ = tx.try_send((p, t, m));
    });
    Some((sink, delivered))
}

/// What a 2026-07-28 retry brings back: the person's answers, and the state naming the
/// call they answer.
#[derive(Clone, Copy)]
struct Retry<'a> {
    answered: Option<&'a InputResponses>,
    state: Option<&'a str>,
}

/// For a 2026-07-28 client that declared elicitation, the kinds it takes (forms, URLs):
/// its calls may be parked at an upstream's question ([`parked`]).
fn parking(ctx: &RequestContext<RoleServer>) -> Option<(bool, bool)> {
    if era(ctx) != Era::Stateless {
        return None;
    }
    let can = ctx.client_capabilities().and_then(|c| c.elicitation)?;
    Some((can.form.is_some() || can.url.is_none(), can.url.is_some()))
}

/// Waits (a moment at most) for a call's progress to reach the client before its result.
async fn delivered(relay: Option<(crate::upstream::Progress, tokio::task::JoinHandle<()>)>) {
    if let Some((sink, delivered)) = relay {
        drop(sink);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), delivered).await;
    }
}

/// Who asks the person for what an upstream wants to know during their call: a
/// session-era client that declared elicitation, for the kinds it declared. The
/// 2026-07-28 revision asks through the call's own result instead ([`parking`]).
fn asker(ctx: &RequestContext<RoleServer>) -> Option<crate::upstream::elicit::Asker> {
    if era(ctx) != Era::Sessions {
        return None;
    }
    let can = ctx.client_capabilities().and_then(|c| c.elicitation)?;
    // A client of a revision before URL elicitation declared `elicitation: {}`: forms.
    let form = can.form.is_some() || can.url.is_none();
    let url = can.url.is_some();
    let peer = ctx.peer.clone();
    Some(std::sync::Arc::new(move |params| {
        let peer = peer.clone();
        let allowed = match &params {
            rmcp::model::ElicitRequestParams::FormElicitationParams { .. } => form,
            rmcp::model::ElicitRequestParams::UrlElicitationParams { .. } => url,
            _ => false,
        };
        Box::pin(async move {
            if !allowed {
                return Err("the client does not take this kind of elicitation".to_string());
            }
            peer.create_elicitation(params)
                .await
                .map_err(|e| e.to_string())
        })
    }))
}

/// Whose model an upstream's sampling request during their call goes to: a session-era
/// client that declared sampling (deprecated in 2026-07-28, so never one of that revision).
/// The client shows the request to its person before its model answers, as it would for
/// any server's.
#[allow(deprecated)]
fn sampler(ctx: &RequestContext<RoleServer>) -> Option<crate::upstream::elicit::Sampler> {
    if era(ctx) != Era::Sessions {
        return None;
    }
    ctx.client_capabilities().and_then(|c| c.sampling)?;
    let peer = ctx.peer.clone();
    Some(std::sync::Arc::new(move |params| {
        let peer = peer.clone();
        Box::pin(async move { peer.create_message(params).await.map_err(|e| e.to_string()) })
    }))
}

fn principal(ctx: &RequestContext<RoleServer>) -> Option<&crate::auth::Principal> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(crate::auth::Principal::from_parts)
}

/// The verified person with their access token, for APIs called with each person's own
/// token (the token goes only to the identity provider that issued it).
fn person(ctx: &RequestContext<RoleServer>) -> Option<crate::credentials::Person> {
    let parts = ctx.extensions.get::<axum::http::request::Parts>()?;
    let p = crate::auth::Principal::from_parts(parts)?;
    let token = parts.extensions.get::<crate::auth::SubjectToken>()?;
    Some(crate::credentials::Person {
        sub: p.sub.clone(),
        subject_token: token.0.clone(),
        expires_at: p.expires_at,
        client_id: p.client_id.clone(),
        scopes: p.scopes.clone(),
    })
}

/// The protocol era of a request: 2026-07-28 or later is stateless.
fn era(ctx: &RequestContext<RoleServer>) -> Era {
    if ctx
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
    {
        Era::Stateless
    } else {
        Era::Sessions
    }
}

impl ServerHandler for ShortlistServer {
    fn get_info(&self) -> ServerConfig {
        // `listChanged` only where a list can change (a session's shortlist, the catalog
        // after a reload); elsewhere it would invite useless refetches.
        let capabilities = super::observed::capabilities(self.state.lists_change());
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("shortlist", env!("CARGO_PKG_VERSION"))
                    .with_title("shortlist: REST API catalogs as MCP tools"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let cursor = request.as_ref().and_then(|r| r.cursor.as_deref());
        self.state
            .list_tools(&self.caller(&ctx), cursor)
            .map_err(|msg| McpError::invalid_params(msg, None))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Only session-era connections initialize; they hear of catalog changes on their
        // own channel, so the registry keeps their peer until the handler ends.
        let id = self.state.clients().add_peer(context.peer.clone());
        tracing::debug!(
            connections = self.state.clients().peers().len(),
            "connection registered for catalog changes"
        );
        let mut slot = self.peer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = slot.replace(id) {
            self.state.clients().remove_peer(old);
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let retry = Retry {
            answered: request.input_responses.as_ref(),
            state: request.request_state.as_deref(),
        };
        let args = request.arguments.clone().unwrap_or_default();
        let name = request.name.as_ref();
        match name {
            FIND_TOOLS => Ok(self.find_tools(&ctx, &args).await),
            DESCRIBE_TOOL => Ok(self.state.describe(&self.caller(&ctx), &args).into()),
            CALL_TOOL => {
                let call = match meta_tools::call_args(&args) {
                    Ok(c) => c,
                    Err(msg) => return Ok(error_result(format!("call_tool: {msg}")).into()),
                };
                if meta_tools::is_meta(&call.name) {
                    return Ok(error_result(format!(
                        "call_tool calls API tools; call '{}' directly",
                        call.name
                    ))
                    .into());
                }
                Ok(
                    match self
                        .call_endpoint(&ctx, &call.name, &call.arguments, retry)
                        .await
                    {
                        Ok(r) => r,
                        Err(unknown) => error_result(unknown).into(),
                    },
                )
            }
            // MCP makes an unknown tool a protocol error (-32602).
            _ => self
                .call_endpoint(&ctx, name, &args, retry)
                .await
                .map_err(|unknown| McpError::invalid_params(unknown, None)),
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Only tool list changes exist here; rmcp further intersects this with what
        // get_info advertises.
        let mut accepted = SubscriptionFilter::new();
        accepted.tools_list_changed = requested.tools_list_changed.filter(|&b| b);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let key = self.client_key(context.request_context());
        let id = self
            .state
            .clients()
            .add_listener(&key, context.sink().clone());
        tracing::debug!(client = %key, "listen stream opened");
        context.cancelled().await;
        self.state.clients().remove_listener(&key, id);
        tracing::debug!(client = %key, "listen stream closed");
        Ok(())
    }
}
