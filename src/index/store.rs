//! The persisted index: endpoint records, their doc texts and vectors, in one data folder.
//!
//! Files of a generation (see [`super::generations`] for how they are replaced atomically):
//!
//! ```text
//! manifest.json     format, model id, dim, doc-text version, doc count, records digest
//! docs.bin          keys and content hashes, BM25 statistics, records, doc texts, and the
//!                   ranking's tables (binary, see super::binfile; records and texts
//!                   LZ4-compressed in blocks; the tables are opaque here, see
//!                   crate::shortlist::tables)
//! vectors.usearch   the unit vectors (half precision) and their HNSW graph, row i = doc i
//! ```
//!
//! Opening reads these files and embeds, tokenizes and parses nothing it can avoid: the
//! vectors are memory-mapped, BM25 is read rather than rebuilt, and the records and doc
//! texts are only decompressed when someone asks for them ([`super::records`]). Building compares each doc's content hash with
//! the previous generation and embeds only what changed, so restarting a server over an
//! unchanged catalog costs no model time, and editing one endpoint costs one embedding.
//!
//! An index of an earlier format (format 1: `records.json`, `vectors.f32`; format 2: no
//! ranking tables) is not read for search; building over it reuses its vectors
//! ([`super::salvage`]), so upgrading re-embeds nothing. The files' layout and errors are
//! in [`super::layout`] and [`super::docs_file`]; [`super::generations`] owns a
//! generation's life (find the live one, begin a new one, commit it, clean up).

use std::collections::HashSet;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::binfile::Reader;
use super::docs_file::{decode_texts, encode_docs, range_in, read_docs_file};
use super::embedder::{EmbedError, Embedder, BATCH_SIZE};
use super::generations::Generations;
use super::layout::{corrupt, io_err, read_manifest, write_synced, DOCS, MANIFEST, VECTORS};
pub use super::layout::{Manifest, StoreError, FORMAT_VERSION};
use super::lexical::Bm25;
use super::records::LazyRecords;
use super::salvage::Previous;
use super::vectors::VectorIndex;

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

/// One document to index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedDoc<T> {
    /// Unique key (the endpoint's tool name).
    pub key: String,
    /// The text that is embedded and searched lexically.
    pub text: String,
    /// Words searched lexically but not embedded (may be empty): the BM25 reads them as
    /// the text's end; they are not stored with the texts.
    pub lexical_only: String,
    /// What search results refer to.
    pub record: T,
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

/// sha256 of the doc-text version and the text, in hex: a new recipe re-embeds everything
/// even when some texts come out the same, because the version says their meaning may
/// differ.
pub fn content_hash(text: &str, doc_text_version: u32) -> String {
    hex::encode(raw_hash(text, doc_text_version))
}

fn raw_hash(text: &str, doc_text_version: u32) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(doc_text_version.to_le_bytes());
    h.update(text.as_bytes());
    h.finalize().into()
}

/// An opened index: records decoded on demand, vectors memory-mapped, addressed by doc
/// position.
#[derive(Debug)]
pub struct IndexStore<T> {
    dir: PathBuf,
    manifest: Manifest,
    keys: Vec<String>,
    records: LazyRecords<T>,
    /// Positions ordered by key, built on the first [`IndexStore::position`] (a tool call by
    /// name): a start that only ranks never needs it, and at a million endpoints a map of
    /// every key was a fifth of opening the index.
    by_key: OnceLock<Vec<u32>>,
    vectors: VectorIndex,
    bm25: Bm25,
    /// `docs.bin`, whose sections the records, texts and extra bytes are read from.
    file: Arc<Vec<u8>>,
    /// The texts, decompressed on first use from `text_range` of `file` (only tests and
    /// tools outside search ask for them).
    texts: OnceLock<Vec<String>>,
    text_range: Range<usize>,
    extra_range: Range<usize>,
}

