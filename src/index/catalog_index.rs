//! Indexing a whole catalog: one doc per endpoint, keyed by its tool name.

use super::doc_text::{self, DocVariant, DOC_TEXT_VERSION};
use super::store::{BuildStats, IndexStore, IndexedDoc, StoreError, TextEmbedder};
use crate::catalog::{Catalog, Endpoint};
use std::path::Path;
use std::time::Instant;

/// The index of a catalog's endpoints.
pub type EndpointIndex = IndexStore<Endpoint>;

/// The docs of a catalog, one per endpoint.
pub fn docs(catalog: &Catalog, variant: DocVariant) -> Vec<IndexedDoc<Endpoint>> {
    let texts = doc_text::build_all(&catalog.endpoints, variant);
    catalog
        .endpoints
        .iter()
        .zip(texts)
        .map(|(ep, text)| IndexedDoc {
            key: ep.tool_name.clone(),
            text,
            lexical_only: doc_text::lexical_only(ep),
            record: ep.clone(),
        })
        .collect()
}

/// Version tag of the doc texts: the recipe version and the variant, so switching variants
/// is seen as a recipe change.
pub fn text_version(variant: DocVariant) -> u32 {
    DOC_TEXT_VERSION * 16 + variant as u32
}

/// The index in `data_dir` if it was built from exactly these sources (the digest of
/// the catalog's config and spec files, [`crate::catalog::sources_digest`]) with this
/// doc-text variant, opened without loading the catalog; the caller checks the model
/// ([`EndpointIndex::is_compatible`]). `None` when it may not be current: load the catalog
/// and [`build`].
pub fn open_if_current(
    data_dir: &Path,
    sources: &str,
    variant: DocVariant,
) -> Option<EndpointIndex> {
    let index = EndpointIndex::open(data_dir).ok().flatten()?;
    let m = index.manifest();
    (m.sources.as_deref() == Some(sources) && m.doc_text_version == text_version(variant))
        .then_some(index)
}

/// Builds (or incrementally updates) the index of `catalog` in `data_dir`.
pub fn build(
    catalog: &Catalog,
    data_dir: &Path,
    embedder: &impl TextEmbedder,
    variant: DocVariant,
    progress: impl FnMut(usize, usize),
) -> Result<(EndpointIndex, BuildStats), StoreError> {
    // The ranking's tables are derived from the records and stored with them, so opening
    // the index analyses nothing (crate::shortlist::tables).
    let t = Instant::now();
    let tables = crate::shortlist::tables::Tables::build(&catalog.endpoints).encode();
    tracing::info!(
        ms = t.elapsed().as_millis() as u64,
        "index: ranking tables built"
    );
    let t = Instant::now();
    let docs = docs(catalog, variant);
    tracing::info!(
        ms = t.elapsed().as_millis() as u64,
        "index: doc texts built"
    );
    IndexStore::build(
        data_dir,
        docs,
        tables,
        catalog.sources_digest.clone(),
        embedder,
        text_version(variant),
        progress,
    )
}
