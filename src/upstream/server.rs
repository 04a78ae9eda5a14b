//! One upstream MCP server's life: connecting, listing, calling, and starting again.
//!
//! A server is connected on first need (the start-up listing, or a call) and then shared
//! by every call. When its connection ends (the child exited, the HTTP server went away),
//! the next call connects again, unless the last attempts failed: then it waits out a
//! backoff that doubles from one second to a minute, answering meanwhile with why the
//! server is not running. After [`CRASH_LOOP_AFTER`] failures in a row the server is in a
//! crash loop, said in the health report; it is still tried once a minute.

mod tokens;

use super::bearing::TokenSlot;
use super::handler::{Handler, OnListChanged};
use crate::catalog::config::ApiConfig;
use crate::catalog::mcp_config::{McpSource, McpTransport, DEFAULT_START_TIMEOUT_SECS};
use crate::catalog::mcp_tools::{listing_key, Listing, MAX_TOOLS};
use crate::credentials::Broker;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, NumberOrString, PaginatedRequestParams, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// Failures in a row after which a server is said to be in a crash loop.
pub const CRASH_LOOP_AFTER: u32 = 5;
/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Pages of `tools/list` read at most (a server that pages forever is cut off).
const MAX_PAGES: usize = 100;

type Service = RunningService<RoleClient, Handler>;

/// Where a server stands, for `/readyz`, the console and messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not connected yet (connected on first need).
    Idle,
    /// Connecting now.
    Starting,
    Running,
    /// The last attempt failed; the next is not before `retry_in`.
    Down {
        reason: String,
        failures: u32,
        retry_in: Duration,
    },
    /// [`CRASH_LOOP_AFTER`] or more failures in a row.
    CrashLoop {
        reason: String,
        failures: u32,
    },
}

impl Status {
    /// Why the server is not running, when it is not.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Status::Down { reason, .. } | Status::CrashLoop { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// Every [`Status::word`], so that a gauge says 0 for a state no server is in.
    pub const WORDS: [&'static str; 5] = ["idle", "starting", "running", "down", "crash_loop"];

    /// One word for counts and metrics: `idle`, `starting`, `running`, `down`, `crash_loop`.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Starting => "starting",
            Status::Running => "running",
            Status::Down { .. } => "down",
            Status::CrashLoop { .. } => "crash_loop",
        }
    }
}

enum State {
    Idle,
    Running(Service),
    Down {
        reason: String,
        failures: u32,
        next_try: Instant,
    },
}

/// One MCP server of the catalog.
pub struct Server {
    pub id: String,
    entry: ApiConfig,
    /// Which addresses an HTTP server may be reached at.
    policy: crate::invoke::address::Policy,
    /// How an HTTP server is reached: directly, or through the egress proxy.
    egress: crate::invoke::transport::Egress,
    /// Calls waiting for their progress, shared with each connection's handler.
    relays: super::progress::Relays,
    /// Calls in flight, to whose person an elicitation may go.
    in_flight: super::elicit::InFlight,
    state: Mutex<State>,
    on_list_changed: OnListChanged,
    /// The token its HTTP requests carry now.
    slot: Arc<TokenSlot>,
    /// Where its machine token comes from, for an entry with the client credentials grant.
    machine: Option<Arc<Broker>>,
    /// Whether this is one person's own connection ([`super::personal`]).
    personal: bool,
}

impl Server {
    pub fn new(
        id: &str,
        entry: ApiConfig,
        on_list_changed: OnListChanged,
        policy: crate::invoke::address::Policy,
        egress: crate::invoke::transport::Egress,
    ) -> Server {
        Server {
            id: id.to_string(),
            entry,
            policy,
            egress,
            relays: super::progress::Relays::default(),
            in_flight: super::elicit::InFlight::default(),
            state: Mutex::new(State::Idle),
            on_list_changed,
            slot: Arc::new(TokenSlot::default()),
            machine: None,
            personal: false,
        }
    }

    /// This server with its machine tokens (client credentials) from `broker`.
    pub fn with_machine(mut self, broker: Arc<Broker>) -> Server {
        self.machine = Some(broker);
        self
    }

    /// A connection of this server's own for one person, whose token the caller puts in
    /// [`Server::slot`] before each call; its `list_changed` is the shared connection's
    /// business, not this one's.
    pub fn for_person(&self) -> Server {
        let mut s = Server::new(
            &self.id,
            self.entry.clone(),
            Arc::new(|| {}),
            self.policy,
            self.egress.clone(),
        );
        s.personal = true;
        s
    }

    /// The token this server's HTTP requests carry.
    pub fn slot(&self) -> &Arc<TokenSlot> {
        &self.slot
    }

