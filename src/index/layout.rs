//! What a generation of the index is made of on disk: its files, the format version they
//! are written in, the manifest that describes them, and what can go wrong reading or
//! writing them. Opening ([`super::store`]) and salvaging vectors from an earlier
//! generation ([`super::salvage`]) both read through here.

use super::binfile::Damaged;
use super::embedder::EmbedError;
use super::vectors::VectorError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Version of the on-disk layout. An index of another version is rebuilt (reusing the
/// vectors of formats 1 and 2), never read for search.
pub const FORMAT_VERSION: u32 = 3;
/// The format before the ranking tables: same files, one section fewer in `docs.bin`.
pub const FORMAT_2: u32 = 2;

pub const MANIFEST: &str = "manifest.json";
pub const DOCS: &str = "docs.bin";
pub const VECTORS: &str = "vectors.usearch";
pub const DOCS_MAGIC: &[u8; 8] = b"SLSTDOCS";
/// Files of format 1, read only to reuse their vectors.
pub const V1_VECTORS: &str = "vectors.f32";

/// Errors of opening or building the index.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the index could not be read or written.
    #[error("index file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// A file exists but does not hold what it should.
    #[error("index file {path} is damaged: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    /// The index was written by another version of shortlist.
    #[error("the index in {path} has format {found}, this shortlist reads format {expected}: run `shortlist index` to rebuild it (vectors are reused, the enrichment cache is kept)")]
    OldFormat {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    /// A record could not be serialised (e.g. a map with non-string keys).
    #[error("cannot encode the index records: {0}")]
    Encode(String),
    /// Two docs share a key.
    #[error("two endpoints share the key {0:?}; keys must be unique")]
    DuplicateKey(String),
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// Vectors of the wrong size, usearch failures.
    #[error(transparent)]
    Vector(#[from] VectorError),
}

impl From<Damaged> for StoreError {
    fn from(d: Damaged) -> StoreError {
        StoreError::Corrupt {
            path: d.path,
            reason: d.reason,
        }
    }
}

/// The error of an I/O failure on `path`.
pub fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The manifest of a generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// [`TextEmbedder::model_id`] of the vectors.
    pub model_id: String,
    /// Vector length.
    pub dim: usize,
    /// Version of the doc-text recipe the texts were built with.
    pub doc_text_version: u32,
    /// Number of docs.
    pub count: usize,
    /// sha256 of the records' JSON, so an unchanged catalog is recognised without reading
    /// the records back.
    pub records_digest: String,
    /// The caller's digest of what the docs were made from (for a catalog, its config and
    /// spec files: `crate::catalog::sources_digest`), so that a start can tell the index is
    /// current without making the docs again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<String>,
}

/// Only the format, to tell an old index from a damaged one.
#[derive(Deserialize)]
pub struct FormatOnly {
    pub format_version: u32,
}

/// The manifest of the generation in `dir`, refused as [`StoreError::OldFormat`] when it
/// was written in another format.
pub fn read_manifest(dir: &Path) -> Result<Manifest, StoreError> {
    let path = dir.join(MANIFEST);
    let bytes = std::fs::read(&path).map_err(io_err(&path))?;
    match serde_json::from_slice::<FormatOnly>(&bytes) {
        Ok(f) if f.format_version != FORMAT_VERSION => {
            return Err(StoreError::OldFormat {
                path: dir.parent().unwrap_or(dir).to_path_buf(),
                found: f.format_version,
                expected: FORMAT_VERSION,
            })
        }
        _ => {}
    }
    serde_json::from_slice(&bytes).map_err(|e| corrupt(&path, e))
}

/// The error of a damaged file.
pub fn corrupt(path: &Path, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Writes `bytes` to `path` and syncs it to disk before a generation is committed.
pub fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let file = File::create(path).map_err(io_err(path))?;
    let mut w = BufWriter::new(file);
    w.write_all(bytes).map_err(io_err(path))?;
    let file = w.into_inner().map_err(|e| io_err(path)(e.into_error()))?;
    file.sync_all().map_err(io_err(path))
}
