//! The MCP server: shortlisted catalog endpoints as real tools, per client.
//!
//! - [`state`]: what all clients share (the catalog served, invoker) and the three verbs
//!   (list, find, call); [`served`]: one catalog as served, replaced whole by [`reload`] when
//!   its files change;
//! - [`exposure`]: which tools a request sees, by the operator's choice and its protocol era;
//! - [`clients`]: each client's exposed set (capped, least recently used leave, idle
//!   expiry) and its notification channels;
//! - [`handler`]: the rmcp `ServerHandler`, one per connection, session or request;
//!   [`observed`]: what every request passes through on its way to it (declared methods
//!   only, `logging/setLevel`, request counts);
//! - [`tools`], [`meta_tools`], [`apis`], [`discovery`], [`outcome`]: what clients see;
//! - [`memory`]: freed memory goes back to the system when clients leave;
//! - transports: stdio ([`serve_stdio`]), streamable HTTP and legacy SSE ([`http`],
//!   [`legacy_sse`], [`guard`]); the consent pages' limits per client ([`rate_limit`],
//!   [`client_addr`]).
//!
//! Stdout belongs to the protocol in stdio mode: nothing here prints to it; logs go through
//! `tracing` to stderr.

pub mod apis;
pub mod audit;
pub mod browser;
pub mod caller;
pub mod client_addr;
pub mod clients;
pub mod consent;
pub mod discovery;
pub mod exposure;
pub mod guard;
pub mod handler;
pub mod http;
pub mod legacy_sse;
pub mod memory;
pub mod meta_tools;
pub mod oauth;
pub mod observed;
pub mod outcome;
pub mod parked;
pub mod parse_error;
pub mod probes;
pub mod rate_limit;
pub mod reload;
pub mod served;
pub mod sessions;
pub mod signin;
pub mod state;
pub mod tokens;
pub mod tools;
pub mod visibility;

pub use clients::{ClientKey, ClientRegistry};
pub use exposure::{Era, Expose, Exposure};
pub use handler::ShortlistServer;
pub use http::HttpOptions;
pub use observed::Observed;
pub use reload::{CatalogSource, WatchOptions};
pub use served::Served;
pub use state::{ServerOptions, ServerState};
pub use visibility::Sight;

use rmcp::ServiceExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Serves one client over stdin/stdout until it disconnects or `shutdown` is cancelled.
pub async fn serve_stdio(
    state: Arc<ServerState>,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let handler = Observed::new(ShortlistServer::for_connection(state, ClientKey::stdio()));
    let running = match handler
        .serve_with_ct(rmcp::transport::stdio(), shutdown)
        .await
    {
        Ok(r) => r,
        // A client that goes away before initializing (or a shutdown then) is not an error
        // of the server's.
        Err(e) => {
            tracing::info!(error = %e, "stdio client left before initialization");
            return Ok(());
        }
    };
    running
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("the MCP service failed: {e}"))?;
    Ok(())
}
