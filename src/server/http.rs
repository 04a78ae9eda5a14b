//! Serving over HTTP: streamable HTTP at `/mcp` (both protocol eras rmcp 3.9 speaks) and
//! the legacy HTTP+SSE transport at `/sse` + `/message`.
//!
//! At `/mcp`, rmcp decides per request: a 2025-11-25-or-older client gets a session (its id
//! in `Mcp-Session-Id`, notifications on its GET stream), a 2026-07-28 request is served
//! statelessly by a fresh handler. Both reach the same [`ServerState`].

use super::guard::{require_host, require_origin, require_token, Guard};
use super::handler::ShortlistServer;
use super::legacy_sse::{self, LegacySse};
use super::state::ServerState;
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Host names accepted on a loopback server (DNS-rebinding protection).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// HTTP serving options.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Required `Authorization: Bearer` token; `None` serves without auth (loopback only).
    pub auth_token: Option<String>,
    /// Extra `Host` names to accept besides loopback ones (a server behind a name).
    pub allowed_hosts: Vec<String>,
    /// OAuth access tokens checked on `/mcp` and the legacy SSE routes (the `[auth]`
    /// table); the static token then guards the console only.
    pub oauth: Option<Arc<crate::auth::Verifier>>,
    /// How long to keep serving once shutdown began, with `/readyz` answering 503: a
    /// balancer or Kubernetes notices and stops sending requests before the listener
    /// closes, instead of the requests in flight at that moment failing.
    pub drain: Duration,
    /// Who a request's client is, for the consent pages' per-client limits: the socket's
    /// peer, or what a trusted load balancer forwards.
    pub client_addr: super::client_addr::ClientAddr,
}

impl HttpOptions {
    /// Refuses to serve off loopback without a token: anyone on the network could
    /// otherwise call the configured APIs with the server's credentials.
    pub fn check(&self) -> anyhow::Result<()> {
        if !self.addr.ip().is_loopback() && self.auth_token.is_none() && self.oauth.is_none() {
            anyhow::bail!(
                "refusing to listen on {} without authentication: use a loopback address \
                 (127.0.0.1), pass --auth-token-env VAR or configure an [auth] table",
                self.addr
            );
        }
        Ok(())
    }

    /// The `Host` names the server answers to.
    fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
        let ip = self.addr.ip();
        if !ip.is_loopback() && !ip.is_unspecified() {
            hosts.push(ip.to_string());
        }
        hosts.extend(self.allowed_hosts.iter().cloned());
        hosts
    }
}

/// The router for all transports; `leaving` (shutdown began) turns `/readyz` to 503,
/// `shutdown` ends open sessions and streams.
pub fn router(
    state: Arc<ServerState>,
    opts: &HttpOptions,
    leaving: CancellationToken,
    shutdown: CancellationToken,
) -> Router {
    let hosts = opts.hosts();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_cancellation_token(shutdown.child_token());
    let max_body_bytes = config.max_request_body_bytes;
    let mcp_state = Arc::clone(&state);
    let sessions = Arc::new(LocalSessionManager::default());
    let owners = super::sessions::SessionOwners::new(Arc::clone(&sessions));
    owners.spawn_sweeper(shutdown.clone());
    let mcp = StreamableHttpService::new(
        move || {
            Ok(super::Observed::new(ShortlistServer::for_http(Arc::clone(
                &mcp_state,
            ))))
        },
        sessions,
        config,
    );
    let guard = Guard::new(opts.auth_token.as_deref(), hosts);
    let state_for_console = Arc::clone(&state);
    let probes = super::probes::routes(Arc::clone(&state), leaving);
    let connections = super::oauth::connection_routes(Arc::clone(&state)).layer(
        axum::middleware::from_fn_with_state(guard.clone(), require_host),
    );
    // A browser opening a consent link, or coming back from a provider, has no access
    // token: the pages sign it in and tie it to its consent by a cookie instead.
    let callback = super::oauth::consent_routes(super::signin::ConsentSite::new(
        Arc::clone(&state),
        opts.oauth.clone(),
        opts.client_addr.clone(),
    ))
    .layer(axum::middleware::from_fn_with_state(
        guard.clone(),
        require_host,
    ));
    let legacy = Router::new()
        .route("/sse", get(legacy_sse::connect))
        .route("/message", post(legacy_sse::message))
        .with_state(LegacySse::new(state, shutdown))
        .layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            require_host,
        ));
    let app = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            owners,
            super::sessions::bind_sessions,
        ))
        .layer(axum::middleware::from_fn_with_state(
            max_body_bytes,
            super::parse_error::on_mcp,
        ))
        .layer(axum::middleware::from_fn(deleted_is_no_content))
        .layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            require_origin,
        ))
        .merge(legacy)
        .merge(connections);
    let app = match (&opts.oauth, &opts.auth_token) {
        (Some(verifier), _) => app
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(verifier),
                crate::auth::require_access_token,
            ))
            .merge(crate::auth::metadata::routes(Arc::clone(verifier)).layer(
                axum::middleware::from_fn_with_state(guard.clone(), require_host),
            )),
        (None, Some(_)) => app.layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            require_token,
        )),
        (None, None) => app,
    };
    let console = console_routes(state_for_console, &guard);
    // With OAuth and no static token, the console takes access tokens too, never nothing.
    let console = match (&opts.oauth, &opts.auth_token) {
        (Some(verifier), None) => console.layer(axum::middleware::from_fn_with_state(
            Arc::clone(verifier),
            crate::auth::require_access_token,
        )),
        _ => console,
    };
    // Probes come without a token and by the pod's address: outside every guard.
    app.merge(console).merge(probes).merge(callback)
}

