//! Everything the server shares across clients and transports: the catalog being served
//! (replaced whole when the catalog changes), the invoker and the per-client exposed sets.
//!
//! Handlers are cheap and short-lived (one per request for stateless HTTP), so they hold an
//! `Arc<ServerState>` and nothing else of weight. The operations here are the product's
//! three verbs (list, find, call), written once for every transport and protocol era; each
//! takes the [`Exposure`] the request's era gets.

pub use super::caller::Caller;
use super::clients::{Change, ClientRegistry};
use super::discovery;
use super::exposure::{cache_hints, Era, Expose, Exposure};
use super::meta_tools::{self, FindArgs};
use super::outcome;
use super::served::Served;
use super::visibility::Sight;
use crate::catalog::Catalog;
use crate::invoke::Invoker;
use crate::shortlist::explain::Explained;
use crate::shortlist::{ShortlistError, Shortlister};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ListToolsResult, Tool};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// Serving options.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub expose: Expose,
    /// Most endpoint tools one client sees at once (dynamic exposure).
    pub max_tools: usize,
    /// A client without requests for this long loses its exposed set.
    pub idle_expiry: Duration,
    /// Endpoint tools per `tools/list` page (catalog exposure).
    pub page_size: usize,
    /// Tokens the hits of a `find_tools` answer without `k` may take.
    pub answer_tokens: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            expose: Expose::Auto,
            max_tools: 20,
            idle_expiry: Duration::from_secs(30 * 60),
            page_size: super::served::PAGE_SIZE,
            answer_tokens: discovery::DEFAULT_ANSWER_TOKENS,
        }
    }
}

/// What calling an endpoint came to.
pub enum CallResult {
    /// The call's result, success or a readable failure.
    Done(CallToolResult),
    /// The API needs the person's consent first: `link` is theirs to open.
    Consent {
        api: String,
        link: String,
        state: String,
    },
}

/// A `find_tools` ranking: the arguments as read and the hits, best first.
pub struct Ranked {
    pub args: FindArgs,
    /// The API ids `args.api` named (`None`: every API).
    pub apis: Option<Vec<String>>,
    pub hits: Vec<crate::shortlist::Hit>,
    /// Whether anything fits the request (`None`: not judged).
    pub judged: Option<crate::shortlist::matched::Judgement>,
    /// The catalog the hits' positions refer to.
    pub served: Arc<Served>,
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
    /// The catalog now served. Requests clone the `Arc` and keep it to their end; a reload
    /// replaces it whole.
    served: RwLock<Arc<Served>>,
    generations: AtomicU64,
    invoker: Invoker,
    clients: ClientRegistry,
    options: ServerOptions,
    /// The state store, where every upstream call is recorded (the audit log); `None`: no
    /// store is kept (stdio without `--state`).
    store: std::sync::OnceLock<crate::store::Store>,
    /// Rankings running at once. Ranking is CPU work, so more of them than cores only
    /// queue inside; bounding them here keeps a burst of clients from parking one
    /// blocking thread each (a stack and a malloc cache apiece, resident until the thread
    /// idles out) on the embedder's lock.
    ranking: tokio::sync::Semaphore,
    /// 2026-07-28 calls waiting for a person's answer to an upstream's question.
    parked: super::parked::Parked<Option<CallResult>>,
}

