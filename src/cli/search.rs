//! `shortlist search`: rank a catalog's endpoints for a query.
//!
//! Given the catalog (a config or spec paths), the index is brought up to date first, as
//! `serve` does: built on the first search, opened at once while the specs are unchanged.
//! Given only `--data-dir`, the index found there is searched as it is.

use super::model::ModelArgs;
use super::prepare::prepare;
use super::CatalogArgs;
use anyhow::Context;
use clap::Args;
use shortlist::index::catalog_index::EndpointIndex;
use shortlist::index::doc_text::DocVariant;
use shortlist::index::Embedder;
use shortlist::shortlist::tables::Tables;
use shortlist::shortlist::{Options, Retrieval, Shortlister};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What the user wants to do.
    pub query: String,
    /// How many endpoints to return.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only endpoints of this API id.
    #[arg(long)]
    pub api: Option<String>,
    /// Which retrievers rank the endpoints.
    #[arg(long, value_enum, default_value_t = Retrieval::default())]
    pub retrieval: Retrieval,
    /// The catalog to search (as given to `shortlist index`); its index is built or
    /// updated first when it is missing or out of date.
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// Doc-text variant of the index (as given to `shortlist index`), when a catalog is
    /// given.
    #[arg(long, value_enum, default_value_t = DocVariant::default())]
    pub variant: DocVariant,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub fn run(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let (index, tables, embedder) = if args.catalog.config.is_some()
        || !args.catalog.paths.is_empty()
    {
        let started = std::time::Instant::now();
        let cfg = args.catalog.config()?;
        let p = prepare(&cfg, &args.catalog, &args.model, args.variant, true, None)?;
        let tables = match p.tables {
            Some(t) => t,
            None => Shortlister::tables_of(&p.index)
                .with_context(|| format!("cannot open the index in {}", p.data_dir.display()))?,
        };
        // A search on an unchanged catalog prints only its results.
        if p.stats.embedded + p.stats.removed > 0 {
            eprintln!(
                "shortlist: {} endpoint(s) of {} API(s) ready in {:.1} s ({} embedded, {} reused)",
                p.index.len(),
                tables.apis.len(),
                started.elapsed().as_secs_f64(),
                p.stats.embedded,
                p.stats.reused,
            );
        }
        (p.index, tables, p.embedder)
    } else {
        open_existing(&args)?
    };
    let options = Options {
        retrieval: args.retrieval,
        ..Options::default()
    };
    let shortlister = Shortlister::from_parts(index, tables, embedder, options);
    let started = std::time::Instant::now();
    let apis: Option<Vec<&str>> = args.api.as_deref().map(|a| vec![a]);
    let (hits, judged) = shortlister.search_judged(&args.query, args.k, apis.as_deref())?;
    tracing::info!(ms = started.elapsed().as_millis() as u64, "searched");
    // As find_tools says it: nothing judged (no cosines, or no hits) is not a "no match"
    // unless there are no hits at all.
    let matched = !hits.is_empty() && judged.is_none_or(|j| j.matched);
    if args.json {
        let out: Vec<serde_json::Value> = hits
            .iter()
            .enumerate()
            .filter_map(|(rank, h)| {
                let ep = shortlister.endpoint(h.position)?;
                Some(serde_json::json!({
                    "rank": rank + 1, "score": h.score, "tool": ep.tool_name, "api": ep.api,
                    "method": ep.method.as_str(), "path": ep.path, "summary": ep.one_line(),
                }))
            })
            .collect();
        let mut answer = serde_json::json!({
            "query": args.query,
            "matched": matched,
            "hits": out,
        });
        if let Some(j) = judged {
            answer["no_match_probability"] = serde_json::json!(j.no_match);
            answer["evidence"] = serde_json::to_value(j.evidence)?;
        }
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        for (rank, h) in hits.iter().enumerate() {
            let Some(ep) = shortlister.endpoint(h.position) else {
                continue;
            };
            println!(
                "{:>3}  {:.4}  {:<40}  {:<6} {:<40}  {}",
                rank + 1,
                h.score,
                ep.tool_name,
                ep.method.as_str(),
                ep.path,
                ep.one_line()
            );
        }
        if !hits.is_empty() && !matched {
            eprintln!(
                "shortlist: nothing in the catalog seems to fit this request; these are only the closest endpoints"
            );
        }
    }
    Ok(if hits.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The index in `--data-dir` as it is (no catalog to compare it with), its ranking tables
/// and the model, which loads (about half a second) while the index opens.
fn open_existing(args: &SearchArgs) -> anyhow::Result<(EndpointIndex, Tables, Embedder)> {
    let data_dir = args.catalog.data_dir(None)?;
    let (opened, embedder) = std::thread::scope(|s| {
        let model = s.spawn(|| args.model.load(None));
        let opened = open_index(&data_dir);
        let embedder = model
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("loading the embedding model failed")));
        (opened, embedder)
    });
    let (index, tables) = opened?;
    let embedder = embedder?;
    if !index.is_compatible(&embedder, index.manifest().doc_text_version) {
        anyhow::bail!(
            "the index in {} was built with another embedding model; run `shortlist index` again",
            data_dir.display()
        );
    }
    Ok((index, tables, embedder))
}

/// The index in `data_dir` and its ranking tables.
fn open_index(data_dir: &std::path::Path) -> anyhow::Result<(EndpointIndex, Tables)> {
    let started = std::time::Instant::now();
    let index = EndpointIndex::open(data_dir)
        .with_context(|| format!("cannot open the index in {}", data_dir.display()))?
        .with_context(|| {
            format!(
                "no index in {}: give the catalog (--config FILE or spec paths) to build it",
                data_dir.display()
            )
        })?;
    let tables = Shortlister::tables_of(&index)
        .with_context(|| format!("cannot open the index in {}", data_dir.display()))?;
    tracing::info!(
        ms = started.elapsed().as_millis() as u64,
        endpoints = index.len(),
        "index opened"
    );
    Ok((index, tables))
}