/// The console's pages under `/console`, behind the `Host` and `Origin` checks and, when
/// the server has a token, the console's token check (the header, or the cookie its login
/// page sets).
fn console_routes(state: Arc<ServerState>, guard: &Guard) -> Router {
    use crate::console::{login, routes, Console};
    let console = Console::new(state);
    let app = routes::router(Arc::clone(&console))
        .merge(crate::console::metrics::router(console))
        .merge(login::router(guard.clone()));
    let app = if guard.requires_token() {
        app.layer(axum::middleware::from_fn_with_state(
            guard.clone(),
            login::require_token,
        ))
    } else {
        app
    };
    app.layer(axum::middleware::from_fn_with_state(
        guard.clone(),
        require_host,
    ))
}

/// The router of `shortlist console`: the console alone, `/` leading to it.
pub fn console_router(state: Arc<ServerState>, opts: &HttpOptions) -> Router {
    let guard = Guard::new(opts.auth_token.as_deref(), opts.hosts());
    // `/` only redirects, so it needs no token: the page it leads to asks for one.
    console_routes(state, &guard).route(
        "/",
        get(|| async { axum::response::Redirect::to("/console/health") })
            .layer(axum::middleware::from_fn_with_state(guard, require_host)),
    )
}

/// rmcp answers a session `DELETE` with 202 Accepted; clients (the Python SDK among them)
/// expect 200 or 204 and log a failure otherwise. The session is gone either way, so say so.
async fn deleted_is_no_content(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let delete = req.method() == axum::http::Method::DELETE;
    let mut res = next.run(req).await;
    if delete && res.status() == axum::http::StatusCode::ACCEPTED {
        *res.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    res
}

/// Serves until `shutdown` is cancelled, then for `opts.drain` more with `/readyz`
/// answering 503. The bound address is printed on stderr (port 0 picks a free one, which
/// tests rely on).
pub async fn serve(
    state: Arc<ServerState>,
    opts: HttpOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    opts.check()?;
    let listener = bind(&opts).await?;
    let local = listener.local_addr()?;
    eprintln!(
        "shortlist: serving MCP on http://{local}/mcp (legacy SSE: http://{local}/sse; \
         console: http://{local}/console)"
    );
    let leaving = shutdown;
    let shutdown = drained(leaving.clone(), opts.drain);
    spawn_sweeper(Arc::clone(&state), shutdown.clone());
    super::oauth::spawn_consent_sweeper(Arc::clone(&state), shutdown.clone());
    let app = router(state, &opts, leaving, shutdown.clone());
    run(listener, app, shutdown).await
}

/// A token cancelled `drain` after `leaving` is: the moment the listener closes.
fn drained(leaving: CancellationToken, drain: Duration) -> CancellationToken {
    if drain.is_zero() {
        return leaving;
    }
    let closing = CancellationToken::new();
    let close = closing.clone();
    tokio::spawn(async move {
        leaving.cancelled().await;
        eprintln!(
            "shortlist: shutting down: /readyz answers 503, requests are served for {} s more",
            drain.as_secs_f64()
        );
        tokio::time::sleep(drain).await;
        close.cancel();
    });
    closing
}

/// Serves the console alone (`shortlist console`) until `shutdown` is cancelled.
pub async fn serve_console(
    state: Arc<ServerState>,
    opts: HttpOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    opts.check()?;
    let listener = bind(&opts).await?;
    let local = listener.local_addr()?;
    eprintln!("shortlist: console on http://{local}/console");
    run(listener, console_router(state, &opts), shutdown).await
}

async fn bind(opts: &HttpOptions) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(opts.addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.addr))
}

async fn run(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    // MCP answers are small writes in quick succession (an SSE priming event, then the
    // message): with Nagle's algorithm the second waits for the client's delayed ACK, which
    // measured as a flat ~40 ms on every session-era request.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    // The peer's address reaches handlers (the consent pages' per-client limits).
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown.cancelled_owned())
    .await
    .map_err(|e| anyhow::anyhow!("HTTP server failed: {e}"))
}

/// Forgets idle stateless clients now and then, so memory returns to baseline after they
/// stop coming (sessions and connections are forgotten when they end).
fn spawn_sweeper(state: Arc<ServerState>, shutdown: CancellationToken) {
    let every =
        (state.options().idle_expiry / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut known = 0;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    let n = state.clients().sweep(Instant::now());
                    if n > 0 {
                        tracing::debug!(forgotten = n, "idle clients forgotten");
                    }
                    // Clients left since the last tick (expired, or sessions that ended):
                    // hand what their state used back to the system.
                    let now_known = state.clients().len();
                    if now_known < known {
                        let _ = tokio::task::spawn_blocking(super::memory::release_free_memory)
                            .await;
                    }
                    known = now_known;
                }
            }
        }
    });
}