impl ServerState {
    /// Builds the state. `catalog` provides API configs (base URLs, auth, read-only); the
    /// endpoints served are the index's, which `serve` has just brought up to date with it.
    pub fn new(
        shortlister: Shortlister,
        catalog: Catalog,
        invoker: Invoker,
        options: ServerOptions,
    ) -> ServerState {
        let served = Served::new(shortlister, catalog, 1);
        crate::telemetry::metrics::served(served.len(), served.apis().len());
        ServerState {
            served: RwLock::new(Arc::new(served)),
            generations: AtomicU64::new(1),
            clients: ClientRegistry::new(options.max_tools, options.idle_expiry),
            invoker,
            options,
            store: std::sync::OnceLock::new(),
            ranking: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, |n| n.get()),
            ),
            parked: super::parked::Parked::default(),
        }
    }

    /// The calls waiting for a person's answer ([`super::parked`]).
    pub fn parked(&self) -> &super::parked::Parked<Option<CallResult>> {
        &self.parked
    }

    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// Records every upstream call in `store` from now on. Only the first store set is
    /// kept: returns whether this one was.
    pub fn set_store(&self, store: crate::store::Store) -> bool {
        self.store.set(store).is_ok()
    }

    /// The state store, when one is kept: the console reads the audit log from it.
    pub fn store(&self) -> Option<&crate::store::Store> {
        self.store.get()
    }

    pub fn clients(&self) -> &ClientRegistry {
        &self.clients
    }

    /// The catalog now served.
    pub fn served(&self) -> Arc<Served> {
        Arc::clone(&self.served.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves a new catalog from now on: requests already running finish on the old one.
    /// Each client's shortlist keeps the tools that still exist (by name). Returns the new
    /// generation number; announcing the change is the caller's (it is async).
    pub fn replace(&self, shortlister: Shortlister, catalog: Catalog) -> u64 {
        let generation = self.generations.fetch_add(1, Ordering::SeqCst) + 1;
        let new = Arc::new(Served::new(shortlister, catalog, generation));
        crate::telemetry::metrics::served(new.len(), new.apis().len());
        let mut slot = self.served.write().unwrap_or_else(PoisonError::into_inner);
        let old = Arc::clone(&slot);
        self.clients.remap(|pos| {
            let name = old.name_of(pos)?;
            new.lookup(name).map(|(p, _)| p)
        });
        *slot = new;
        generation
    }

    /// Number of endpoints served.
    pub fn endpoint_count(&self) -> usize {
        self.served().len()
    }

    /// The exposure a request of `era` gets, whoever sends it.
    pub fn exposure(&self, era: Era) -> Exposure {
        self.options.expose.for_era(era)
    }

    /// The exposure a request of `era` from the client named `client` gets.
    pub fn exposure_for(&self, era: Era, client: Option<&str>) -> Exposure {
        self.options.expose.for_client(era, client)
    }

    /// Whether some tool list this server gives can change during a client's connection:
    /// the shortlist of a session-era client, or the catalog after a reload. Clients are
    /// told so at initialization (`tools.listChanged`).
    pub fn lists_change(&self) -> bool {
        self.options.expose.may_grow() || self.options.expose == Expose::Catalog
    }

    /// `tools/list` for `key`: the meta-tools, then its exposed endpoints (dynamic), the
    /// catalog's page after `cursor` (catalog) or nothing more (meta), with the cache hints
    /// that are true of that list. `Err` for a cursor this server never gave.
    pub fn list_tools(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<ListToolsResult, String> {
        let Caller {
            key,
            exposure,
            sight,
            ..
        } = caller;
        let exposure = *exposure;
        // Only the catalog comes in pages.
        if cursor.is_some() && exposure != Exposure::Catalog {
            return Err("invalid cursor".into());
        }
        let served = self.served();
        let mut tools = if cursor.is_none() {
            self.meta_tools(exposure)
        } else {
            Vec::new()
        };
        let mut next = None;
        match exposure {
            Exposure::Dynamic => {
                // Most recently exposed last, so a growing list keeps its order.
                for pos in self.clients.exposed(key) {
                    tools.extend(
                        served
                            .endpoint(pos)
                            .filter(|ep| sight.sees(&ep.api))
                            .map(super::tools::endpoint_tool),
                    );
                }
            }
            Exposure::Catalog => {
                let page =
                    served.catalog_page(cursor, self.options.page_size, |a| sight.sees(a))?;
                tools.extend(page.tools);
                next = page.next;
            }
            Exposure::Meta => {}
        }
        let (ttl, scope) = cache_hints(exposure, served.limits_callers());
        let mut result = ListToolsResult::with_all_items(tools)
            .with_ttl_ms(ttl)
            .with_cache_scope(scope);
        result.next_cursor = next;
        Ok(result)
    }

    /// The three meta-tool definitions for an exposure.
    pub fn meta_tools(&self, exposure: Exposure) -> Vec<Tool> {
        meta_tools::definitions(self.k_limit(exposure), exposure == Exposure::Dynamic)
    }

    /// Largest `k` a `find_tools` call may ask for. In dynamic exposure more hits than the
    /// cap could not all be exposed at once.
    fn k_limit(&self, exposure: Exposure) -> usize {
        match exposure {
            Exposure::Dynamic => self.options.max_tools.max(1),
            _ => 50,
        }
    }

    /// `find_tools`: ranks endpoints and, in dynamic exposure, exposes them to `key`.
    /// Without a query it lists the catalog's APIs instead (see [`super::apis`]).
    /// Each answer is timed ([`crate::telemetry::metrics::find_tools`]) and traced.
    pub async fn find(self: &Arc<Self>, caller: &Caller, args: &JsonObject) -> Found {
        use tracing::Instrument;
        let query = args.get("query").and_then(Value::as_str);
        let span = crate::telemetry::trace::find_tools_span(query);
        let started = std::time::Instant::now();
        let found = self.find_now(caller, args).instrument(span.clone()).await;
        crate::telemetry::metrics::find_tools(started.elapsed());
        match found.result.get("tools").and_then(Value::as_array) {
            Some(hits) => {
                span.record("shortlist.hits", hits.len());
            }
            None if found.is_error() => crate::telemetry::trace::mark_error(&span),
            None => {}
        }
        found
    }

    async fn find_now(self: &Arc<Self>, caller: &Caller, args: &JsonObject) -> Found {
        let (exposure, sight) = (caller.exposure, &caller.sight);
        match meta_tools::find_args(args, self.k_limit(exposure)) {
            Ok(FindArgs {
                query: None, api, ..
            }) => {
                let apis = sight.directory(self.served().apis());
                return match apis.listing(api.as_deref()) {
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
        let Ranked {
            args,
            hits,
            served,
            judged,
            ..
        } = match self.rank(args, exposure, sight).await {
            Ok(r) => r,
            Err(msg) => return Found::error(msg),
        };
        // Without `k`, the answer is sized in tokens: as many hits as fit, no scores.
        let sized = args.k.is_none();
        let (mut positions, mut values): (Vec<usize>, Vec<Value>) = hits
            .iter()
            .filter_map(|h| {
                let ep = served.endpoint(h.position)?;
                Some((h.position, discovery::hit(ep, (!sized).then_some(h.score))))
            })
            .unzip();
        if sized {
            let n = discovery::fitting(&values, self.options.answer_tokens);
            positions.truncate(n);
            values.truncate(n);
        }
        let dynamic = exposure == Exposure::Dynamic;
        crate::telemetry::metrics::find_tools_answer(judged.map(|j| j.matched));
        let matched = judged.is_none_or(|j| j.matched);
        // Under the dynamic exposure, hits of a request nothing fits stay off the list
        // (when the judgement is trusted to: `GATES_EXPOSURE`).
        let exposes = dynamic && (matched || !crate::shortlist::matched::GATES_EXPOSURE);
        let change = if exposes {
            // What the answer shows joins the client's list, best first.
            self.clients.expose(&caller.key, &positions)
        } else {
            Change::default()
        };
        let query = args.query.unwrap_or_default();
        Found {
            result: discovery::find_result(
                &query,
                values,
                exposes,
                matched,
                // Hits kept off the list are called through call_tool, as under `meta`.
                discovery::note(if dynamic && !exposes {
                    Exposure::Meta
                } else {
                    exposure
                }),
            ),
            change,
        }
    }

    /// The ranking behind `find_tools` for its arguments, with nothing exposed to anyone:
    /// the one path both `find_tools` and the console's preview take, so the console shows
    /// what a client would get. Ranking embeds the query (CPU work), so it runs off the
    /// async workers. The error is the message a client would read.
    pub async fn rank(
        self: &Arc<Self>,
        args: &JsonObject,
        exposure: Exposure,
        sight: &Sight,
    ) -> Result<Ranked, String> {
        let (args, apis, (hits, judged), served) = self
            .rank_with(args, exposure, sight, |s, q, k, apis| {
                s.search_judged(q, k, apis)
            })
            .await?;
        Ok(Ranked {
            args,
            apis,
            hits,
            judged,
            served,
        })
    }

    /// [`ServerState::rank`] with the explanation of each hit, from one embedding of the
    /// request (the console's Try).
    pub async fn rank_explained(
        self: &Arc<Self>,
        args: &JsonObject,
        exposure: Exposure,
        sight: &Sight,
    ) -> Result<(Ranked, Explained), String> {
        let (args, apis, (hits, explained, judged), served) = self
            .rank_with(args, exposure, sight, |s, q, k, apis| {
                s.search_explained(q, k, apis)
            })
            .await?;
        Ok((
            Ranked {
                args,
                apis,
                hits,
                judged,
                served,
            },
            explained,
        ))
    }

    /// Runs `f` (a search of the shortlister) for `find_tools` arguments, on the blocking
    /// pool and within the ranking slots; the arguments, the API ids they name, what `f`
    /// found and the catalog it searched, or the message `find_tools` gives.
    async fn rank_with<T: Send + 'static>(
        self: &Arc<Self>,
        args: &JsonObject,
        exposure: Exposure,
        sight: &Sight,
        f: impl FnOnce(&Shortlister, &str, usize, Option<&[&str]>) -> Result<T, ShortlistError>
            + Send
            + 'static,
    ) -> Result<(FindArgs, Option<Vec<String>>, T, Arc<Served>), String> {
        let args = meta_tools::find_args(args, self.k_limit(exposure))?;
        let Some(q) = args.query.clone() else {
            return Err("'query' is required to rank endpoints".into());
        };
        let served = self.served();
        // Only the APIs the caller sees are named, listed or ranked.
        let apis = match args.api.as_deref() {
            Some(a) => Some(sight.directory(served.apis()).resolve(a)?),
            None => sight.visible_ids(served.apis()),
        };
        // Without a number, rank as many as could be shown; the answer keeps what fits.
        let k = args.k.unwrap_or(self.k_limit(exposure));
        // Never closed, so acquiring only waits for a free slot.
        let Ok(_permit) = self.ranking.acquire().await else {
            return Err("ranking failed (internal error)".into());
        };
        let named = apis.clone();
        let searched = Arc::clone(&served);
        let ranked = tokio::task::spawn_blocking(move || {
            let apis: Option<Vec<&str>> = apis
                .as_ref()
                .map(|a| a.iter().map(String::as_str).collect());
            f(searched.shortlister(), &q, k, apis.as_deref())
        })
        .await;
        match ranked {
            Ok(Ok(found)) => Ok((args, named, found, served)),
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

    /// The catalog config now served.
    pub fn catalog_config(&self) -> crate::catalog::CatalogConfig {
        self.served().catalog().config.clone()
    }

    /// `describe_tool`: the full definition, or a message naming the closest tool names.
    pub fn describe(&self, caller: &Caller, args: &JsonObject) -> CallToolResult {
        let sight = &caller.sight;
        let name = match meta_tools::describe_args(args) {
            Ok(n) => n,
            Err(msg) => return error_result(msg),
        };
        let served = self.served();
        let Some((pos, ep)) = served.lookup(&name).filter(|(_, ep)| sight.sees(&ep.api)) else {
            return error_result(sight.unknown_tool(&served, &name));
        };
        let exposed = match caller.exposure {
            Exposure::Dynamic => self.clients.exposed(&caller.key).contains(&pos),
            Exposure::Catalog => true,
            Exposure::Meta => false,
        };
        json_result(discovery::describe(ep, served.api_config(&ep.api), exposed))
    }

    /// Calls the endpoint `name` for `key`: the one code path behind both a direct call of
    /// an exposed tool and `call_tool(name, arguments)`, so the two cannot behave
    /// differently. `None` when no endpoint has that name (or none the caller sees).
    /// Each call is recorded in the audit log when the server keeps one: after it is made
    /// by default, before it is made (and not made without the record) under
    /// `audit = "required"`.
    pub async fn call_endpoint(
        &self,
        caller: &Caller,
        name: &str,
        arguments: &JsonObject,
    ) -> Option<CallResult> {
        use crate::store::Event;
        let served = self.served();
        let (pos, ep) = served
            .lookup(name)
            .filter(|(_, ep)| caller.sight.sees(&ep.api))?;
        if caller.exposure == Exposure::Dynamic {
            self.clients.touch(&caller.key, pos);
        }
        let api_cfg = served.api_config(&ep.api);
        let span = crate::telemetry::trace::call_tool_span(&ep.tool_name, &ep.api);
        let store = self.store.get();
        let mut entry = caller.audit(Event::Call, &ep.api).on(&ep.tool_name);
        let required = served
            .catalog()
            .config
            .auth
            .as_ref()
            .is_some_and(|a| a.audit == crate::catalog::config::AuditMode::Required);
        let recorded = if required {
            match super::audit::begin(store, entry.clone()).await {
                Ok(id) => Some(id),
                Err(refusal) => return Some(CallResult::Done(error_result(refusal))),
            }
        } else {
            None
        };
        let clock = std::time::Instant::now();
        let who = crate::invoke::CallFor {
            person: caller.person.as_ref(),
            store,
            client_id: caller.client_id.as_deref(),
            hooks: Some(&caller.hooks),
        };
        let called = self.invoker.call_for(ep, api_cfg, arguments, who);
        let outcome = match tracing::Instrument::instrument(called, span.clone()).await {
            crate::invoke::Called::Done(o) => o,
            crate::invoke::Called::Consent { api, link, state } => {
                tracing::info!(api = %api, sub = caller.sub(), "consent asked for");
                let asked = caller.audit(Event::ConsentAsked, &api).on(&ep.tool_name);
                if let Some(id) = recorded {
                    super::audit::finish(store, id, 0, 0, None).await;
                }
                super::audit::record(store, asked).await;
                return Some(CallResult::Consent { api, link, state });
            }
        };
        tracing::debug!(tool = name, status = ?outcome.status, is_error = outcome.is_error, "tool called");
        span.record("shortlist.is_error", outcome.is_error);
        if outcome.is_error {
            crate::telemetry::trace::mark_error(&span);
        }
        let status = outcome.status.unwrap_or(0);
        let latency = u32::try_from(clock.elapsed().as_millis()).unwrap_or(u32::MAX);
        if let Some(id) = recorded {
            super::audit::finish(store, id, status, latency, None).await;
        }
        match outcome.refusal {
            // Never sent: the record says why, in a fixed word (not the arguments).
            Some(why) => {
                let event = if why == "token" {
                    Event::TokenFailed
                } else {
                    Event::Refused
                };
                let refused = caller
                    .audit(event, &ep.api)
                    .on(&ep.tool_name)
                    .with_detail(serde_json::json!({ "reason": why }));
                super::audit::record(store, refused).await;
            }
            None if recorded.is_none() => {
                entry.status = status;
                entry.latency_ms = latency;
                super::audit::record(store, entry).await;
            }
            None => {}
        }
        Some(CallResult::Done(outcome::to_result(outcome)))
    }

    /// The invoker, whose broker finishes consents and disconnects people.
    pub fn invoker(&self) -> &Invoker {
        &self.invoker
    }

    /// The message for a name no endpoint has (or none the caller sees).
    pub fn unknown_tool(&self, name: &str, sight: &Sight) -> String {
        sight.unknown_tool(&self.served(), name)
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
