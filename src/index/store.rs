//! The persisted index: endpoint records, their doc texts and vectors, in one data folder.
//!
//! Files of a generation (see [`super::generations`] for how they are replaced atomically):
//!
//! ```text
//! manifest.json   format, model id, dim, doc-text version, one entry per doc
//! records.json    [{key, text, record}] in doc order
//! vectors.f32     doc i's unit vector at row i, little-endian f32
//! index.usearch   HNSW graph, only for indexes of more than ANN_MIN_DOCS docs
//! ```
//!
//! Opening reads these files and embeds nothing. Building compares each doc's content hash
//! with the previous manifest and embeds only what changed, so restarting a server over an
//! unchanged catalog costs no model time, and editing one endpoint costs one embedding.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::embedder::{EmbedError, Embedder, BATCH_SIZE};
use super::generations::Generations;
use super::lexical::Bm25;
use super::vectors::{VectorError, VectorIndex, ANN_MIN_DOCS};

/// Version of the on-disk layout. An index of another version is rebuilt, never migrated.
pub const FORMAT_VERSION: u32 = 1;

const MANIFEST: &str = "manifest.json";
const RECORDS: &str = "records.json";
const VECTORS: &str = "vectors.f32";
const ANN: &str = "index.usearch";

/// Anything that turns texts into vectors. [`Embedder`] is the real one; tests use fakes
/// that count calls.
pub trait TextEmbedder {
    /// Identifies model content and settings; vectors from different ids never mix.
    fn model_id(&self) -> &str;
    /// Vector length.
    fn dim(&self) -> usize;
    /// One vector per text, in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

impl TextEmbedder for Embedder {
    fn model_id(&self) -> &str {
        Embedder::model_id(self)
    }
    fn dim(&self) -> usize {
        Embedder::dim(self)
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Embedder::embed(self, texts)
    }
}

/// Errors of opening or building the index.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the index could not be read or written.
    #[error("index file {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// A file exists but does not hold what it should.
    #[error("index file {path} is damaged: {reason}")]
    Corrupt { path: PathBuf, reason: String },
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

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One document to index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedDoc<T> {
    /// Unique key (the endpoint's tool name).
    pub key: String,
    /// The text that is embedded and searched lexically.
    pub text: String,
    /// What search results refer to.
    pub record: T,
}

/// The manifest of a generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// [`TextEmbedder::model_id`] of the vectors.
    pub model_id: String,
    /// Vector length.
    pub dim: usize,
    /// Version of the doc-text recipe the texts were built with.
    pub doc_text_version: u32,
    /// One entry per doc, in doc order.
    pub entries: Vec<ManifestEntry>,
    /// The HNSW graph file, when one was written.
    pub ann_file: Option<String>,
}

/// A doc as the manifest knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// The doc's key.
    pub key: String,
    /// [`content_hash`] of its text.
    pub content_hash: String,
    /// Its row in `vectors.f32` and its key in the usearch graph.
    pub vector_id: usize,
}

/// What a build did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuildStats {
    /// Docs sent to the embedder.
    pub embedded: usize,
    /// Docs whose vector was taken from the previous generation.
    pub reused: usize,
    /// Keys of the previous generation no longer present.
    pub removed: usize,
    /// Whether a new generation was written (false when nothing at all changed).
    pub written: bool,
}

/// sha256 of the doc-text version and the text: a new recipe re-embeds everything even when
/// some texts come out the same, because the version says their meaning may differ.
pub fn content_hash(text: &str, doc_text_version: u32) -> String {
    let mut h = Sha256::new();
    h.update(doc_text_version.to_le_bytes());
    h.update(text.as_bytes());
    hex::encode(h.finalize())
}

#[derive(Serialize)]
struct DocRef<'a, T> {
    key: &'a str,
    text: &'a str,
    record: &'a T,
}

#[derive(Deserialize)]
struct DocOwned<T> {
    key: String,
    text: String,
    record: T,
}

