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

pub mod bearing;
pub mod child;
pub mod elicit;
pub mod handler;
pub mod http;
pub mod personal;
pub mod pins;
pub mod progress;
pub mod protected;
pub mod server;
pub mod sse;

use crate::catalog::mcp_tools::Listings;
use crate::catalog::CatalogConfig;
use crate::invoke::address::Policy;
use crate::invoke::transport::Egress;
pub use pins::Pins;
pub use progress::Progress;

/// What a call passes on to the person behind it: the upstream's progress, and its
/// elicitations and sampling requests where they can be asked ([`elicit`]).
#[derive(Clone, Default)]
pub struct CallHooks {
    pub progress: Option<Progress>,
    pub ask: Option<elicit::Asker>,
    /// Where the upstream's sampling requests go (session-era clients that declared it).
    pub sample: Option<elicit::Sampler>,
}
/// A person's own token for one call, and whose it is: the call goes over that person's
/// own connection ([`personal`]).
#[derive(Clone, Copy)]
pub struct PersonToken<'a> {
    pub sub: &'a str,
    pub token: &'a str,
}

/// Why a call got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    /// The server refused the person's token (`401`): a fresh one may do.
    pub token_refused: bool,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl From<Failure> for String {
    fn from(f: Failure) -> String {
        f.reason
    }
}

impl From<String> for Failure {
    fn from(reason: String) -> Failure {
        Failure {
            reason,
            token_refused: false,
        }
    }
}

use crate::catalog::AuthConfig;
use crate::credentials::{Broker, ServerSide};
use serde_json::{Map, Value};
pub use server::{Server, Status};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every MCP server of one catalog.
pub struct Upstreams {
    /// The servers by id; replaced as a whole when the config's MCP entries change.
    servers: std::sync::RwLock<BTreeMap<String, Arc<Server>>>,
    /// The latest listing of each server, by entry position.
    listings: Mutex<Listings>,
    /// Bumped each time a server's tools were listed again after it said they changed.
    changes: Arc<AtomicU64>,
    /// Servers that said their tools changed and wait to be listed again.
    stale: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// The gate of pinned definitions, where the server keeps a state store.
    pins: std::sync::OnceLock<Arc<Pins>>,
    /// How HTTP servers are reached: directly, or through the egress proxy.
    egress: Egress,
    /// Each person's own connections, for servers whose calls carry their token.
    personal: personal::Personal,
    /// Machine tokens (client credentials) for the servers' shared connections.
    machine: Arc<Broker>,
    /// Credential settings filled in from servers' metadata, by id ([`protected`]).
    resolved: Mutex<BTreeMap<String, AuthConfig>>,
    /// The `[auth]` issuer, whose tokens alone are exchanged.
    issuer: std::sync::RwLock<Option<String>>,
}

/// What a server is made from: its entry and the address policy it is reached under. A
/// server whose recipe changed is a new server.
fn recipes(
    config: &CatalogConfig,
) -> BTreeMap<String, (crate::catalog::config::ApiConfig, Policy)> {
    config
        .apis
        .iter()
        .filter_map(|entry| {
            let id = entry.id.clone()?;
            entry.mcp.as_ref()?;
            // The same address policy as the entry's API calls would have.
            let policy = Policy {
                link_local: entry.allow_link_local,
                private: config.auth.is_none() || entry.allow_private,
            };
            Some((id, (entry.clone(), policy)))
        })
        .collect()
}