impl<T: Serialize + DeserializeOwned + Send + Sync> IndexStore<T> {
    /// Opens the live generation under `data_dir` without embedding anything. `None` when
    /// there is no index yet; [`StoreError::OldFormat`] when it was written in another
    /// format (build one).
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
        let path = dir.join(DOCS);
        let file = Arc::new(std::fs::read(&path).map_err(io_err(&path))?);
        let docs = read_docs_file(&file, &path, false)?;
        if docs.keys.len() != manifest.count {
            return Err(corrupt(&path, "the doc count does not match the manifest"));
        }
        let records = LazyRecords::open(&file, docs.records, &path)?;
        if records.len() != manifest.count {
            return Err(corrupt(
                &path,
                "the record count does not match the manifest",
            ));
        }
        let bm25 = Bm25::read(&mut Reader::open_section(docs.bm25, &path))?;
        if bm25.len() != manifest.count {
            return Err(corrupt(&path, "BM25 statistics do not match the doc count"));
        }
        let vectors = VectorIndex::open(&dir.join(VECTORS), manifest.dim, manifest.count)?;
        let keys: Vec<String> = docs.keys.iter().map(|k| k.to_string()).collect();
        let text_range = range_in(&file, docs.texts);
        let extra_range = range_in(&file, docs.extra);
        drop(docs);
        Ok(Some(IndexStore {
            dir,
            manifest,
            keys,
            records,
            by_key: OnceLock::new(),
            vectors,
            bm25,
            file,
            texts: OnceLock::new(),
            text_range,
            extra_range,
        }))
    }

    /// Builds the index for `docs`, reusing every vector of the previous generation whose
    /// content hash is unchanged (none if the model or dimension differ), and publishes it
    /// atomically. `extra` is stored as it is, for the caller ([`IndexStore::extra`]), and
    /// `sources` in the manifest ([`Manifest::sources`]).
    /// `progress(done, total)` reports embedded docs. When nothing changed at all, nothing
    /// is written and the live generation is returned.
    pub fn build(
        data_dir: &Path,
        docs: Vec<IndexedDoc<T>>,
        extra: Vec<u8>,
        sources: Option<String>,
        embedder: &impl TextEmbedder,
        doc_text_version: u32,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<(IndexStore<T>, BuildStats), StoreError> {
        let mut seen = HashSet::with_capacity(docs.len());
        if let Some(d) = docs.iter().find(|d| !seen.insert(d.key.as_str())) {
            return Err(StoreError::DuplicateKey(d.key.clone()));
        }
        let dim = embedder.dim();
        let model_id = embedder.model_id().to_string();
        let gens = Generations::new(data_dir);
        let phase = Phases::start();
        let mut previous = gens
            .current()
            .ok()
            .flatten()
            .and_then(|dir| Previous::load(&dir));
        phase.done("previous generation read");
        let compatible = previous
            .as_ref()
            .filter(|p| p.model_id == model_id && p.dim == dim);

        let hashes: Vec<[u8; 32]> = docs
            .iter()
            .map(|d| raw_hash(&d.text, doc_text_version))
            .collect();
        let mut rows: Vec<Option<Vec<f32>>> = hashes
            .iter()
            .map(|h| compatible.and_then(|p| p.vector(h)))
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
        if let Some(p) = &previous {
            let new_keys: HashSet<&str> = docs.iter().map(|d| d.key.as_str()).collect();
            stats.removed = p
                .keys
                .iter()
                .filter(|k| !new_keys.contains(k.as_str()))
                .count();
        }

        phase.done("content hashes");
        let mut record_json = Vec::with_capacity(docs.len());
        let mut digest = Sha256::new();
        for d in &docs {
            let json =
                serde_json::to_vec(&d.record).map_err(|e| StoreError::Encode(e.to_string()))?;
            digest.update((json.len() as u64).to_le_bytes());
            digest.update(&json);
            // Words searched lexically only are in no text's hash: a change to them alone
            // must still rebuild the BM25.
            if !d.lexical_only.is_empty() {
                digest.update((d.lexical_only.len() as u64).to_le_bytes());
                digest.update(d.lexical_only.as_bytes());
            }
            record_json.push(json);
        }
        phase.done("records encoded");
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            model_id: model_id.clone(),
            dim,
            doc_text_version,
            count: docs.len(),
            records_digest: hex::encode(digest.finalize()),
            sources,
        };

        if let Some(p) = &previous {
            let unchanged = stats.embedded == 0
                && p.manifest.as_ref() == Some(&manifest)
                && p.keys.len() == docs.len()
                && p.keys.iter().zip(&docs).all(|(k, d)| *k == d.key)
                && p.hashes == hashes
                && p.extra == extra;
            if unchanged {
                // Release the mapped vectors before mapping them again.
                previous = None;
                if let Some(store) = Self::open(data_dir)? {
                    return Ok((store, stats));
                }
            }
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
        phase.done("embedded");
        drop(previous);
        let rows: Vec<Vec<f32>> = rows.into_iter().map(Option::unwrap_or_default).collect();
        let vectors = VectorIndex::from_rows(dim, &rows)?;
        drop(rows);
        phase.done("vector graph built");

        let (mut keys, mut texts, mut lexical_only) = (
            Vec::with_capacity(docs.len()),
            Vec::with_capacity(docs.len()),
            Vec::with_capacity(docs.len()),
        );
        for d in docs {
            keys.push(d.key);
            texts.push(d.text);
            lexical_only.push(d.lexical_only);
        }
        let bm25 = Bm25::build_with(&texts, &lexical_only);
        drop(lexical_only);
        phase.done("BM25 built");
        let docs_bin = encode_docs(&keys, &hashes, &bm25, &record_json, &texts, &extra)?;
        drop((record_json, texts, keys, bm25));
        phase.done("docs.bin encoded");

        let pending = gens.begin().map_err(io_err(data_dir))?;
        let dir = pending.path();
        write_synced(&dir.join(DOCS), &docs_bin)?;
        vectors.write(&dir.join(VECTORS))?;
        drop((docs_bin, vectors));
        let manifest_json =
            serde_json::to_vec_pretty(&manifest).map_err(|e| StoreError::Encode(e.to_string()))?;
        write_synced(&dir.join(MANIFEST), &manifest_json)?;
        gens.commit(pending).map_err(io_err(data_dir))?;
        phase.done("written");
        stats.written = true;
        // What was just written is opened like any index, so a server that embedded at
        // start holds what one that did not holds: no decoded records, the vectors mapped.
        match Self::open(data_dir)? {
            Some(store) => Ok((store, stats)),
            None => Err(corrupt(data_dir, "the index just written is not there")),
        }
    }
}