/// An opened index: records, texts and vectors in memory, addressed by doc position.
#[derive(Debug)]
pub struct IndexStore<T> {
    dir: PathBuf,
    manifest: Manifest,
    keys: Vec<String>,
    texts: Vec<String>,
    records: Vec<T>,
    by_key: HashMap<String, usize>,
    vectors: VectorIndex,
}

impl<T: Serialize + DeserializeOwned> IndexStore<T> {
    /// Opens the live generation under `data_dir` without embedding anything. `None` when
    /// there is no index yet or it was written in another format (build one).
    pub fn open(data_dir: &Path) -> Result<Option<IndexStore<T>>, StoreError> {
        // A concurrent build may delete the generation we just found; look once more.
        match Self::open_once(data_dir) {
            Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                Self::open_once(data_dir)
            }
            other => other,
        }
    }

    fn open_once(data_dir: &Path) -> Result<Option<IndexStore<T>>, StoreError> {
        let gens = Generations::new(data_dir);
        let Some(dir) = gens.current().map_err(io_err(data_dir))? else {
            return Ok(None);
        };
        let manifest = read_manifest(&dir)?;
        if manifest.format_version != FORMAT_VERSION {
            tracing::info!(
                found = manifest.format_version,
                expected = FORMAT_VERSION,
                "index format changed; it will be rebuilt"
            );
            return Ok(None);
        }
        let path = dir.join(RECORDS);
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        let docs: Vec<DocOwned<T>> =
            serde_json::from_slice(&bytes).map_err(|e| corrupt(&path, e))?;
        let keys_match = docs.len() == manifest.entries.len()
            && docs
                .iter()
                .zip(&manifest.entries)
                .enumerate()
                .all(|(i, (d, e))| d.key == e.key && e.vector_id == i);
        if !keys_match {
            return Err(corrupt(&path, "records do not match the manifest"));
        }
        let mut vectors = VectorIndex::read_flat(&dir.join(VECTORS), manifest.dim, docs.len())?;
        if let Some(ann) = manifest.ann_file.as_deref() {
            if let Err(e) = vectors.load_ann(&dir.join(ann)) {
                tracing::warn!(error = %e, "cannot load the usearch graph; searching exhaustively");
            }
        }
        let (mut keys, mut texts, mut records) = (Vec::new(), Vec::new(), Vec::new());
        for d in docs {
            keys.push(d.key);
            texts.push(d.text);
            records.push(d.record);
        }
        let by_key = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect();
        Ok(Some(IndexStore {
            dir,
            manifest,
            keys,
            texts,
            records,
            by_key,
            vectors,
        }))
    }

    /// Builds the index for `docs`, reusing every vector of the previous generation whose
    /// content hash is unchanged (none if the model, dimension or format differ), and
    /// publishes it atomically. `progress(done, total)` reports embedded docs. When nothing
    /// changed at all, nothing is written and the live generation is returned.
    pub fn build(
        data_dir: &Path,
        docs: Vec<IndexedDoc<T>>,
        embedder: &impl TextEmbedder,
        doc_text_version: u32,
        progress: impl FnMut(usize, usize),
    ) -> Result<(IndexStore<T>, BuildStats), StoreError> {
        Self::build_with_ann_min(
            data_dir,
            docs,
            embedder,
            doc_text_version,
            progress,
            ANN_MIN_DOCS,
        )
    }

    /// [`IndexStore::build`] with the HNSW threshold as a parameter (tests use a small one).
    fn build_with_ann_min(
        data_dir: &Path,
        docs: Vec<IndexedDoc<T>>,
        embedder: &impl TextEmbedder,
        doc_text_version: u32,
        mut progress: impl FnMut(usize, usize),
        ann_min: usize,
    ) -> Result<(IndexStore<T>, BuildStats), StoreError> {
        let mut seen = HashSet::with_capacity(docs.len());
        if let Some(d) = docs.iter().find(|d| !seen.insert(d.key.as_str())) {
            return Err(StoreError::DuplicateKey(d.key.clone()));
        }
        let dim = embedder.dim();
        let model_id = embedder.model_id().to_string();
        let gens = Generations::new(data_dir);
        let previous = load_previous(&gens);
        let compatible = previous.as_ref().filter(|(_, m, v)| {
            m.format_version == FORMAT_VERSION
                && m.model_id == model_id
                && m.dim == dim
                && v.dim() == dim
        });

        let hashes: Vec<String> = docs
            .iter()
            .map(|d| content_hash(&d.text, doc_text_version))
            .collect();
        let old_rows: HashMap<&str, usize> = compatible
            .map(|(_, m, _)| {
                m.entries
                    .iter()
                    .map(|e| (e.content_hash.as_str(), e.vector_id))
                    .collect()
            })
            .unwrap_or_default();
        let mut rows: Vec<Option<Vec<f32>>> = hashes
            .iter()
            .map(|h| {
                let (_, _, v) = compatible?;
                old_rows
                    .get(h.as_str())
                    .and_then(|&r| v.row(r))
                    .map(<[f32]>::to_vec)
            })
            .collect();
        let mut todo: Vec<usize> = (0..docs.len()).filter(|&i| rows[i].is_none()).collect();
        // A batch is padded to its longest text, and attention costs grow with the square
        // of that length: batching texts of similar length wastes far less work.
        todo.sort_by_key(|&i| docs[i].text.len());
        let mut stats = BuildStats {
            embedded: todo.len(),
            reused: docs.len() - todo.len(),
            ..BuildStats::default()
        };
        if let Some((_, m, _)) = &previous {
            let new_keys: HashSet<&str> = docs.iter().map(|d| d.key.as_str()).collect();
            stats.removed = m
                .entries
                .iter()
                .filter(|e| !new_keys.contains(e.key.as_str()))
                .count();
        }

        progress(0, todo.len());
        for (done, chunk) in todo.chunks(BATCH_SIZE).enumerate() {
            let texts: Vec<String> = chunk.iter().map(|&i| docs[i].text.clone()).collect();
            let vectors = embedder.embed(&texts)?;
            if vectors.len() != chunk.len() {
                return Err(EmbedError::Model {
                    model: model_id,
                    reason: format!("{} vectors for {} texts", vectors.len(), chunk.len()),
                }
                .into());
            }
            for (&i, v) in chunk.iter().zip(vectors) {
                rows[i] = Some(v);
            }
            progress(
                (done * BATCH_SIZE + chunk.len()).min(todo.len()),
                todo.len(),
            );
        }
        let rows: Vec<Vec<f32>> = rows.into_iter().map(Option::unwrap_or_default).collect();
        let mut vectors = VectorIndex::from_rows(dim, &rows)?;

        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            model_id,
            dim,
            doc_text_version,
            entries: docs
                .iter()
                .zip(hashes)
                .enumerate()
                .map(|(i, (d, content_hash))| ManifestEntry {
                    key: d.key.clone(),
                    content_hash,
                    vector_id: i,
                })
                .collect(),
            ann_file: (docs.len() > ann_min).then(|| ANN.to_string()),
        };
        let doc_refs: Vec<DocRef<'_, T>> = docs
            .iter()
            .map(|d| DocRef {
                key: &d.key,
                text: &d.text,
                record: &d.record,
            })
            .collect();
        let records_json =
            serde_json::to_vec(&doc_refs).map_err(|e| StoreError::Encode(e.to_string()))?;

        if let Some((dir, m, _)) = &previous {
            let same_records =
                std::fs::read(dir.join(RECORDS)).is_ok_and(|old| old == records_json);
            if stats.embedded == 0 && *m == manifest && same_records {
                if let Some(store) = Self::open(data_dir)? {
                    return Ok((store, stats));
                }
            }
        }

        let pending = gens.begin().map_err(io_err(data_dir))?;
        let dir = pending.path();
        write_synced(&dir.join(RECORDS), &records_json)?;
        vectors.write_flat(&dir.join(VECTORS))?;
        if let Some(ann) = &manifest.ann_file {
            vectors.write_ann(&dir.join(ann))?;
        }
        let manifest_json =
            serde_json::to_vec_pretty(&manifest).map_err(|e| StoreError::Encode(e.to_string()))?;
        write_synced(&dir.join(MANIFEST), &manifest_json)?;
        let dir = gens.commit(pending).map_err(io_err(data_dir))?;
        stats.written = true;

        let by_key = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.key.clone(), i))
            .collect();
        let (mut keys, mut texts, mut records) = (Vec::new(), Vec::new(), Vec::new());
        for d in docs {
            keys.push(d.key);
            texts.push(d.text);
            records.push(d.record);
        }
        Ok((
            IndexStore {
                dir,
                manifest,
                keys,
                texts,
                records,
                by_key,
                vectors,
            },
            stats,
        ))
    }
}