impl Upstreams {
    /// The servers `config` names, none started yet, reached as its `[upstream]` table says
    /// (a table that cannot be used leaves HTTP servers reached directly, said at once).
    pub fn new(config: &CatalogConfig) -> Arc<Upstreams> {
        let egress = match Egress::from_config(&config.upstream.clone().unwrap_or_default()) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("MCP servers over HTTP are reached directly: {e}");
                Egress::default()
            }
        };
        Upstreams::with_egress(config, egress)
    }

    /// The servers `config` names, none started yet, HTTP ones reached through `egress`
    /// (`serve --upstream-proxy` overrides the config's `[upstream]`).
    pub fn with_egress(config: &CatalogConfig, egress: Egress) -> Arc<Upstreams> {
        let upstreams = Arc::new(Upstreams {
            servers: std::sync::RwLock::new(BTreeMap::new()),
            listings: Mutex::new(Listings::new()),
            changes: Arc::new(AtomicU64::new(0)),
            stale: Arc::default(),
            pins: std::sync::OnceLock::new(),
            egress,
            personal: personal::Personal::default(),
            machine: Arc::new(Broker::new(
                Arc::new(|k: &str| std::env::var(k).ok()),
                ServerSide::default(),
            )),
            resolved: Mutex::default(),
            issuer: std::sync::RwLock::new(config.auth.as_ref().map(|a| a.issuer.clone())),
        });
        let servers = recipes(config)
            .into_iter()
            .map(|(id, (entry, policy))| {
                let server = upstreams.make(&id, entry, policy);
                (id, server)
            })
            .collect();
        if let Ok(mut s) = upstreams.servers.write() {
            *s = servers;
        }
        upstreams
    }

    /// A server, not started, whose `list_changed` marks it stale here.
    fn make(
        &self,
        id: &str,
        entry: crate::catalog::config::ApiConfig,
        policy: Policy,
    ) -> Arc<Server> {
        let marks = self.stale.clone();
        let marked = id.to_string();
        let on_changed: handler::OnListChanged = Arc::new(move || {
            if let Ok(mut s) = marks.lock() {
                s.insert(marked.clone());
            }
        });
        Arc::new(
            Server::new(id, entry, on_changed, policy, self.egress.clone())
                .with_machine(Arc::clone(&self.machine)),
        )
    }

    /// The servers now, by id.
    fn servers(&self) -> BTreeMap<String, Arc<Server>> {
        self.servers.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// One server.
    fn server(&self, id: &str) -> Option<Arc<Server>> {
        self.servers.read().ok()?.get(id).cloned()
    }

    /// Whether the catalog names any MCP server.
    pub fn is_empty(&self) -> bool {
        self.servers.read().map(|s| s.is_empty()).unwrap_or(true)
    }

    /// Brings the servers in line with `config`'s MCP entries: a server no entry names
    /// any more is stopped (its whole process tree) and its tools go; a new entry, or one
    /// whose command, URL, credentials or headers changed, gets a server started and listed
    /// (within its own start timeout). Whether anything changed (the catalog is then
    /// rebuilt, as after a `list_changed`).
    pub async fn reconcile(&self, config: &CatalogConfig) -> bool {
        let wanted = recipes(config);
        let now = self.servers();
        let mut gone = Vec::new();
        let mut next = BTreeMap::new();
        let mut started = Vec::new();
        for (id, server) in &now {
            match wanted.get(id) {
                Some((entry, policy)) if server.is_made_of(entry, *policy) => {
                    next.insert(id.clone(), Arc::clone(server));
                }
                _ => gone.push(Arc::clone(server)),
            }
        }
        for (id, (entry, policy)) in wanted {
            if let std::collections::btree_map::Entry::Vacant(slot) = next.entry(id) {
                let server = self.make(slot.key(), entry, policy);
                started.push(Arc::clone(&server));
                slot.insert(server);
            }
        }
        if gone.is_empty() && started.is_empty() {
            return false;
        }
        if let Some(p) = self.pins.get() {
            p.reconfigure(config);
        }
        if let Ok(mut s) = self.servers.write() {
            *s = next;
        }
        if let Ok(mut i) = self.issuer.write() {
            *i = config.auth.as_ref().map(|a| a.issuer.clone());
        }
        let gone_ids: Vec<&str> = gone.iter().map(|s| s.id.as_str()).collect();
        if let Ok(mut r) = self.resolved.lock() {
            r.retain(|id, _| !gone_ids.contains(&id.as_str()));
        }
        let keep = |id: &str, _: &Server| !gone_ids.contains(&id);
        let closed = self.personal.retain(Some(&keep));
        futures::future::join_all(closed.iter().map(|s| s.stop())).await;
        for s in &gone {
            // What is served changes: said at the default level.
            tracing::warn!(server = %s.id, "MCP server no longer in the config (or changed): stopped");
            s.stop().await;
        }
        if let Ok(mut l) = self.listings.lock() {
            for s in &gone {
                l.remove(&s.key());
            }
        }
        let listed = futures::future::join_all(started.iter().map(|s| async move {
            let listed = s.list().await;
            match &listed {
                Ok(l) => tracing::warn!(server = %s.id, tools = l.tools.len(), "MCP server added to the config: listed"),
                Err(e) => tracing::warn!(server = %s.id, "MCP server added, not listed: {e}"),
            }
            (s.key(), listed)
        }))
        .await;
        if let Ok(mut l) = self.listings.lock() {
            l.extend(listed);
        }
        self.sync_pins().await;
        self.changes.fetch_add(1, Ordering::SeqCst);
        true
    }

    /// Starts every server in parallel and lists its tools; what each said (or why it
    /// could not) is kept for [`Upstreams::listings`] and returned.
    pub async fn list_all(&self) -> Listings {
        let servers = self.servers();
        let tasks = servers.values().map(|s| async move {
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
            let Some(s) = self.server(id) else {
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

    /// The latest listing of every server, with only the tools whose definitions are
    /// approved where definitions are pinned ([`Pins`]).
    pub fn listings(&self) -> Listings {
        let raw = self.raw_listings();
        match self.pins.get() {
            Some(p) => p.filter(raw),
            None => raw,
        }
    }

    /// The latest listing of every server, as the servers gave them.
    fn raw_listings(&self) -> Listings {
        self.listings.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Pins the servers' tool definitions from now on: only approved ones are listed and
    /// called. Set once, before the first [`Upstreams::sync_pins`].
    pub fn set_pins(&self, pins: Pins) -> bool {
        self.pins.set(Arc::new(pins)).is_ok()
    }

    /// The gate of pinned definitions, if any.
    pub fn pins(&self) -> Option<&Arc<Pins>> {
        self.pins.get()
    }

    /// Records the definitions listed and reads the approvals back; when what is approved
    /// changed, the catalog is rebuilt (as after a `list_changed`). A store that cannot be
    /// reached is reported and the approvals read last stay.
    pub async fn sync_pins(&self) {
        let Some(pins) = self.pins.get() else {
            return;
        };
        match pins.sync(&self.raw_listings()).await {
            Ok(true) => {
                self.changes.fetch_add(1, Ordering::SeqCst);
            }
            Ok(false) => {}
            Err(e) => tracing::warn!("tool pins not read: {e}"),
        }
    }

    /// How many times the servers' tools have been listed again since start: part of what
    /// the server's reload compares.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// Calls `tool` on server `id`; its progress and elicitations go where `hooks` say.
    /// With `person`, the call goes over that person's own connection, carrying their token.
    pub async fn call(
        &self,
        id: &str,
        tool: &str,
        arguments: Map<String, Value>,
        timeout: Duration,
        hooks: CallHooks,
        person: Option<PersonToken<'_>>,
    ) -> Result<rmcp::model::CallToolResult, Failure> {
        let server = self
            .server(id)
            .ok_or_else(|| format!("no MCP server '{id}' in this catalog"))?;
        // Between a changed listing and the catalog's rebuild the old definition is still
        // served: a tool whose latest definition is held is not called meanwhile.
        if self
            .pins
            .get()
            .is_some_and(|p| !self.is_approved(p, id, tool))
        {
            return Err(format!(
                "the definition of '{tool}' on MCP server '{id}' changed and awaits review; \
                 it is not served until a reviewer approves it"
            )
            .into());
        }
        let Some(p) = person else {
            return Ok(server.call(tool, arguments, timeout, hooks).await?);
        };
        let (own, closed) = self
            .personal
            .get(id, p.sub, || Arc::new(server.for_person()));
        for c in closed {
            tokio::spawn(async move { c.stop().await });
        }
        own.slot().set(Some(p.token.to_string()));
        let answered = own.call(tool, arguments, timeout, hooks).await;
        match answered {
            Err(reason) if own.slot().refused() => {
                // Opened anew, without backing off, with the fresh token a retry brings.
                if let Some(c) = self.personal.forget(id, p.sub) {
                    tokio::spawn(async move { c.stop().await });
                }
                Err(Failure {
                    reason,
                    token_refused: true,
                })
            }
            other => Ok(other?),
        }
    }

    /// The credential settings calls to server `id` are made with: its entry's `auth`,
    /// with what it left out read from the server's protected-resource metadata (once,
    /// then kept; a failure is tried again on the next call). `None`: no `auth`.
    pub async fn auth_for(&self, id: &str) -> Result<Option<AuthConfig>, String> {
        let server = self
            .server(id)
            .ok_or_else(|| format!("no MCP server '{id}' in this catalog"))?;
        let Some(auth) = server.entry().auth.clone() else {
            return Ok(None);
        };
        if !protected::needs_discovery(&auth) {
            return Ok(Some(auth));
        }
        if let Some(done) = self.resolved_auth(id) {
            return Ok(Some(done));
        }
        let issuer = self.issuer.read().ok().and_then(|i| i.clone());
        let filled = server
            .discover(&auth, issuer.as_deref())
            .await
            .map_err(|e| format!("MCP server '{id}': {e}"))?;
        if let Ok(mut r) = self.resolved.lock() {
            r.insert(id.to_string(), filled.clone());
        }
        Ok(Some(filled))
    }

    /// The credential settings read from server `id`'s metadata so far, if any: what a
    /// consent that call started completes with.
    pub fn resolved_auth(&self, id: &str) -> Option<AuthConfig> {
        self.resolved.lock().ok()?.get(id).cloned()
    }

    /// How many personal connections are open.
    pub fn personal_connections(&self) -> usize {
        self.personal.len()
    }

    /// Whether server `id` lists `tool` last in a definition `pins` approve.
    fn is_approved(&self, pins: &Pins, id: &str, tool: &str) -> bool {
        let Ok(listings) = self.listings.lock() else {
            return false;
        };
        listings.iter().any(|(key, listed)| {
            key.split('\t').next() == Some(id)
                && listed.as_ref().is_ok_and(|l| {
                    l.tools.iter().any(|t| {
                        t.get("name").and_then(Value::as_str) == Some(tool)
                            && pins.approves(id, tool, t)
                    })
                })
        })
    }

    /// Where each server stands, by id.
    pub fn health(&self) -> Vec<(String, Status)> {
        self.servers()
            .iter()
            .map(|(id, s)| (id.clone(), s.status()))
            .collect()
    }

    /// Stops every server (each child's whole process tree).
    pub async fn stop(&self) {
        let servers = self.servers();
        futures::future::join_all(servers.values().map(|s| s.stop())).await;
        let personal = self.personal.retain(None);
        futures::future::join_all(personal.iter().map(|s| s.stop())).await;
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
                        .servers()
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
