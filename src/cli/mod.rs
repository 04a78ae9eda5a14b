//! Subcommands and what they share: catalog arguments, the data folder, logging.

pub mod call;
pub mod client_config;
pub mod console;
pub mod doc_texts;
pub mod enrich;
pub mod eval;
pub mod huge_pages;
pub mod index;
pub mod install;
pub mod log_fields;
pub mod logging;
pub mod model;
pub mod prepare;
pub mod search;
pub mod serve;
pub mod take_over;

use clap::Args;
use shortlist::catalog::client_file;
use shortlist::catalog::mcp_tools::Listings;
use shortlist::catalog::{Catalog, CatalogConfig};
use std::path::PathBuf;
use std::process::ExitCode;

/// Which catalog to use: a config file or plain spec paths.
#[derive(Args, Debug, Clone)]
pub struct CatalogArgs {
    /// Catalog config file (TOML) listing the APIs.
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Spec files or folders of specs (instead of, or in addition to, --config).
    #[arg(value_name = "SPEC")]
    pub paths: Vec<PathBuf>,
    /// Where the index lives [default: the config's data_dir, else a folder for this
    /// catalog in the per-user cache folder, e.g. ~/.cache/shortlist/catalog-3f2a…]
    #[arg(long, value_name = "DIR", env = "SHORTLIST_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

impl CatalogArgs {
    /// The catalog config these arguments describe.
    /// A client's own config file (`mcpServers`), given as a path or as `--config`, adds
    /// its servers as entries; what it says of them is printed on stderr.
    pub fn config(&self) -> anyhow::Result<CatalogConfig> {
        self.config_with(true)
    }

    /// [`CatalogArgs::config`] printing nothing: what a running server's watch reads
    /// every few seconds.
    pub fn config_quiet(&self) -> anyhow::Result<CatalogConfig> {
        self.config_with(false)
    }

    fn config_with(&self, report: bool) -> anyhow::Result<CatalogConfig> {
        let mut cfg = match &self.config {
            Some(p) if client_file::is_client_file(p) => CatalogConfig::default(),
            Some(p) => CatalogConfig::load(p)?,
            None => CatalogConfig::default(),
        };
        // A TOML `--config` is read above; a client file given as `--config` is a path too.
        let paths: Vec<PathBuf> = self
            .config
            .iter()
            .filter(|p| client_file::is_client_file(p))
            .chain(&self.paths)
            .cloned()
            .collect();
        let imported = client_file::entries_of(&paths, &|k| std::env::var(k).ok())?;
        if report {
            for line in imported.warnings.iter().chain(&imported.errors) {
                eprintln!("{line}");
            }
        }
        cfg.apis.extend(imported.entries);
        if cfg.apis.is_empty() {
            anyhow::bail!("no catalog given: pass --config FILE or spec paths");
        }
        // MCP servers' enriched texts live in the data folder (`catalog::mcp_texts`): the
        // loader is told where it is.
        if cfg.apis.iter().any(|a| a.mcp.is_some()) {
            cfg.data_dir = Some(self.data_dir(Some(&cfg))?);
        }
        Ok(cfg)
    }

    /// The data folder: `--data-dir` (or `$SHORTLIST_DATA_DIR`), else the config's
    /// `data_dir`, else this catalog's folder in the per-user cache, keyed by the config
    /// file and spec paths, so the same catalog finds its index from any working folder.
    pub fn data_dir(&self, cfg: Option<&CatalogConfig>) -> anyhow::Result<PathBuf> {
        if let Some(d) = self
            .data_dir
            .clone()
            .or_else(|| cfg.and_then(|c| c.data_dir.clone()))
        {
            return Ok(d);
        }
        let sources: Vec<PathBuf> = self.config.iter().chain(&self.paths).cloned().collect();
        if sources.is_empty() {
            anyhow::bail!("no catalog given: pass --config FILE, spec paths or --data-dir DIR");
        }
        let cache = shortlist::places::user_cache_dir().ok_or_else(|| {
            anyhow::anyhow!("no per-user cache folder (HOME is not set): pass --data-dir DIR")
        })?;
        Ok(shortlist::places::catalog_dir(&cache, &sources))
    }

    /// Loads the catalog, printing one line per problem on stderr.
    pub fn load(&self) -> anyhow::Result<Catalog> {
        load_catalog(&self.config()?)
    }
}

/// Loads the catalog `cfg` describes, printing one line per problem on stderr; an error
/// when no endpoint is left.
pub fn load_catalog(cfg: &CatalogConfig) -> anyhow::Result<Catalog> {
    load_catalog_listed(cfg, None)
}

/// [`load_catalog`] with the MCP servers' tools from `listings` (a running server's), or,
/// when `None`, listed now by starting each server once.
pub fn load_catalog_listed(
    cfg: &CatalogConfig,
    listings: Option<&Listings>,
) -> anyhow::Result<Catalog> {
    let catalog = match listings {
        Some(l) => Catalog::load_listed(cfg, l),
        None => Catalog::load_listed(cfg, &shortlist::upstream::list_once(cfg)),
    };
    report_problems(&catalog);
    // A running server's MCP servers may serve tools later (a server that starts late, a
    // definition approved in review): until then an empty catalog is served, not refused.
    let may_fill = listings.is_some() && cfg.apis.iter().any(|a| a.mcp.is_some());
    if catalog.endpoints.is_empty() && !may_fill {
        anyhow::bail!("the catalog holds no usable endpoint");
    }
    Ok(catalog)
}

/// Problems go to stderr, one line each; a summary names the skipped specs.
pub fn report_problems(catalog: &Catalog) {
    for p in &catalog.problems {
        eprintln!("{p}");
    }
    let skipped: Vec<String> = catalog
        .errors()
        .map(|p| p.file.display().to_string())
        .collect();
    if !skipped.is_empty() {
        eprintln!("skipped {} spec(s): {}", skipped.len(), skipped.join(", "));
    }
}

/// `shortlist check`: load and report, nothing else.
pub fn check(args: CatalogArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.config()?;
    let catalog = Catalog::load_listed(&cfg, &shortlist::upstream::list_once(&cfg));
    report_problems(&catalog);
    println!(
        "{} API(s), {} endpoint(s), {} spec(s) skipped, {} warning(s)",
        catalog.apis.len(),
        catalog.endpoints.len(),
        catalog.errors().count(),
        catalog.warnings().count()
    );
    Ok(if catalog.errors().next().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
