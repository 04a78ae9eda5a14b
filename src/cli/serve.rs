//! `shortlist serve`: the MCP server, over stdio (default) or HTTP.
//!
//! Startup brings the index up to date with the catalog: when the index records the same
//! config and spec files (paths, sizes, modification times) it is opened without reading a
//! spec; otherwise the catalog is loaded and only the endpoints whose text changed are
//! embedded again. Everything is reported on stderr; in stdio mode stdout
//! carries nothing but the protocol.

use super::model::ModelArgs;
use super::CatalogArgs;
use anyhow::Context;
use clap::Args;
use shortlist::catalog::mcp_tools::Listings;
use shortlist::index::doc_text::DocVariant;
use shortlist::index::BuildStats;
use shortlist::invoke::Invoker;
use shortlist::server::{self, Expose, HttpOptions, ServerOptions, ServerState};
use shortlist::shortlist::{Options, Shortlister};
use shortlist::upstream::Upstreams;
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// Serve streamable HTTP at /mcp (and legacy SSE at /sse) on this address instead of
    /// stdio: `127.0.0.1:8080`, `:8080` or `8080` (loopback), port 0 for any free port.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Which tools clients see besides find_tools, describe_tool and call_tool: `auto`
    /// (what find_tools shortlists for clients with sessions, up to 2025-11-25; nothing
    /// more for 2026-07-28), `meta` (nothing more), `dynamic` (as auto) or `catalog` (every
    /// endpoint, paginated, for hosts that search tools themselves).
    #[arg(long, value_enum, default_value_t = Expose::Auto)]
    pub expose: Expose,
    /// Most endpoint tools one client sees at once (dynamic); the least recently used leave.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=500))]
    pub max_tools: u16,
    /// Require `Authorization: Bearer <token>` on HTTP, with the token read from this
    /// environment variable. Needed to listen on a non-loopback address.
    #[arg(long, value_name = "VAR")]
    pub auth_token_env: Option<String>,
    /// Also accept this `Host` name over HTTP (besides loopback names); repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Minutes without a request after which a client's exposed tools are forgotten.
    #[arg(long, value_name = "MINUTES", default_value_t = 30)]
    pub idle_minutes: u64,
    /// The same expiry in seconds, overriding `--idle-minutes` (load tests, short-lived
    /// deployments): idle clients are swept every quarter of it, at least once a second.
    #[arg(long, value_name = "SECS", conflicts_with = "idle_minutes", value_parser = clap::value_parser!(u64).range(1..))]
    pub client_idle_secs: Option<u64>,
    /// Where state that outlives a request lives (the audit log of upstream calls):
    /// `postgres://...` for replicas, `sqlite:PATH` or a path. With --http it defaults to
    /// `state.sqlite3` in the catalog's data folder; over stdio nothing is kept without it.
    /// Read from `SHORTLIST_STATE` when not given, so a database password need not be on
    /// the command line.
    #[arg(
        long,
        value_name = "STORE",
        env = "SHORTLIST_STATE",
        hide_env_values = true
    )]
    pub state: Option<String>,
    /// Endpoint tools per `tools/list` page in catalog exposure.
    #[arg(long, value_name = "N", default_value_t = 250, value_parser = clap::value_parser!(u16).range(1..))]
    pub page_size: u16,
    /// Tokens (cl100k) the hits of a find_tools answer may take when the call gives no `k`.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = clap::value_parser!(u16).range(50..))]
    pub answer_tokens: u16,
    /// Seconds between two looks at the catalog's files: a changed spec, config or enriched
    /// copy is indexed in the background and served without a restart. 0: only SIGHUP
    /// reloads.
    #[arg(long, value_name = "SECS", default_value_t = 2)]
    pub watch_secs: u64,
    /// Seconds to keep serving HTTP after SIGTERM or Ctrl-C, with `/readyz` answering 503,
    /// so that a load balancer or Kubernetes stops sending requests before the listener
    /// closes (replicas: more than the balancer's health-check interval times the failures
    /// it waits for).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub drain_secs: u64,
    /// A load balancer whose forwarded client address is believed (address or block,
    /// `10.0.0.0/8`); repeatable. The consent pages are limited per client: behind a
    /// balancer every request comes from it, so name it here. A forwarded header from any
    /// other peer is ignored.
    #[arg(long = "trusted-proxy", value_name = "ADDR/CIDR")]
    pub trusted_proxies: Vec<String>,
    /// The header a trusted balancer puts the client's address in: `X-Forwarded-For`
    /// (the right-most address not of a trusted balancer counts) or `Forwarded`.
    #[arg(long, value_name = "HEADER", default_value = "X-Forwarded-For")]
    pub forwarded_header: String,
    /// Doc-text variant of the index (as given to `shortlist index`).
    #[arg(long, value_enum, default_value_t = DocVariant::default())]
    pub variant: DocVariant,
    /// Send calls to the APIs through this egress proxy, `http://[user:password@]host:port`
    /// (overrides `[upstream]` in the catalog config). `HTTP_PROXY` and its kin are used only
    /// when the config says `proxy_env = true`. A password is better kept in the config
    /// file: other local users can read a command line.
    #[arg(long, value_name = "URL")]
    pub upstream_proxy: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // The config is read once here and handed down; a reload reads it once more.
    let cfg = args.catalog.config()?;
    // The flag overrides the config's `[upstream]` without writing into the config, whose
    // digest says whether the catalog changed.
    let upstream = match &args.upstream_proxy {
        Some(proxy) => shortlist::catalog::config::UpstreamConfig {
            proxy: Some(proxy.clone()),
            proxy_env: false,
        },
        None => cfg.upstream.clone().unwrap_or_default(),
    };
    // Validate the transport options before the slow part, so a typo fails at once.
    let http = match &args.http {
        Some(a) => Some(http_options(&args, &cfg, a)?),
        None => None,
    };
    // Metrics are read at /metrics, so recorded only when serving HTTP.
    if http.is_some() {
        shortlist::telemetry::metrics::install()?;
    }
    let options = ServerOptions {
        expose: args.expose,
        max_tools: usize::from(args.max_tools),
        idle_expiry: Duration::from_secs(
            args.client_idle_secs
                .unwrap_or(args.idle_minutes.max(1) * 60),
        ),
        page_size: usize::from(args.page_size),
        answer_tokens: usize::from(args.answer_tokens),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let store = (http.is_some() || args.state.is_some())
        .then(|| -> anyhow::Result<_> {
            let data_dir = args.catalog.data_dir(Some(&cfg))?;
            let location = shortlist::store::Location::parse(args.state.as_deref(), &data_dir);
            let sealer = shortlist::store::Sealer::from_env()?;
            let store = runtime
                .block_on(shortlist::store::Store::open(&location, sealer))
                .with_context(|| "cannot open the state store (--state)")?;
            eprintln!("shortlist: state store: {}", store.backend().describe());
            Ok(store)
        })
        .transpose()?;
    // The MCP servers start first, in parallel, and stay up: their connections live on
    // this runtime, shared by every call.
    let egress = shortlist::invoke::transport::Egress::from_config(&upstream)
        .context("the [upstream] egress cannot be used")?;
    let upstreams = Upstreams::with_egress(&cfg, egress);
    start_upstreams(&runtime, &cfg, &upstreams, store.as_ref());
    let (state, digest) = load_state(
        &cfg,
        Outbound {
            upstream: &upstream,
            upstreams: &upstreams,
        },
        &args.catalog,
        &args.model,
        args.variant,
        options,
        true,
    )?;
    let source = Source {
        catalog: args.catalog.clone(),
        model: args.model.clone(),
        variant: args.variant,
        upstreams: Arc::clone(&upstreams),
    };
    runtime.block_on(async move {
        if let Some(store) = store {
            // The state was just built: this is its first and only store.
            state.set_store(store);
        }
        let shutdown = CancellationToken::new();
        spawn_signal_handler(shutdown.clone());
        let catalog = args.catalog.clone();
        spawn_relist(
            &upstreams,
            Box::new(move || catalog.config_quiet().ok()),
            &shutdown,
        );
        spawn_watch(&state, source, digest, args.watch_secs, &shutdown);
        let served = match http {
            Some(opts) => server::http::serve(state, opts, shutdown).await,
            None => server::serve_stdio(state, shutdown).await,
        };
        // No child outlives the server.
        upstreams.stop().await;
        served
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Starts the MCP servers and lists their tools, their definitions pinned in `store` when
/// the server keeps one (only approved ones are served).
pub fn start_upstreams(
    runtime: &tokio::runtime::Runtime,
    cfg: &shortlist::catalog::CatalogConfig,
    upstreams: &Arc<Upstreams>,
    store: Option<&shortlist::store::Store>,
) {
    // Pinned even with no MCP server yet: one added to the config later is reviewed too.
    if let Some(store) = store {
        upstreams.set_pins(shortlist::upstream::Pins::new(
            cfg,
            Arc::clone(store.backend()),
        ));
    }
    if upstreams.is_empty() {
        return;
    }
    runtime.block_on(async {
        upstreams.list_all().await;
        upstreams.sync_pins().await;
    });
}

/// How often, in ticks of the relist loop, the pins' approvals are read back.
const PIN_TICKS: u64 = 3;

/// How often, in ticks of the relist loop, the config's MCP entries are read again.
const CONFIG_TICKS: u64 = 2;

/// Reads the catalog config again (`None` while it cannot be read: nothing changes then).
pub type ConfigReader = Box<dyn Fn() -> Option<shortlist::catalog::CatalogConfig> + Send + Sync>;

/// Lists again, once a second at most, the MCP servers that said their tools changed; the
/// watch then sees the catalog's digest change and rebuilds it from the new listings. A
/// server announcing changes in a loop costs one listing a second, nothing more. Pinned
/// definitions are recorded after each new listing and their approvals read back every
/// few seconds, so a reviewer's decision on any replica reaches every other. The config
/// is read again every few seconds: an MCP entry added starts its server, one removed or
/// changed stops it ([`Upstreams::reconcile`]).
pub fn spawn_relist(
    upstreams: &Arc<Upstreams>,
    config: ConfigReader,
    shutdown: &CancellationToken,
) {
    let upstreams = Arc::clone(upstreams);
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut n: u64 = 0;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {
                    n += 1;
                    if n % CONFIG_TICKS == 0 {
                        // Off the async workers: reading the config reads files.
                        let read = tokio::task::block_in_place(&config);
                        if let Some(cfg) = read {
                            upstreams.reconcile(&cfg).await;
                        }
                    }
                    if upstreams.is_empty() {
                        continue;
                    }
                    let relisted = upstreams.relist_changed().await;
                    if relisted || n % PIN_TICKS == 0 {
                        upstreams.sync_pins().await;
                    }
                }
            }
        }
    });
}

