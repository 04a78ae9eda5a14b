//! Everything the server shares across clients and transports: the shortlister, the catalog
//! config, the invoker and the per-client exposed sets.
//!
//! Handlers are cheap and short-lived (one per request for stateless HTTP), so they hold an
//! `Arc<ServerState>` and nothing else of weight. The operations here are the product's
//! three verbs (list, find, call), written once for every transport and protocol era.

use super::apis::ApiDirectory;
use super::clients::{Change, ClientKey, ClientRegistry};
use super::discovery;
use super::meta_tools::{self, FindArgs};
use super::outcome;
use super::tools::endpoint_tool;
use crate::catalog::{ApiConfig, Catalog, Endpoint};
use crate::invoke::Invoker;
use crate::shortlist::explain::Explained;
use crate::shortlist::{ShortlistError, Shortlister};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Which tools a client sees besides the meta-tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Expose {
    /// `find_tools` adds its hits to the client's list (capped, least recently used leave).
    #[default]
    Dynamic,
    /// Every endpoint is a tool from the start: for small catalogs.
    Static,
    /// Only the three meta-tools: for clients that ignore `tools/list_changed`.
    Meta,
}

/// Serving options.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub expose: Expose,
    /// Most endpoint tools one client sees at once (dynamic mode).
    pub max_tools: usize,
    /// A client without requests for this long loses its exposed set.
    pub idle_expiry: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            expose: Expose::Dynamic,
            max_tools: 20,
            idle_expiry: Duration::from_secs(30 * 60),
        }
    }
}

/// A `find_tools` ranking: the arguments as read and the hits, best first.
pub struct Ranked {
    pub args: FindArgs,
    /// The API ids `args.api` named (`None`: every API).
    pub apis: Option<Vec<String>>,
    pub hits: Vec<crate::shortlist::Hit>,
}

/// What a `find_tools` call produced.
pub struct Found {
    /// The answer for the model.
    pub result: Value,
    /// How the client's exposed set changed (empty unless dynamic).
    pub change: Change,
}

/// Shared server state; see the module documentation.
pub struct ServerState {
    shortlister: Shortlister,
    catalog: Catalog,
    invoker: Invoker,
    clients: ClientRegistry,
    options: ServerOptions,
    apis: ApiDirectory,
    static_tools: OnceLock<Vec<Tool>>,
    /// Rankings running at once. Ranking is CPU work, so more of them than cores only
    /// queue inside; bounding them here keeps a burst of clients from parking one
    /// blocking thread each (a stack and a malloc cache apiece, resident until the thread
    /// idles out) on the embedder's lock.
    ranking: tokio::sync::Semaphore,
}

