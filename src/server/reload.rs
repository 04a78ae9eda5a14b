//! Catalog changes reach a running server without a restart.
//!
//! A watch compares a cheap digest of what the catalog is made of (the config, and each
//! spec file's path, size and modification time: an edited spec, a new enriched copy from
//! `enrich` or a console review, an added or removed file) every interval; `SIGHUP` asks
//! for a reload at once. A change is taken once it has held still for one interval, so a
//! spec being written is not indexed half-written. The rebuild runs on the blocking pool
//! (unchanged endpoints reuse their vectors), the server keeps answering from the old
//! catalog meanwhile, and the new one replaces it whole ([`ServerState::replace`]). Clients
//! whose lists may differ are then told: session-era connections on their own channel,
//! 2026-07-28 clients on their `subscriptions/listen` streams.
//!
//! A rebuild that fails (a config that no longer parses, a data folder that cannot be
//! written) is logged and the old catalog stays served; the next change tries again.

use super::exposure::{Era, Exposure};
use super::state::ServerState;
use crate::catalog::Catalog;
use crate::shortlist::Shortlister;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where a server's catalog comes from, as the command line that started it knows it.
pub trait CatalogSource: Send + Sync + 'static {
    /// A digest of everything the catalog is built from, read without parsing a spec.
    fn digest(&self) -> String;
    /// Loads the catalog and brings its index up to date.
    fn build(&self) -> anyhow::Result<(Shortlister, Catalog)>;
}

/// How a server watches its catalog.
#[derive(Debug, Clone, Copy)]
pub struct WatchOptions {
    /// Time between two looks at the files; `None`: only `SIGHUP` reloads.
    pub interval: Option<Duration>,
}

/// Starts the watch. `built` is the digest of the catalog being served.
pub fn spawn(
    state: Arc<ServerState>,
    source: Arc<dyn CatalogSource>,
    built: String,
    opts: WatchOptions,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut hangup = hangup_signal();
        let mut built = built;
        let mut seen = built.clone();
        let every = opts.interval.unwrap_or(Duration::from_secs(3600));
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            let forced = tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick(), if opts.interval.is_some() => false,
                Some(()) = recv(&mut hangup) => true,
            };
            let src = Arc::clone(&source);
            let Ok(now) = tokio::task::spawn_blocking(move || src.digest()).await else {
                continue;
            };
            // Changed since the last build, and still the same as one interval ago.
            let settled = now != built && now == seen;
            seen = now.clone();
            if !(forced || settled) {
                continue;
            }
            if forced {
                tracing::info!("SIGHUP: reloading the catalog");
            }
            built = now;
            reload(&state, &source).await;
        }
    });
}

/// Rebuilds and swaps in the catalog once, then announces it. Returns the new generation,
/// or `None` when the rebuild failed (and the old catalog is still served).
pub async fn reload(state: &Arc<ServerState>, source: &Arc<dyn CatalogSource>) -> Option<u64> {
    let started = Instant::now();
    let src = Arc::clone(source);
    let built = tokio::task::spawn_blocking(move || src.build()).await;
    let (shortlister, catalog) = match built {
        Ok(Ok(parts)) => parts,
        Ok(Err(e)) => {
            crate::telemetry::metrics::reload(false, started.elapsed());
            tracing::error!(error = %format!("{e:#}"), generation = state.served().generation(), "catalog reload failed; the previous catalog is still served");
            eprintln!(
                "shortlist: catalog reload failed, still serving the previous catalog: {e:#}"
            );
            return None;
        }
        Err(e) => {
            crate::telemetry::metrics::reload(false, started.elapsed());
            tracing::error!(error = %e, "catalog reload task failed");
            return None;
        }
    };
    let endpoints = shortlister.len();
    let generation = state.replace(shortlister, catalog);
    crate::telemetry::metrics::reload(true, started.elapsed());
    eprintln!(
        "shortlist: catalog reloaded: {endpoints} endpoint(s) in {:.1} s (generation {generation})",
        started.elapsed().as_secs_f64()
    );
    announce(state).await;
    Some(generation)
}

/// Tells every client whose tool list depends on the catalog that it changed.
pub async fn announce(state: &ServerState) {
    if state.exposure(Era::Sessions) != Exposure::Meta {
        for peer in state.clients().peers() {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!(error = %e, "list_changed not delivered to a connection");
            }
        }
    }
    if state.exposure(Era::Stateless) != Exposure::Meta {
        for sink in state.clients().all_listeners() {
            if let Err(e) = sink.notify_tool_list_changed().await {
                tracing::debug!(error = %e, "list_changed not delivered to a listen stream");
            }
        }
    }
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = Option<()>;

#[cfg(unix)]
fn hangup_signal() -> Hangup {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; reloads come from the file watch only");
            None
        }
    }
}

#[cfg(not(unix))]
fn hangup_signal() -> Hangup {
    None
}

/// The next `SIGHUP`; never, where there is none.
async fn recv(h: &mut Hangup) -> Option<()> {
    #[cfg(unix)]
    if let Some(s) = h {
        return s.recv().await;
    }
    let _ = h;
    std::future::pending().await
}