/// The catalog of a running server, as its command line names it: what a reload reads.
pub struct Source {
    pub catalog: super::CatalogArgs,
    pub model: ModelArgs,
    pub variant: DocVariant,
    /// The MCP servers, whose latest listings a rebuild reads.
    pub upstreams: Arc<Upstreams>,
}

impl server::CatalogSource for Source {
    fn digest(&self) -> String {
        let changes = self.upstreams.changes();
        match self.catalog.config_quiet() {
            Ok(cfg) => format!("{}:{changes}", shortlist::catalog::watch_digest(&cfg)),
            // Changes when the error does (the config is fixed, or broken another way).
            Err(e) => format!("error:{e:#}"),
        }
    }

    fn build(&self) -> anyhow::Result<(Shortlister, shortlist::catalog::Catalog)> {
        // A model of its own: the served one keeps answering queries meanwhile. Problems
        // are reported as at start; a catalog left with no endpoint is an error, so the one
        // served stays.
        let cfg = self.catalog.config_quiet()?;
        let listings = self.upstreams.listings();
        let (shortlister, catalog, stats) = ranked_catalog(
            &cfg,
            &self.catalog,
            &self.model,
            self.variant,
            true,
            Some(&listings),
        )?;
        tracing::info!(
            embedded = stats.embedded,
            reused = stats.reused,
            "catalog rebuilt"
        );
        Ok((shortlister, catalog))
    }
}