impl<T> IndexStore<T> {
    /// Number of docs.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are no docs.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Records in doc order; search results index into this.
    pub fn records(&self) -> &[T] {
        &self.records
    }

    /// Doc texts in doc order.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Keys in doc order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The record with this key.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.position(key).map(|i| &self.records[i])
    }

    /// The doc position of this key.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.by_key.get(key).copied()
    }

    /// The manifest of the loaded generation.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The generation folder the index was loaded from or written to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this index was built by `embedder` from doc texts of `doc_text_version`;
    /// if not, query vectors are not comparable to its vectors and it must be rebuilt.
    pub fn is_compatible(&self, embedder: &impl TextEmbedder, doc_text_version: u32) -> bool {
        self.manifest.model_id == embedder.model_id()
            && self.manifest.dim == embedder.dim()
            && self.manifest.doc_text_version == doc_text_version
    }

    /// The `k` docs most similar to `query` (a vector from the same embedder), best first,
    /// as (doc position, cosine similarity). Exact for indexes up to [`ANN_MIN_DOCS`].
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, StoreError> {
        Ok(self.vectors.search(query, k)?)
    }

    /// Cosine similarity of `query` to every doc, in doc order (for fusion with BM25).
    pub fn similarity_all(&self, query: &[f32]) -> Result<Vec<f32>, StoreError> {
        Ok(self.vectors.similarity_all(query)?)
    }

    /// The vectors themselves.
    pub fn vectors(&self) -> &VectorIndex {
        &self.vectors
    }

    /// A BM25 index over the doc texts (built now; a few ms per thousand docs).
    pub fn lexical(&self) -> Bm25 {
        Bm25::build(&self.texts)
    }
}