    /// How this server is reached over HTTP.
    fn reach(&self) -> super::http::Reach<'_> {
        super::http::Reach {
            policy: self.policy,
            egress: &self.egress,
        }
    }

    /// Whether this server is the one `entry` reached under `policy` would make.
    pub fn is_made_of(&self, entry: &ApiConfig, policy: crate::invoke::address::Policy) -> bool {
        self.entry == *entry && self.policy == policy
    }

    /// What this server's listings are filed under ([`listing_key`]).
    pub fn key(&self) -> String {
        listing_key(&self.id, self.source())
    }

    fn source(&self) -> &McpSource {
        self.entry
            .mcp
            .as_ref()
            .expect("a server is made only from an MCP entry")
    }

    fn start_timeout(&self) -> Duration {
        Duration::from_secs(
            self.source()
                .start_timeout_secs
                .unwrap_or(DEFAULT_START_TIMEOUT_SECS)
                .max(1),
        )
    }

    /// Where the server stands now.
    /// Never waits on a connection being made: that is `Starting`.
    pub fn status(&self) -> Status {
        let Ok(state) = self.state.try_lock() else {
            return Status::Starting;
        };
        match &*state {
            State::Idle => Status::Idle,
            State::Running(s) if !s.is_transport_closed() => Status::Running,
            State::Running(_) => Status::Down {
                reason: "its connection ended".into(),
                failures: 0,
                retry_in: Duration::ZERO,
            },
            State::Down {
                reason,
                failures,
                next_try,
            } if *failures >= CRASH_LOOP_AFTER => {
                let _ = next_try;
                Status::CrashLoop {
                    reason: reason.clone(),
                    failures: *failures,
                }
            }
            State::Down {
                reason,
                failures,
                next_try,
            } => Status::Down {
                reason: reason.clone(),
                failures: *failures,
                retry_in: next_try.saturating_duration_since(Instant::now()),
            },
        }
    }

    /// Lists every tool (all pages, bounded), connecting first when needed.
    pub async fn list(&self) -> Result<Listing, String> {
        self.renew().await?;
        let peer = match self.peer().await {
            Ok(p) => p,
            Err(e) => {
                self.forget_refused().await;
                return Err(self.refusal_hint(e));
            }
        };
        let listed = tokio::time::timeout(self.start_timeout(), list_all(&peer)).await;
        let tools = match listed {
            Ok(r) => r?,
            Err(_) => {
                let reason = format!(
                    "tools/list did not answer within {} s",
                    self.start_timeout().as_secs()
                );
                self.fail(&reason).await;
                return Err(reason);
            }
        };
        let info = peer.peer_info();
        let server_info = info.as_ref().and_then(|i| i.server_info.as_ref());
        Ok(Listing {
            title: server_info.map(|s| s.title.clone().unwrap_or_else(|| s.name.clone())),
            version: server_info.map(|s| s.version.clone()).unwrap_or_default(),
            tools,
        })
    }

    /// Calls one tool; `Err` is a readable reason the call could not be made or answered.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        hooks: super::CallHooks,
    ) -> Result<CallToolResult, String> {
        self.renew().await?;
        let peer = match self.peer().await {
            Ok(p) => p,
            Err(e) => {
                self.forget_refused().await;
                return Err(e);
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match tokio::time::timeout(timeout, self.send_call(&peer, params, hooks)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                self.forget_refused().await;
                if peer.is_transport_closed() {
                    self.fail(&format!("it stopped during the call ({e})"))
                        .await;
                    Err(format!(
                        "MCP server '{}' stopped during the call: {e}",
                        self.id
                    ))
                } else {
                    Err(format!(
                        "MCP server '{}' answered with an error: {e}",
                        self.id
                    ))
                }
            }
            // Dropping the call's future sends `notifications/cancelled` upstream.
            Err(_) => Err(format!(
                "MCP server '{}' did not answer within {} s",
                self.id,
                timeout.as_secs()
            )),
        }
    }

    /// Sends `tools/call` and waits for its answer, relaying the upstream's progress for it
    /// and its elicitations as `hooks` say; dropped before the answer, the request is
    /// cancelled upstream.
    async fn send_call(
        &self,
        peer: &rmcp::Peer<RoleClient>,
        params: CallToolRequestParams,
        hooks: super::CallHooks,
    ) -> Result<CallToolResult, rmcp::ServiceError> {
        let _in_flight = self.in_flight.enter(super::elicit::Askers {
            ask: hooks.ask,
            sample: hooks.sample,
        });
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        // Every request carries a progress token of the connection's own: the upstream's
        // progress for this call names it.
        let token = match &handle.progress_token.0 {
            NumberOrString::String(s) => s.to_string(),
            NumberOrString::Number(n) => n.to_string(),
        };
        let _relayed = hooks
            .progress
            .map(|sink| self.relays.register_as(token, sink));
        let mut abandoned = Abandoned {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let answered = handle.await_response().await;
        abandoned.id = None;
        if _relayed.is_some() {
            // The connection hands each notification to a task of its own, so the last
            // progress may still be on its way when the answer is here: a moment for it.
            tokio::time::sleep(PROGRESS_GRACE).await;
        }
        match answered? {
            ServerResult::CallToolResult(r) => Ok(r),
            ServerResult::InputRequiredResult(_) => Ok(CallToolResult::error(vec![
                rmcp::model::ContentBlock::text(
                    "the MCP server asked for more input during the call, which shortlist \
                     does not answer on anyone's behalf",
                ),
            ])),
            _ => Err(rmcp::ServiceError::UnexpectedResponse),
        }
    }

    /// Stops the server (its whole process tree, for a child).
    pub async fn stop(&self) {
        let old = std::mem::replace(&mut *self.state.lock().await, State::Idle);
        if let State::Running(mut s) = old {
            let _ = s.close_with_timeout(Duration::from_secs(3)).await;
        }
    }

    /// A live connection: the running one, else a new one (unless backing off).
    async fn peer(&self) -> Result<rmcp::Peer<RoleClient>, String> {
        let mut state = self.state.lock().await;
        let failures = match &*state {
            State::Running(s) if !s.is_transport_closed() => return Ok(s.peer().clone()),
            State::Running(_) | State::Idle => 0,
            State::Down {
                reason,
                failures,
                next_try,
            } => {
                if Instant::now() < *next_try {
                    return Err(self.not_running(reason, *failures));
                }
                *failures
            }
        };
        if failures == 0 && matches!(&*state, State::Running(_)) {
            tracing::warn!(server = %self.id, "the MCP server's connection ended; connecting again");
        }
        match tokio::time::timeout(self.start_timeout(), self.connect()).await {
            Ok(Ok(service)) => {
                let peer = service.peer().clone();
                *state = State::Running(service);
                if failures > 0 {
                    tracing::info!(server = %self.id, "the MCP server is running again");
                }
                Ok(peer)
            }
            Ok(Err(reason)) => Err(self.record_failure(&mut state, failures, reason)),
            Err(_) => {
                let reason = format!(
                    "it did not start within {} s",
                    self.start_timeout().as_secs()
                );
                Err(self.record_failure(&mut state, failures, reason))
            }
        }
    }

    async fn fail(&self, reason: &str) {
        let mut state = self.state.lock().await;
        let failures = match &*state {
            State::Down { failures, .. } => *failures,
            _ => 0,
        };
        self.record_failure(&mut state, failures, reason.to_string());
    }

    fn record_failure(&self, state: &mut State, failures: u32, reason: String) -> String {
        let failures = failures + 1;
        let backoff = Duration::from_secs(1 << (failures - 1).min(6)).min(MAX_BACKOFF);
        tracing::warn!(
            server = %self.id,
            failures,
            retry_in_secs = backoff.as_secs(),
            "MCP server not running: {reason}"
        );
        let message = self.not_running(&reason, failures);
        *state = State::Down {
            reason,
            failures,
            next_try: Instant::now() + backoff,
        };
        message
    }

    fn not_running(&self, reason: &str, failures: u32) -> String {
        let tail = if failures >= CRASH_LOOP_AFTER {
            format!(" (failed {failures} times in a row: crash loop)")
        } else {
            String::new()
        };
        format!("MCP server '{}' is not running: {reason}{tail}", self.id)
    }

    async fn connect(&self) -> Result<Service, String> {
        let handler = Handler::new(
            &self.id,
            self.on_list_changed.clone(),
            self.relays.clone(),
            self.in_flight.clone(),
        );
        let source = self.source();
        match source.transport() {
            McpTransport::Stdio => {
                let child = super::child::spawn(&self.id, source)
                    .map_err(|e| format!("cannot start `{}`: {e}", source.describe()))?;
                handler
                    .serve(child)
                    .await
                    .map_err(|e| format!("it did not initialize: {e}"))
            }
            McpTransport::StreamableHttp => {
                if !self.personal && !self.machine_tokens() {
                    self.slot
                        .set(super::http::fixed_token(&self.entry, source)?);
                }
                let transport =
                    super::http::transport(&self.entry, source, self.reach(), self.slot.clone())
                        .await?;
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("it did not initialize: {e}"))
            }
            McpTransport::Sse => {
                let transport =
                    super::http::sse_transport(&self.entry, source, self.reach()).await?;
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("it did not initialize: {e}"))
            }
        }
    }
}

/// Every page of `tools/list`, as the server wrote each tool, within [`MAX_PAGES`] pages
/// and a few tools more than the catalog keeps.
async fn list_all(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        for t in page.tools {
            if tools.len() > MAX_TOOLS {
                return Ok(tools);
            }
            tools.push(serde_json::to_value(t).map_err(|e| e.to_string())?);
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Ok(tools)
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("id", &self.id).finish()
    }
}

/// How long a call that relays progress waits after its answer for the last notification.
const PROGRESS_GRACE: Duration = Duration::from_millis(25);

/// A call whose answer is no longer awaited (its time ran out, or its caller went away):
/// the upstream is told to stop working on it.
struct Abandoned {
    peer: rmcp::Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(
                        Some(id),
                        Some("the call was abandoned by its caller".into()),
                    ))
                    .await;
            });
        }
    }
}