/// The catalog's index brought up to date ([`super::prepare::prepare`]) and ranked with the
/// default options: the shortlister, the catalog and what building it took.
fn ranked_catalog(
    cfg: &shortlist::catalog::CatalogConfig,
    catalog_args: &super::CatalogArgs,
    model: &ModelArgs,
    variant: DocVariant,
    trust_unchanged: bool,
    listings: Option<&Listings>,
) -> anyhow::Result<(Shortlister, shortlist::catalog::Catalog, BuildStats)> {
    let super::prepare::Prepared {
        data_dir,
        index,
        tables,
        embedder,
        catalog,
        stats,
    } = super::prepare::prepare(cfg, catalog_args, model, variant, trust_unchanged, listings)?;
    let tables = match tables {
        Some(t) => t,
        None => Shortlister::tables_of(&index)
            .with_context(|| format!("cannot open the index in {}", data_dir.display()))?,
    };
    let shortlister = Shortlister::from_parts(index, tables, embedder, Options::default());
    Ok((shortlister, catalog, stats))
}

/// Starts the catalog watch of a running server (`secs` 0: SIGHUP only).
pub fn spawn_watch(
    state: &Arc<ServerState>,
    source: Source,
    digest: String,
    secs: u64,
    shutdown: &CancellationToken,
) {
    let opts = server::WatchOptions {
        interval: (secs > 0).then(|| Duration::from_secs(secs)),
    };
    server::reload::spawn(
        Arc::clone(state),
        Arc::new(source),
        digest,
        opts,
        shutdown.clone(),
    );
}

