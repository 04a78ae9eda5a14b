//! Indexing a whole catalog: one doc per endpoint, keyed by its tool name.

use super::doc_text::{self, DocVariant, DOC_TEXT_VERSION};
use super::store::{BuildStats, IndexStore, IndexedDoc, StoreError, TextEmbedder};
use crate::catalog::{Catalog, Endpoint};
use std::path::Path;

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
            record: ep.clone(),
        })
        .collect()
}

/// Version tag of the doc texts: the recipe version and the variant, so switching variants
/// is seen as a recipe change.
pub fn text_version(variant: DocVariant) -> u32 {
    DOC_TEXT_VERSION * 16 + variant as u32
}

/// Builds (or incrementally updates) the index of `catalog` in `data_dir`.
pub fn build(
    catalog: &Catalog,
    data_dir: &Path,
    embedder: &impl TextEmbedder,
    variant: DocVariant,
    progress: impl FnMut(usize, usize),
) -> Result<(EndpointIndex, BuildStats), StoreError> {
    IndexStore::build(
        data_dir,
        docs(catalog, variant),
        embedder,
        text_version(variant),
        progress,
    )
}
