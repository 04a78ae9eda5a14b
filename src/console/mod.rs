//! The catalog console: a small local web app to see, review and try a catalog.
//!
//! - [`health`]: every API, its endpoints and load problems, and how well each endpoint is
//!   described;
//! - [`review`], [`review_write`]: generated values beside the spec's own text, accepted,
//!   edited or rejected into the enriched spec the way a person editing it would;
//! - [`try_request`]: the shortlist a client would get for a request, each tool's score
//!   explained, its token cost and its definition as sent;
//! - [`tool_review`]: MCP servers' tool definitions held until a reviewer approves them,
//!   each beside the approved one;
//! - [`audit`]: the state store's audit log of upstream calls, for admins;
//! - [`pages`], [`html`]: server-rendered pages; [`routes`]: the pages and the JSON
//!   endpoints behind them (documented in `docs/console.md`), [`tool_routes`] those of the
//!   tool definitions, [`answers`] what they share; [`login`]: the token as a
//!   cookie, for browsers; [`viewer`]: who is looking (the operator, an admin, or a person
//!   who sees only their own APIs); [`metrics`]: `/metrics` for Prometheus, admins only.
//!
//! It is served by `shortlist console` and under `/console` of `shortlist serve --http`,
//! behind the same guards as MCP (loopback bind, `Host` and `Origin` checks, bearer token
//! or access token).

pub mod answers;
pub mod audit;
pub mod health;
pub mod html;
pub mod login;
pub mod metrics;
pub mod pages;
pub mod review;
pub mod review_write;
pub mod routes;
pub mod tool_review;
pub mod tool_routes;
pub mod try_request;
pub mod viewer;

use crate::catalog::{Catalog, CatalogConfig, Endpoint, SpecSource};
use crate::server::ServerState;
use review::{ReviewField, ReviewItem, Status};
use std::collections::HashMap;
use std::sync::Arc;

/// The catalog as the console shows it: loaded from the spec files (enriched copies
/// included) and their review items. Reloaded after each saved review, so what the pages
/// show is what the files say.
pub struct Snapshot {
    pub catalog: Catalog,
    pub sources: Vec<SpecSource>,
    pub items: Vec<ReviewItem>,
    /// Enriched files that could not be read for review, with the reason.
    pub unreadable: Vec<String>,
    /// `(api, METHOD, path)` -> index in `items` of the operation's generated description
    /// awaiting review.
    pending: HashMap<(String, &'static str, String), usize>,
}

impl Snapshot {
    /// Loads the catalog (its MCP servers' tools from `listings`, what the server serves)
    /// and every enriched copy's review items.
    pub fn load(
        config: &CatalogConfig,
        listings: &crate::catalog::mcp_tools::Listings,
    ) -> Snapshot {
        let catalog = Catalog::load_listed(config, listings);
        let sources = crate::catalog::expand_sources(config, &mut Vec::new());
        let mut items = Vec::new();
        let mut unreadable = Vec::new();
        for src in &sources {
            match review::read_items(src) {
                Ok(mut v) => items.append(&mut v),
                Err(e) => unreadable.push(e),
            }
        }
        let tools: HashMap<(&str, &str, &str), &str> = catalog
            .endpoints
            .iter()
            .map(|e| {
                (
                    (e.api.as_str(), e.method.as_str(), e.path.as_str()),
                    e.tool_name.as_str(),
                )
            })
            .collect();
        let mut pending = HashMap::new();
        for (i, it) in items.iter_mut().enumerate() {
            it.tool = tools
                .get(&(it.api.as_str(), it.method, it.path.as_str()))
                .map(|t| t.to_string());
            if it.status == Status::Pending
                && it.field == ReviewField::Description
                && it.param.is_none()
            {
                pending.insert((it.api.clone(), it.method, it.path.clone()), i);
            }
        }
        drop(tools);
        Snapshot {
            catalog,
            sources,
            items,
            unreadable,
            pending,
        }
    }

    /// `ep`'s generated description, while it awaits review.
    pub fn pending_description(&self, ep: &Endpoint) -> Option<&ReviewItem> {
        let key = (ep.api.clone(), ep.method.as_str(), ep.path.clone());
        self.pending.get(&key).and_then(|&i| self.items.get(i))
    }

    /// The spec file of an API.
    pub fn source(&self, api: &str) -> Option<&SpecSource> {
        self.sources.iter().find(|s| s.id == api)
    }
}

/// What the console's handlers share.
pub struct Console {
    server: Arc<ServerState>,
    /// The snapshot and the generation of the served catalog it was loaded beside: a
    /// reload of the server's catalog makes the pages read the files again too.
    snapshot: tokio::sync::Mutex<Option<(u64, Arc<Snapshot>)>>,
    locks: review_write::Locks,
}

impl Console {
    /// The health report for `viewer`, with the live state of the MCP servers it shows.
    pub fn health(
        &self,
        snap: &Snapshot,
        filter: &health::Filter,
        viewer: &viewer::Viewer,
    ) -> health::Health {
        let mut h = health::report(snap, filter, &viewer.shown(snap));
        h.servers = health::servers(&h, self.server.invoker().upstreams().map(|u| &**u));
        h
    }

    pub fn new(server: Arc<ServerState>) -> Arc<Console> {
        Arc::new(Console {
            server,
            snapshot: tokio::sync::Mutex::new(None),
            locks: review_write::Locks::default(),
        })
    }

    pub fn server(&self) -> &Arc<ServerState> {
        &self.server
    }

    /// The current snapshot, loaded on first use, after a review and after the server's
    /// catalog was reloaded (off the async workers: it reads every spec).
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, String> {
        let mut slot = self.snapshot.lock().await;
        let generation = self.server.served().generation();
        if let Some((g, s)) = slot.as_ref() {
            if *g == generation {
                return Ok(Arc::clone(s));
            }
        }
        let config = self.server.catalog_config();
        let listings = self
            .server
            .invoker()
            .upstreams()
            .map(|u| u.listings())
            .unwrap_or_default();
        let snap = tokio::task::spawn_blocking(move || Snapshot::load(&config, &listings))
            .await
            .map_err(|e| format!("loading the catalog failed: {e}"))?;
        let snap = Arc::new(snap);
        *slot = Some((generation, Arc::clone(&snap)));
        Ok(snap)
    }

    /// Records a review and makes the next page read the files again.
    pub async fn review(
        self: &Arc<Self>,
        r: review_write::Review,
    ) -> Result<review_write::Saved, review_write::ReviewError> {
        use review_write::ReviewError;
        review_write::validate(&r)?;
        let snap = self.snapshot().await.map_err(ReviewError::Io)?;
        let src = snap
            .source(&r.api)
            .cloned()
            .ok_or_else(|| ReviewError::NotFound(format!("api: no API '{}'", clip(&r.api))))?;
        let schema = r.param.as_ref().and_then(|p| {
            snap.catalog
                .endpoints
                .iter()
                .find(|e| e.api == r.api && e.path == r.path && e.method.as_str() == r.method)
                .and_then(|e| {
                    e.parameters
                        .iter()
                        .find(|q| q.name == p.name && q.location.as_str() == p.location)
                })
                .map(|q| q.schema.clone())
        });
        let me = Arc::clone(self);
        let saved = tokio::task::spawn_blocking(move || {
            review_write::record(&me.locks, &src, &r, schema.as_ref())
        })
        .await
        .map_err(|e| ReviewError::Io(format!("saving failed: {e}")))??;
        *self.snapshot.lock().await = None;
        Ok(saved)
    }
}

fn clip(s: &str) -> String {
    crate::text::clip_chars(s, 60)
}