/// Where calls go out: APIs through `upstream` (the config's `[upstream]`, or
/// `--upstream-proxy`), MCP servers' tools to `upstreams`.
#[derive(Clone, Copy)]
pub struct Outbound<'a> {
    pub upstream: &'a shortlist::catalog::config::UpstreamConfig,
    pub upstreams: &'a Arc<Upstreams>,
}

/// Brings the catalog's index up to date and builds the server state: what `serve` and
/// `console` both start from, with the watch digest of the catalog it was built from; API
/// calls leave as `upstream` says (the config's `[upstream]`, or `--upstream-proxy`).
/// With `trust_unchanged`, an index built from exactly these
/// spec files and config (same paths, sizes, modification times) is opened without reading
/// a spec, whose problems were reported when it was built; the console, which shows the
/// catalog's APIs and problems, always loads the catalog.
pub fn load_state(
    cfg: &shortlist::catalog::CatalogConfig,
    outbound: Outbound<'_>,
    catalog_args: &super::CatalogArgs,
    model: &ModelArgs,
    variant: DocVariant,
    options: ServerOptions,
    trust_unchanged: bool,
) -> anyhow::Result<(Arc<ServerState>, String)> {
    let Outbound {
        upstream,
        upstreams,
    } = outbound;
    let started = Instant::now();
    // Before the slow part, so a proxy that cannot be used fails at once.
    let invoker = Invoker::new()
        .context("cannot create the HTTP client")?
        .with_upstream(upstream)?
        .with_server(server_side(cfg.auth.as_ref())?)
        .with_upstreams(Arc::clone(upstreams));
    // Taken before any spec is read, so an edit made while loading is seen by the watch.
    let digest = format!(
        "{}:{}",
        shortlist::catalog::watch_digest(cfg),
        upstreams.changes()
    );
    let listings = upstreams.listings();
    let (shortlister, catalog, stats) = ranked_catalog(
        cfg,
        catalog_args,
        model,
        variant,
        trust_unchanged,
        Some(&listings),
    )?;
    eprintln!(
        "shortlist: {} endpoint(s) of {} API(s) ready in {:.1} s ({} embedded, {} reused)",
        shortlister.len(),
        shortlister.tables().apis.len(),
        started.elapsed().as_secs_f64(),
        stats.embedded,
        stats.reused,
    );
    let state = Arc::new(ServerState::new(shortlister, catalog, invoker, options));
    Ok((state, digest))
}

