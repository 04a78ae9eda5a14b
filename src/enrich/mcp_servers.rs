//! MCP servers in an enrichment run: each listed server's tools written out as a document
//! the pipeline enriches like a spec (`catalog::mcp_texts`), in the data folder.

use crate::catalog::mcp_tools::{self, Listings, Serving};
use crate::catalog::{mcp_texts, CatalogConfig, Problem, SpecSource};
use std::path::Path;

/// Writes the document of every MCP server of `config` that `listings` holds into
/// `data_dir`, and gives them as sources of the run; a server not listed, or whose document
/// cannot be written, is a problem and the rest go on.
pub fn documents(
    config: &CatalogConfig,
    listings: &Listings,
    data_dir: &Path,
    problems: &mut Vec<Problem>,
) -> Vec<SpecSource> {
    let mut out = Vec::new();
    for (i, entry) in config.apis.iter().enumerate() {
        let (Some(source), Some(id)) = (&entry.mcp, entry.id.as_deref()) else {
            continue;
        };
        let file = mcp_tools::problem_file(id);
        let listing = match listings.get(&mcp_tools::listing_key(id, source)) {
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                problems.push(Problem::error(&file, None, format!("not enriched: {e}")));
                continue;
            }
            None => continue,
        };
        let serving = Serving {
            source,
            read_only: entry.read_only,
        };
        let mut found = Vec::new();
        let (api, endpoints) = mcp_tools::endpoints(id, serving, listing, i, &mut found);
        let src = mcp_texts::source(data_dir, id, i);
        let doc = mcp_texts::document(&api, &endpoints);
        let written = src
            .original
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                let text = serde_json::to_vec_pretty(&doc).map_err(std::io::Error::other)?;
                super::spec_file::write_atomic(&src.original, &text)
            });
        match written {
            Ok(()) => out.push(src),
            Err(e) => problems.push(Problem::error(
                &src.original,
                None,
                format!("cannot write MCP server '{id}''s tools to enrich them: {e}"),
            )),
        }
    }
    out
}