impl ServerState {
    /// Builds the state. `catalog` provides API configs (base URLs, auth, read-only); the
    /// endpoints served are the index's, which `serve` has just brought up to date with it.
    pub fn new(
        shortlister: Shortlister,
        mut catalog: Catalog,
        invoker: Invoker,
        options: ServerOptions,
    ) -> ServerState {
        // The index holds the same endpoints; keeping a second copy would double the
        // largest part of the server's memory for nothing.
        catalog.endpoints = Vec::new();
        let tables = shortlister.tables();
        let apis = ApiDirectory::new(tables.api_of.iter().filter_map(|&a| {
            let (id, title) = tables.apis.get(a as usize)?;
            Some((id.as_str(), title.as_str()))
        }));
        // Credentials in base URLs are known from the start, so no log line (of any
        // level, from any crate) shows them, even before the first call.
        let mut secrets = crate::invoke::redact::Redactor::default();
        let servers = tables.credentialed_servers.iter();
        for raw in catalog
            .config
            .apis
            .iter()
            .filter_map(|a| a.base_url.as_ref())
            .chain(servers)
            .filter(|s| s.contains('@'))
        {
            crate::invoke::request::register_user_info(raw, &mut secrets);
        }
        ServerState {
            clients: ClientRegistry::new(options.max_tools, options.idle_expiry),
            shortlister,
            catalog,
            invoker,
            options,
            apis,
            static_tools: OnceLock::new(),
            ranking: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()),
            ),
        }
    }

    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    pub fn clients(&self) -> &ClientRegistry {
        &self.clients
    }

    /// Number of endpoints served.
    pub fn endpoint_count(&self) -> usize {
        self.shortlister.len()
    }

    /// The endpoint with this tool name and its index position.
    pub fn lookup(&self, name: &str) -> Option<(usize, &Endpoint)> {
        let pos = self.shortlister.index().position(name)?;
        Some((pos, self.shortlister.endpoint(pos)?))
    }

    /// The catalog config entry of an API.
    pub fn api_config(&self, api: &str) -> Option<&ApiConfig> {
        self.catalog.api_config(api)
    }

    /// The tools `key` sees: the meta-tools, then its exposed endpoints (dynamic), every
    /// endpoint (static) or nothing more (meta).
    pub fn list_tools(&self, key: &ClientKey) -> Vec<Tool> {
        let mut tools = self.meta_tools();
        match self.options.expose {
            Expose::Dynamic => {
                // Most recently exposed last, so a growing list keeps its order.
                for pos in self.clients.exposed(key) {
                    tools.extend(self.shortlister.endpoint(pos).map(endpoint_tool));
                }
            }
            Expose::Static => tools.extend(self.static_tools().iter().cloned()),
            Expose::Meta => {}
        }
        tools
    }

    fn static_tools(&self) -> &[Tool] {
        self.static_tools.get_or_init(|| {
            (0..self.shortlister.len())
                .filter_map(|i| self.shortlister.endpoint(i).map(endpoint_tool))
                .collect()
        })
    }

    /// The three meta-tool definitions for this catalog.
    pub fn meta_tools(&self) -> Vec<Tool> {
        meta_tools::definitions(self.k_limit(), self.options.expose == Expose::Dynamic)
    }

    /// Largest `k` a `find_tools` call may ask for. In dynamic mode more hits than the cap
    /// could not all be exposed at once.
    fn k_limit(&self) -> usize {
        match self.options.expose {
            Expose::Dynamic => self.options.max_tools.max(1),
            _ => 50,
        }
    }

    /// `find_tools`: ranks endpoints and, in dynamic mode, exposes them to `key`. Without
    /// a query it lists the catalog's APIs instead (see [`super::apis`]).
    pub async fn find(self: &Arc<Self>, key: &ClientKey, args: &JsonObject) -> Found {
        match meta_tools::find_args(args, self.k_limit()) {
            Ok(FindArgs {
                query: None, api, ..
            }) => {
                return match self.apis.listing(api.as_deref()) {
                    Ok(result) => Found {
                        result,
                        change: Change::default(),
                    },
                    Err(msg) => Found::error(msg),
                };
            }
            Ok(_) => {}
            Err(msg) => return Found::error(msg),
        }
        let (query, hits) = match self.rank(args).await {
            Ok(Ranked { args, hits, .. }) => (args.query.unwrap_or_default(), hits),
            Err(msg) => return Found::error(msg),
        };
        let dynamic = self.options.expose == Expose::Dynamic;
        let change = if dynamic {
            let positions: Vec<usize> = hits.iter().map(|h| h.position).collect();
            self.clients.expose(key, &positions)
        } else {
            Change::default()
        };
        let note = match self.options.expose {
            Expose::Dynamic => {
                "These are now tools in your list. Call them directly, or with \
                 call_tool(name, arguments) if your tool list has not updated. \
                 describe_tool(name) gives every parameter."
            }
            Expose::Static => {
                "Every endpoint is already a tool: call it directly, or with \
                 call_tool(name, arguments). describe_tool(name) gives every parameter."
            }
            Expose::Meta => {
                "Call these with call_tool(name, arguments). describe_tool(name) gives every \
                 parameter."
            }
        };
        let values = hits
            .iter()
            .filter_map(|h| {
                let ep = self.shortlister.endpoint(h.position)?;
                Some(discovery::hit(ep, h.score))
            })
            .collect();
        Found {
            result: discovery::find_result(&query, values, dynamic, note),
            change,
        }
    }

    /// The ranking behind `find_tools` for its arguments, with nothing exposed to anyone:
    /// the one path both `find_tools` and the console's preview take, so the console shows
    /// what a client would get. Ranking embeds the query (CPU work), so it runs off the
    /// async workers. The error is the message a client would read.
    pub async fn rank(self: &Arc<Self>, args: &JsonObject) -> Result<Ranked, String> {
        let (args, apis, hits) = self
            .rank_with(args, |s, q, k, apis| s.search_in(q, k, apis))
            .await?;
        Ok(Ranked { args, apis, hits })
    }

    /// [`ServerState::rank`] with the explanation of each hit, from one embedding of the
    /// request (the console's Try).
    pub async fn rank_explained(
        self: &Arc<Self>,
        args: &JsonObject,
    ) -> Result<(Ranked, Explained), String> {
        let (args, apis, (hits, explained)) = self
            .rank_with(args, |s, q, k, apis| s.search_explained(q, k, apis))
            .await?;
        Ok((Ranked { args, apis, hits }, explained))
    }

    /// Runs `f` (a search of the shortlister) for `find_tools` arguments, on the blocking
    /// pool and within the ranking slots; the arguments, the API ids they name and what
    /// `f` found, or the message `find_tools` gives.
    async fn rank_with<T: Send + 'static>(
        self: &Arc<Self>,
        args: &JsonObject,
        f: impl FnOnce(&Shortlister, &str, usize, Option<&[&str]>) -> Result<T, ShortlistError>
            + Send
            + 'static,
    ) -> Result<(FindArgs, Option<Vec<String>>, T), String> {
        let args = meta_tools::find_args(args, self.k_limit())?;
        let Some(q) = args.query.clone() else {
            return Err("'query' is required to rank endpoints".into());
        };
        let apis = args
            .api
            .as_deref()
            .map(|a| self.apis.resolve(a))
            .transpose()?;
        let state = Arc::clone(self);
        let k = args.k;
        // Never closed, so acquiring only waits for a free slot.
        let Ok(_permit) = self.ranking.acquire().await else {
            return Err("ranking failed (internal error)".into());
        };
        let named = apis.clone();
        let ranked = tokio::task::spawn_blocking(move || {
            let apis: Option<Vec<&str>> = apis
                .as_ref()
                .map(|a| a.iter().map(String::as_str).collect());
            f(&state.shortlister, &q, k, apis.as_deref())
        })
        .await;
        match ranked {
            Ok(Ok(found)) => Ok((args, named, found)),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "find_tools: ranking failed");
                Err(format!("ranking failed: {e}"))
            }
            Err(e) => {
                tracing::error!(error = %e, "find_tools: ranking task failed");
                Err("ranking failed (internal error)".into())
            }
        }
    }

    /// The shortlister the server ranks with.
    pub fn shortlister(&self) -> &Shortlister {
        &self.shortlister
    }

    /// The catalog config the server was started with.
    pub fn catalog_config(&self) -> &crate::catalog::CatalogConfig {
        &self.catalog.config
    }

    /// The catalog as loaded at start, without its endpoints (the index holds those): the
    /// APIs and the load problems.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// `describe_tool`: the full definition, or a message naming the closest tool names.
    pub fn describe(&self, key: &ClientKey, args: &JsonObject) -> CallToolResult {
        let name = match meta_tools::describe_args(args) {
            Ok(n) => n,
            Err(msg) => return error_result(msg),
        };
        let Some((pos, ep)) = self.lookup(&name) else {
            return error_result(self.unknown_tool(&name));
        };
        let exposed = match self.options.expose {
            Expose::Dynamic => self.clients.exposed(key).contains(&pos),
            Expose::Static => true,
            Expose::Meta => false,
        };
        json_result(discovery::describe(ep, self.api_config(&ep.api), exposed))
    }

    /// Calls the endpoint `name` for `key`: the one code path behind both a direct call of
    /// an exposed tool and `call_tool(name, arguments)`, so the two cannot behave
    /// differently. `None` when no endpoint has that name.
    pub async fn call_endpoint(
        &self,
        key: &ClientKey,
        name: &str,
        arguments: &JsonObject,
    ) -> Option<CallToolResult> {
        let (pos, ep) = self.lookup(name)?;
        if self.options.expose == Expose::Dynamic {
            self.clients.touch(key, pos);
        }
        let api_cfg = self.api_config(&ep.api);
        let outcome = self.invoker.call(ep, api_cfg, arguments).await;
        tracing::debug!(tool = name, status = ?outcome.status, is_error = outcome.is_error, "tool called");
        Some(outcome::to_result(outcome))
    }

    /// The message for a name no endpoint has, with the nearest names as hints.
    pub fn unknown_tool(&self, name: &str) -> String {
        let near = crate::invoke::validate::closest(
            name,
            self.shortlister
                .index()
                .keys()
                .iter()
                .map(String::as_str)
                .chain([
                    meta_tools::FIND_TOOLS,
                    meta_tools::DESCRIBE_TOOL,
                    meta_tools::CALL_TOOL,
                ]),
        );
        let name = crate::text::clip_chars(name, 80);
        match near {
            Some(n) => {
                format!("unknown tool '{name}' (did you mean '{n}'?); use find_tools to find tools")
            }
            None => format!("unknown tool '{name}'; use find_tools to find tools"),
        }
    }
}

impl Found {
    fn error(msg: String) -> Found {
        Found {
            result: serde_json::json!({"error": msg}),
            change: Change::default(),
        }
    }

    /// Whether the answer is an argument or ranking error.
    pub fn is_error(&self) -> bool {
        self.result.get("error").is_some()
    }
}

/// A successful result whose text is the compact JSON and whose structured content is the
/// same object, for clients that read either.
pub fn json_result(v: Value) -> CallToolResult {
    let text = serde_json::to_string(&v).unwrap_or_default();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    if v.is_object() {
        r.structured_content = Some(v);
    }
    r
}

/// A tool-level error the model sees and can act on.
pub fn error_result(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}
