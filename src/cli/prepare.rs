//! Bringing a catalog's index up to date before a command ranks with it: what `serve`,
//! `console` and `search` share, so a first `search` on a catalog builds its index as a
//! first `serve` does, with the same progress line, instead of asking for `shortlist index`.
//!
//! When the index records the same config and spec files (paths, sizes, modification
//! times) it is opened without reading a spec; otherwise the catalog is loaded and only the
//! endpoints whose text changed are embedded again.

use super::model::ModelArgs;
use super::CatalogArgs;
use anyhow::Context;
use shortlist::catalog::mcp_tools::Listings;
use shortlist::catalog::{Catalog, CatalogConfig};
use shortlist::index::catalog_index::{self, EndpointIndex};
use shortlist::index::doc_text::DocVariant;
use shortlist::index::{BuildStats, Embedder};
use shortlist::shortlist::tables::Tables;
use std::path::PathBuf;

/// An index that matches its catalog, with what a ranking needs beside it.
pub struct Prepared {
    /// Where the index lives.
    pub data_dir: PathBuf,
    pub index: EndpointIndex,
    /// The ranking tables, when the index was opened already current (else derive them
    /// with `Shortlister::tables_of`).
    pub tables: Option<Tables>,
    pub embedder: Embedder,
    /// The loaded catalog, or only its config's APIs when the index was current.
    pub catalog: Catalog,
    pub stats: BuildStats,
}

/// The line printed on stderr before embedding, so a first run that takes minutes says why.
/// Nothing to embed is the common case (an unchanged catalog) and says nothing.
pub fn report_progress(done: usize, total: usize) {
    if total > 0 && done == 0 {
        eprintln!("shortlist: embedding {total} new or changed endpoint(s)…");
    }
}

/// A step of a command that builds indexes of its own (`eval`): `line` on stderr, as
/// [`report_progress`] prints it, when `message` says endpoints are being embedded; in
/// the log otherwise.
pub fn report_step(line: &str, message: &str) {
    if message.starts_with(shortlist::eval::run::EMBEDDING) {
        eprintln!("shortlist: {line}");
    } else {
        tracing::info!("{line}");
    }
}

/// Opens the index of `catalog_args` (whose config, read once by the caller, is `cfg`) if
/// it is current, else loads the catalog and builds or updates it. With `trust_unchanged`, an index built from exactly these spec files and
/// config is opened without reading a spec, whose problems were reported when it was built;
/// without it (the console, which shows the catalog's problems) the catalog is always loaded.
/// The model loads (about half a second) while the index opens.
pub fn prepare(
    cfg: &CatalogConfig,
    catalog_args: &CatalogArgs,
    model: &ModelArgs,
    variant: DocVariant,
    trust_unchanged: bool,
    listings: Option<&Listings>,
) -> anyhow::Result<Prepared> {
    let data_dir = catalog_args.data_dir(Some(cfg))?;
    let (current, embedder) = std::thread::scope(|s| {
        let loading = s.spawn(|| model.load(Some(cfg)));
        let current = shortlist::catalog::sources_digest(cfg)
            .filter(|_| trust_unchanged)
            .and_then(|d| catalog_index::open_if_current(&data_dir, &d, variant))
            .and_then(|index| {
                Some((
                    shortlist::shortlist::Shortlister::tables_of(&index).ok()?,
                    index,
                ))
            });
        let embedder = loading
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("loading the embedding model failed")));
        (current, embedder)
    });
    let embedder = embedder?;
    let current = current
        .filter(|(_, index)| index.is_compatible(&embedder, catalog_index::text_version(variant)));
    Ok(match current {
        Some((tables, index)) => {
            // No spec is read, but what the config itself gets wrong (a file gone, an id
            // two entries claim) is said at every start.
            let catalog = Catalog::config_only(cfg);
            super::report_problems(&catalog);
            Prepared {
                data_dir,
                stats: BuildStats {
                    reused: index.len(),
                    ..BuildStats::default()
                },
                index,
                tables: Some(tables),
                embedder,
                catalog,
            }
        }
        None => {
            let catalog = super::load_catalog_listed(cfg, listings)?;
            let (index, stats) =
                catalog_index::build(&catalog, &data_dir, &embedder, variant, report_progress)
                    .with_context(|| format!("cannot build the index in {}", data_dir.display()))?;
            Prepared {
                data_dir,
                index,
                tables: None,
                embedder,
                catalog,
                stats,
            }
        }
    })
}
