//! Salvaging the vectors of an earlier generation when building a new one: a text whose
//! content hash is unchanged keeps its vector instead of being embedded again, whether
//! the earlier generation is of the current format, of format 2 (no ranking tables) or
//! of format 1 (`records.json`, `vectors.f32`). Anything unreadable just means there is
//! nothing to reuse.

use super::docs_file::read_docs_file;
use super::layout::{
    corrupt, io_err, FormatOnly, Manifest, StoreError, DOCS, FORMAT_2, MANIFEST, V1_VECTORS,
    VECTORS,
};
use super::vectors::VectorIndex;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// Format 1's manifest: what is needed to reuse its vectors.
#[derive(Deserialize)]
struct ManifestV1 {
    model_id: String,
    dim: usize,
    entries: Vec<EntryV1>,
}

#[derive(Deserialize)]
struct EntryV1 {
    content_hash: String,
    vector_id: usize,
}

/// The live generation as far as a build can reuse it: its keys, content hashes and
/// vectors, of the current format or of format 1.
pub struct Previous {
    /// `None` for format 1.
    pub manifest: Option<Manifest>,
    pub model_id: String,
    pub dim: usize,
    pub keys: Vec<String>,
    pub hashes: Vec<[u8; 32]>,
    /// What the caller stored with it (empty for formats 1 and 2).
    pub extra: Vec<u8>,
    rows: HashMap<[u8; 32], usize>,
    vectors: PreviousVectors,
}

enum PreviousVectors {
    Store(VectorIndex),
    Flat(Vec<f32>),
}

impl Previous {
    /// What the generation in `dir` offers; anything unreadable just means there is
    /// nothing to reuse.
    pub fn load(dir: &Path) -> Option<Previous> {
        let result = Self::load_recent(dir).or_else(|e| match Self::load_v1(dir) {
            Some(p) => {
                tracing::info!("upgrading an index of format 1: its vectors are reused");
                Ok(p)
            }
            None => Err(e),
        });
        match result {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(error = %e, "the previous index cannot be read; rebuilding from scratch");
                None
            }
        }
    }

    /// The current format or format 2, whose vectors and hashes are laid out the same.
    fn load_recent(dir: &Path) -> Result<Previous, StoreError> {
        let path = dir.join(MANIFEST);
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| corrupt(&path, e))?;
        if manifest.format_version == FORMAT_2 {
            tracing::info!("upgrading an index of format 2: its vectors are reused");
        }
        let path = dir.join(DOCS);
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        let docs = read_docs_file(&bytes, &path, manifest.format_version == FORMAT_2)?;
        let vectors = VectorIndex::open(&dir.join(VECTORS), manifest.dim, docs.keys.len())?;
        let rows = docs
            .hashes
            .iter()
            .enumerate()
            .map(|(i, h)| (*h, i))
            .collect();
        Ok(Previous {
            model_id: manifest.model_id.clone(),
            dim: manifest.dim,
            manifest: Some(manifest),
            keys: docs.keys.iter().map(|k| k.to_string()).collect(),
            extra: docs.extra.to_vec(),
            hashes: docs.hashes,
            rows,
            vectors: PreviousVectors::Store(vectors),
        })
    }

    fn load_v1(dir: &Path) -> Option<Previous> {
        let bytes = std::fs::read(dir.join(MANIFEST)).ok()?;
        if serde_json::from_slice::<FormatOnly>(&bytes)
            .ok()?
            .format_version
            != 1
        {
            return None;
        }
        let m: ManifestV1 = serde_json::from_slice(&bytes).ok()?;
        let flat = std::fs::read(dir.join(V1_VECTORS)).ok()?;
        if flat.len() != m.entries.len() * m.dim * 4 {
            return None;
        }
        let data: Vec<f32> = flat
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut rows = HashMap::new();
        for e in &m.entries {
            let mut h = [0u8; 32];
            if hex::decode_to_slice(&e.content_hash, &mut h).is_ok()
                && e.vector_id < m.entries.len()
            {
                rows.insert(h, e.vector_id);
            }
        }
        Some(Previous {
            manifest: None,
            model_id: m.model_id,
            dim: m.dim,
            keys: Vec::new(),
            hashes: Vec::new(),
            extra: Vec::new(),
            rows,
            vectors: PreviousVectors::Flat(data),
        })
    }

    /// The stored vector of a text with this content hash.
    pub fn vector(&self, hash: &[u8; 32]) -> Option<Vec<f32>> {
        let &row = self.rows.get(hash)?;
        match &self.vectors {
            PreviousVectors::Store(v) => v.row(row),
            PreviousVectors::Flat(data) => data
                .get(row * self.dim..(row + 1) * self.dim)
                .map(<[f32]>::to_vec),
        }
    }
}

#[cfg(test)]
#[path = "salvage_tests.rs"]
mod tests;