/// What the credential broker needs to know of the server: its public URL (consent pages,
/// the OAuth callback), whether it signs browsers in, and its issuer (whose token endpoint
/// alone receives people's access tokens).
fn server_side(
    auth: Option<&shortlist::catalog::config::ResourceServerConfig>,
) -> anyhow::Result<shortlist::credentials::ServerSide> {
    let Some(auth) = auth else {
        return Ok(shortlist::credentials::ServerSide::default());
    };
    Ok(shortlist::credentials::ServerSide {
        public_url: shortlist::server::browser::PublicUrl::of(auth).map(|p| p.origin),
        signin: auth.signin.is_some(),
        issuer: Some(Arc::new(shortlist::auth::discovery::Discovery::new(
            &auth.issuer,
        )?)),
    })
}

/// HTTP options from the command line; the token is read from its variable here and
/// never printed.
fn http_options(
    args: &ServeArgs,
    cfg: &shortlist::catalog::CatalogConfig,
    addr: &str,
) -> anyhow::Result<HttpOptions> {
    let oauth = match &cfg.auth {
        Some(auth) => {
            check_public_url(auth)?;
            Some(Arc::new(shortlist::auth::Verifier::new(auth)?))
        }
        None => None,
    };
    let mut opts = http_options_from(
        addr,
        args.auth_token_env.as_deref(),
        &args.allowed_hosts,
        oauth,
    )?;
    opts.drain = Duration::from_secs(args.drain_secs);
    opts.client_addr =
        server::client_addr::ClientAddr::new(&args.trusted_proxies, &args.forwarded_header)
            .map_err(|e| anyhow::anyhow!(e))?;
    Ok(opts)
}

/// `[auth] public_url` must be an absolute URL; one in plain http off loopback is allowed
/// (a test deployment) but said, since browser cookies then travel unprotected.
fn check_public_url(auth: &shortlist::catalog::config::ResourceServerConfig) -> anyhow::Result<()> {
    let Some(raw) = &auth.public_url else {
        return Ok(());
    };
    let url = url::Url::parse(raw)
        .map_err(|e| anyhow::anyhow!("[auth] public_url '{raw}' is not an absolute URL: {e}"))?;
    if shortlist::auth::discovery::secure_url(raw).is_err() {
        eprintln!(
            "shortlist: warning: [auth] public_url {} is plain http off loopback: consent cookies are sent without Secure; use the https URL people's browsers reach",
            url.origin().ascii_serialization()
        );
    }
    Ok(())
}

/// [`http_options`] from its parts, for every command that serves HTTP.
pub fn http_options_from(
    addr: &str,
    auth_token_env: Option<&str>,
    allowed_hosts: &[String],
    oauth: Option<Arc<shortlist::auth::Verifier>>,
) -> anyhow::Result<HttpOptions> {
    let auth_token = match auth_token_env {
        Some(var) => {
            let t = std::env::var(var).unwrap_or_default();
            if t.trim().is_empty() {
                anyhow::bail!("--auth-token-env {var}: the variable is not set or empty");
            }
            Some(t.trim().to_string())
        }
        None => None,
    };
    let opts = HttpOptions {
        addr: parse_addr(addr)?,
        auth_token,
        allowed_hosts: allowed_hosts.to_vec(),
        oauth,
        drain: Duration::ZERO,
        client_addr: Default::default(),
    };
    opts.check()?;
    Ok(opts)
}

/// `8080` and `:8080` mean loopback; anything else is `host:port`.
fn parse_addr(s: &str) -> anyhow::Result<SocketAddr> {
    let s = s.trim();
    let full = if s.parse::<u16>().is_ok() {
        format!("127.0.0.1:{s}")
    } else if let Some(port) = s.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else {
        s.to_string()
    };
    full.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("--http {s}: expected an address such as 127.0.0.1:8080"))
}

/// Ctrl-C or SIGTERM ends the server cleanly: open streams close, sessions end.
pub fn spawn_signal_handler(shutdown: CancellationToken) {
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutting down");
        shutdown.cancel();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            parse_addr("127.0.0.1:9").unwrap().to_string(),
            "127.0.0.1:9"
        );
        assert!(parse_addr("nonsense").is_err());
    }
}
