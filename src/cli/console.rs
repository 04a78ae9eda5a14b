//! `shortlist console`: the catalog console (health, review of generated text, try a
//! request, the audit log) as a local web app. The same pages are under `/console` of
//! `serve --http`.

use super::model::ModelArgs;
use super::serve::{http_options_from, load_state, spawn_signal_handler};
use super::CatalogArgs;
use anyhow::Context;
use clap::Args;
use shortlist::index::doc_text::DocVariant;
use shortlist::server::{self, Expose, ServerOptions};
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug)]
pub struct ConsoleArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// Address to serve the console on: `127.0.0.1:8088`, `:8088` or `8088` (loopback),
    /// port 0 for any free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8088")]
    pub http: String,
    /// Require `Authorization: Bearer <token>`, the token read from this environment
    /// variable. Needed to listen on a non-loopback address.
    #[arg(long, value_name = "VAR")]
    pub auth_token_env: Option<String>,
    /// Also accept this `Host` name (besides loopback names); repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Which tools the previewed server exposes, as for `serve` (it bounds `k`).
    #[arg(long, value_enum, default_value_t = Expose::Auto)]
    pub expose: Expose,
    /// Most endpoint tools one client sees at once, as for `serve` (it bounds `k`).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=500))]
    pub max_tools: u16,
    /// Seconds between two looks at the catalog's files, as for `serve` (a review's enriched
    /// copy reaches Try without a restart). 0: only SIGHUP reloads.
    #[arg(long, value_name = "SECS", default_value_t = 2)]
    pub watch_secs: u64,
    /// The state store whose audit log the console shows: `postgres://...`, `sqlite:PATH`
    /// or a path. Without it, `state.sqlite3` in the catalog's data folder when that file
    /// exists (a console never creates one); otherwise the audit page says there is none.
    #[arg(long, value_name = "STORE")]
    pub state: Option<String>,
    /// Doc-text variant of the index (as given to `shortlist index`).
    #[arg(long, value_enum, default_value_t = DocVariant::default())]
    pub variant: DocVariant,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub fn run(args: ConsoleArgs) -> anyhow::Result<ExitCode> {
    let opts = http_options_from(
        &args.http,
        args.auth_token_env.as_deref(),
        &args.allowed_hosts,
        None,
    )?;
    let options = ServerOptions {
        expose: args.expose,
        max_tools: usize::from(args.max_tools),
        ..ServerOptions::default()
    };
    let cfg = args.catalog.config()?;
    let store = store_location(&args, &cfg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let store = match store {
        Some(location) => {
            // The audit log and the pins need no key; per-person tokens are never read here.
            let store = runtime
                .block_on(shortlist::store::Store::open(&location, None))
                .with_context(|| "cannot open the state store (--state)")?;
            eprintln!("shortlist: state store: {}", store.backend().describe());
            Some(store)
        }
        None => {
            eprintln!(
                "shortlist: no state store (no --state, and no state.sqlite3 in the data \
                 folder): the audit page will say so"
            );
            None
        }
    };
    // The console's "Try a request" calls tools too, MCP servers' included.
    let upstreams = shortlist::upstream::Upstreams::new(&cfg);
    super::serve::start_upstreams(&runtime, &cfg, &upstreams, store.as_ref());
    let upstream = cfg.upstream.clone().unwrap_or_default();
    let (state, digest) = load_state(
        &cfg,
        super::serve::Outbound {
            upstream: &upstream,
            upstreams: &upstreams,
        },
        &args.catalog,
        &args.model,
        args.variant,
        options,
        false,
    )?;
    let source = super::serve::Source {
        catalog: args.catalog.clone(),
        model: args.model.clone(),
        variant: args.variant,
        upstreams: std::sync::Arc::clone(&upstreams),
    };
    runtime.block_on(async move {
        if let Some(store) = store {
            state.set_store(store);
        }
        let shutdown = CancellationToken::new();
        spawn_signal_handler(shutdown.clone());
        let catalog = args.catalog.clone();
        super::serve::spawn_relist(
            &upstreams,
            Box::new(move || catalog.config_quiet().ok()),
            &shutdown,
        );
        super::serve::spawn_watch(&state, source, digest, args.watch_secs, &shutdown);
        let served = server::http::serve_console(state, opts, shutdown).await;
        upstreams.stop().await;
        served
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The store `--state` names, else the default file when it exists: a console that only
/// looks must not leave an empty store behind where `serve` would later open its own.
fn store_location(
    args: &ConsoleArgs,
    cfg: &shortlist::catalog::CatalogConfig,
) -> anyhow::Result<Option<shortlist::store::Location>> {
    use shortlist::store::Location;
    let data_dir = args.catalog.data_dir(Some(cfg))?;
    let location = Location::parse(args.state.as_deref(), &data_dir);
    let given = args.state.as_deref().is_some_and(|s| !s.trim().is_empty());
    Ok(match location {
        Location::Sqlite(p) if !given && !p.is_file() => None,
        l => Some(l),
    })
}