/// Logs how long each step of a build took (`RUST_LOG=info`), the step's name with the
/// milliseconds since the previous one.
struct Phases(std::cell::Cell<std::time::Instant>);

impl Phases {
    fn start() -> Phases {
        Phases(std::cell::Cell::new(std::time::Instant::now()))
    }

    fn done(&self, step: &str) {
        let now = std::time::Instant::now();
        let ms = now.duration_since(self.0.replace(now)).as_millis() as u64;
        tracing::info!(ms, "index: {step}");
    }
}

impl<T: DeserializeOwned + Send + Sync> IndexStore<T> {
    /// The record at doc position `i`, decoded on first use; `None` past the end or when
    /// its block of the index file is damaged (logged).
    pub fn record(&self, i: usize) -> Option<&T> {
        self.records.get(i)
    }

    /// Every record in doc order (decoding them all: evaluation, static tool lists).
    pub fn records(&self) -> Result<Vec<&T>, StoreError> {
        Ok(self.records.all()?)
    }

    /// The record with this key.
    pub fn get(&self, key: &str) -> Option<&T> {
        self.position(key).and_then(|i| self.record(i))
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

    /// The bytes stored with the index by whoever built it (empty if none).
    pub fn extra(&self) -> &[u8] {
        &self.file[self.extra_range.clone()]
    }

    /// Doc texts in doc order (decompressed on first use).
    pub fn texts(&self) -> &[String] {
        self.texts.get_or_init(|| {
            let path = self.dir.join(DOCS);
            decode_texts(&path, &self.file[self.text_range.clone()]).unwrap_or_else(|e| {
                tracing::warn!(path = %e.path.display(), reason = %e.reason, "cannot read the doc texts");
                Vec::new()
            })
        })
    }

    /// Keys in doc order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The doc position of this key.
    pub fn position(&self, key: &str) -> Option<usize> {
        let order = self.by_key.get_or_init(|| {
            let mut order: Vec<u32> = (0..self.keys.len() as u32).collect();
            order.sort_unstable_by(|&a, &b| self.keys[a as usize].cmp(&self.keys[b as usize]));
            order
        });
        order
            .binary_search_by(|&p| self.keys[p as usize].as_str().cmp(key))
            .ok()
            .map(|i| order[i] as usize)
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
    /// as (doc position, cosine similarity). Exact for indexes up to
    /// [`super::vectors::EXACT_MAX_DOCS`], through the HNSW graph past it.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, StoreError> {
        Ok(self.vectors.search(query, k)?)
    }

    /// The `k` docs most similar to `query` among those `allowed` (by position).
    pub fn search_filtered(
        &self,
        query: &[f32],
        k: usize,
        allowed: impl Fn(usize) -> bool,
    ) -> Result<Vec<(usize, f32)>, StoreError> {
        Ok(self.vectors.search_filtered(query, k, allowed)?)
    }

    /// Cosine similarity of `query` to every doc, in doc order.
    pub fn similarity_all(&self, query: &[f32]) -> Result<Vec<f32>, StoreError> {
        Ok(self.vectors.similarity_all(query)?)
    }

    /// The vectors themselves.
    pub fn vectors(&self) -> &VectorIndex {
        &self.vectors
    }

    /// Overrides the size up to which searches scan every vector
    /// ([`VectorIndex::with_exact_max`]), so that tests can put a small catalog on the
    /// graph.
    pub fn with_exact_max(mut self, exact_max: usize) -> Self {
        self.vectors = self.vectors.with_exact_max(exact_max);
        self
    }

    /// The BM25 index over the doc texts, as stored with them.
    pub fn lexical(&self) -> &Bm25 {
        &self.bm25
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
pub(crate) mod tests;