/// The live generation's folder, manifest and vectors, if they can be read; anything less
/// just means there is nothing to reuse.
fn load_previous(gens: &Generations) -> Option<(PathBuf, Manifest, VectorIndex)> {
    let dir = gens.current().ok().flatten()?;
    let result = read_manifest(&dir).and_then(|m| {
        let v = VectorIndex::read_flat(&dir.join(VECTORS), m.dim, m.entries.len())?;
        Ok((m, v))
    });
    match result {
        Ok((m, v)) => Some((dir, m, v)),
        Err(e) => {
            tracing::warn!(error = %e, "the previous index cannot be read; rebuilding from scratch");
            None
        }
    }
}

fn read_manifest(dir: &Path) -> Result<Manifest, StoreError> {
    let path = dir.join(MANIFEST);
    let bytes = std::fs::read(&path).map_err(io_err(&path))?;
    serde_json::from_slice(&bytes).map_err(|e| corrupt(&path, e))
}

fn corrupt(path: &Path, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let file = File::create(path).map_err(io_err(path))?;
    let mut w = BufWriter::new(file);
    w.write_all(bytes).map_err(io_err(path))?;
    let file = w.into_inner().map_err(|e| io_err(path)(e.into_error()))?;
    file.sync_all().map_err(io_err(path))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
