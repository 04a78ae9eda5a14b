//! The MCP servers a catalog names, as live connections: one owner, below the server,
//! that the catalog's loading and `invoke` both use, and that knows nothing of MCP's
//! server side.
//!
//! ```text
//! config [[api]] mcp ─► Upstreams ─► Server (connect, list, call, restart) ─► child / HTTP
//!                          │ listings() ─► Catalog::load_listed
//!                          │ call()     ◄─ invoke::mcp
//!                          └ changes()  ─► the server's reload (list_changed)
//! ```
//!
//! Servers start in parallel, each within its own timeout, so one slow or broken server
//! delays and breaks nothing else: it is reported, and its tools are missing until it
//! answers (the catalog's reload picks them up).

pub mod child;
pub mod handler;
pub mod http;
pub mod server;

use crate::catalog::mcp_tools::Listings;
use crate::catalog::CatalogConfig;
use serde_json::{Map, Value};
pub use server::{Server, Status};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every MCP server of one catalog.
pub struct Upstreams {
    servers: BTreeMap<String, Arc<Server>>,
    /// The latest listing of each server, by entry position.
    listings: Mutex<Listings>,
    /// Bumped each time a server's tools were listed again after it said they changed.
    changes: Arc<AtomicU64>,
    /// Servers that said their tools changed and wait to be listed again.
    stale: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl Upstreams {
    /// The servers `config` names, none started yet.
    pub fn new(config: &CatalogConfig) -> Arc<Upstreams> {
        let stale: Arc<Mutex<std::collections::BTreeSet<String>>> = Arc::default();
        let servers = config
            .apis
            .iter()
            .filter_map(|entry| {
                let id = entry.id.clone()?;
                entry.mcp.as_ref()?;
                let marks = stale.clone();
                let marked = id.clone();
                let on_changed: handler::OnListChanged = Arc::new(move || {
                    if let Ok(mut s) = marks.lock() {
                        s.insert(marked.clone());
                    }
                });
                Some((
                    id.clone(),
                    Arc::new(Server::new(&id, entry.clone(), on_changed)),
                ))
            })
            .collect();
        Arc::new(Upstreams {
            servers,
            listings: Mutex::new(Listings::new()),
            changes: Arc::new(AtomicU64::new(0)),
            stale,
        })
    }

    /// Whether the catalog names any MCP server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every server in parallel and lists its tools; what each said (or why it
    /// could not) is kept for [`Upstreams::listings`] and returned.
    pub async fn list_all(&self) -> Listings {
        let tasks = self.servers.values().map(|s| async move {
            let started = std::time::Instant::now();
            let listed = s.list().await;
            match &listed {
                Ok(l) => tracing::info!(
                    server = %s.id,
                    tools = l.tools.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "MCP server listed"
                ),
                Err(e) => tracing::warn!(server = %s.id, "MCP server not listed: {e}"),
            }
            (s.key(), listed)
        });
        let listed: Listings = futures::future::join_all(tasks).await.into_iter().collect();
        if let Ok(mut l) = self.listings.lock() {
            *l = listed.clone();
        }
        listed
    }

    /// Lists again the servers that said their tools changed; `true` when what any of them
    /// lists now differs from before (a server announcing changes that did not happen
    /// costs one listing, and no rebuild).
    pub async fn relist_changed(&self) -> bool {
        let ids: Vec<String> = match self.stale.lock() {
            Ok(mut s) => std::mem::take(&mut *s).into_iter().collect(),
            Err(_) => return false,
        };
        let mut changed = false;
        for id in &ids {
            let Some(s) = self.servers.get(id) else {
                continue;
            };
            let listed = s.list().await;
            if let Ok(mut l) = self.listings.lock() {
                changed |= l.get(&s.key()) != Some(&listed);
                l.insert(s.key(), listed);
            }
        }
        if changed {
            self.changes.fetch_add(1, Ordering::SeqCst);
        }
        changed
    }

    /// The latest listing of every server.
    pub fn listings(&self) -> Listings {
        self.listings.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// How many times the servers' tools have been listed again since start: part of what
    /// the server's reload compares.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// Calls `tool` on server `id`.
    pub async fn call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<rmcp::model::CallToolResult, String> {
        let server = self
            .servers
            .get(id)
            .ok_or_else(|| format!("no MCP server '{id}' in this catalog"))?;
        server.call(tool, arguments, timeout).await
    }

    /// Where each server stands, by id.
    pub fn health(&self) -> Vec<(String, Status)> {
        self.servers
            .iter()
            .map(|(id, s)| (id.clone(), s.status()))
            .collect()
    }

    /// Stops every server (each child's whole process tree).
    pub async fn stop(&self) {
        futures::future::join_all(self.servers.values().map(|s| s.stop())).await;
    }
}

/// Starts every MCP server `config` names, lists its tools and stops it again: the
/// listings a one-off command (`index`, `search`, `check`) loads its catalog from. Runs on
/// a thread of its own, so it may be called from anywhere, inside an async runtime or not.
pub fn list_once(config: &CatalogConfig) -> Listings {
    let upstreams = Upstreams::new(config);
    if upstreams.is_empty() {
        return Listings::new();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    let reason = format!("cannot start the async runtime: {e}");
                    return upstreams
                        .servers
                        .values()
                        .map(|s| (s.key(), Err(reason.clone())))
                        .collect();
                }
            };
            runtime.block_on(async {
                let listed = upstreams.list_all().await;
                upstreams.stop().await;
                listed
            })
        })
        .join()
        .unwrap_or_default()
    })
}
