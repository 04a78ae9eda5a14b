//! The vector half of the index: one usearch index per generation, holding every endpoint's
//! unit vector once (half-precision) and its HNSW graph, searched exactly where a scan is
//! faster and through the graph where it is not.
//!
//! Measured on the 2-core development machine (AVX-512), release build, 384 dims, usearch's
//! SIMD kernels built in (`cargo bench --bench vectors`; figures and command in
//! `docs/benchmarks.md`): the exact scan of half-precision vectors beats the graph up to
//! about [`EXACT_MAX_DOCS`] vectors, the graph is faster past it, and half precision
//! keeps the exact top 10 of full-precision vectors (recall@10 1.000 on the real embeddings
//! of toolbench-dev and socbench-dev, where i8 measured 0.96) at half the bytes.
//!
//! The file is memory-mapped when an index is opened ([`VectorIndex::open`]), so opening
//! costs nothing but a header read and only the pages a search touches are ever read.

use std::path::Path;
use std::sync::OnceLock;

use numkong::Dot;

use usearch::ffi::{IndexOptions, MetricKind, ScalarKind};

/// Up to this many vectors, searches scan every vector (exact); past it they walk the HNSW
/// graph. See the module comment for the measurement.
pub const EXACT_MAX_DOCS: usize = 20_000;

/// Up to this many vectors a filtered search ranks every vector and keeps the allowed ones
/// (usearch keeps its exact results in a sorted buffer, so asking it for all of them costs
/// the square of the count: about a millisecond here).
pub const FILTER_EXACT_MAX_DOCS: usize = 2_048;

/// Kept for callers of the earlier name: the size past which search is approximate.
pub const ANN_MIN_DOCS: usize = EXACT_MAX_DOCS;

/// HNSW breadth at query time. Ranking asks for a few hundred candidates, so the breadth is
/// at least that; usearch's default (64) measured lower recall@10 at 10k vectors.
const EXPANSION_SEARCH: usize = 256;

/// The graph's distance: one minus the inner product. The rows are unit vectors (normalised
/// before they are added, as every query is), so it orders them as the cosine distance
/// does, and the exact scan ([`VectorIndex::similarity_all`]) scores with the same inner
/// product; the cosine kernel also computes both norms at every step, and distances are
/// nearly all of the work of building the graph. An index written with the cosine metric
/// keeps it: usearch reads the metric from the file.
pub const METRIC: MetricKind = MetricKind::IP;

/// How the vectors are stored. Half precision: recall@10 against full-precision exact
/// search 1.000 on real embeddings, at half the size (i8: 0.96; see `docs/benchmarks.md`).
pub const QUANTIZATION: ScalarKind = ScalarKind::F16;

/// Errors of reading, writing or searching vectors.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// A file exists but does not hold what the manifest says.
    #[error("{path}: {reason}")]
    Corrupt {
        path: std::path::PathBuf,
        reason: String,
    },
    /// usearch refused an operation.
    #[error("usearch: {0}")]
    Ann(String),
    /// A vector of the wrong length was passed in.
    #[error("vector has {got} dimensions, the index has {expected}")]
    Dim { expected: usize, got: usize },
}

fn ann_err(e: impl std::fmt::Display) -> VectorError {
    VectorError::Ann(e.to_string())
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> VectorError + '_ {
    move |source| VectorError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `v` scaled to unit length; all zeros (not NaN) when `v` is zero or not finite, so it
/// simply matches nothing.
pub fn normalized(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_finite() && norm > 0.0 {
        v.iter().map(|x| x / norm).collect()
    } else {
        vec![0.0; v.len()]
    }
}

/// Unit vectors keyed by row, row `i` belonging to document `i`, in a usearch index.
pub struct VectorIndex {
    dim: usize,
    len: usize,
    exact_max: usize,
    index: usearch::Index,
    /// The rows as half-precision floats in one block, copied out of usearch on the first
    /// call of [`VectorIndex::similarity_all`] (every query of an exact-size catalog; a
    /// filtered query of a larger one).
    rows: OnceLock<Vec<numkong::f16>>,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dim", &self.dim)
            .field("len", &self.len)
            .field("exact", &self.is_exact())
            .finish()
    }
}

fn options(dim: usize, quantization: ScalarKind, metric: MetricKind) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric,
        quantization,
        connectivity: 0,
        expansion_add: 0,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    }
}

impl VectorIndex {
    /// An index over `rows` (normalised here) with its graph, built on every core.
    pub fn from_rows(dim: usize, rows: &[Vec<f32>]) -> Result<VectorIndex, VectorError> {
        Self::from_rows_as(dim, rows, QUANTIZATION)
    }

    /// [`VectorIndex::from_rows`] with another storage precision (for measurements).
    pub fn from_rows_as(
        dim: usize,
        rows: &[Vec<f32>],
        quantization: ScalarKind,
    ) -> Result<VectorIndex, VectorError> {
        Self::from_rows_with(dim, rows, quantization, METRIC)
    }

    /// [`VectorIndex::from_rows_as`] with another distance (for measurements).
    pub fn from_rows_with(
        dim: usize,
        rows: &[Vec<f32>],
        quantization: ScalarKind,
        metric: MetricKind,
    ) -> Result<VectorIndex, VectorError> {
        if let Some(r) = rows.iter().find(|r| r.len() != dim) {
            return Err(VectorError::Dim {
                expected: dim,
                got: r.len(),
            });
        }
        let index =
            usearch::Index::new(&options(dim.max(1), quantization, metric)).map_err(ann_err)?;
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        index
            .reserve_capacity_and_threads(rows.len().max(1), threads)
            .map_err(ann_err)?;
        // usearch inserts concurrently when told how many threads will call it; the graph
        // of 100,000 vectors is the slow part of writing an index.
        let chunk = rows.len().div_ceil(threads).max(1);
        let failed: Option<VectorError> = std::thread::scope(|s| {
            let handles: Vec<_> = rows
                .chunks(chunk)
                .enumerate()
                .map(|(c, part)| {
                    let index = &index;
                    s.spawn(move || -> Result<(), VectorError> {
                        for (j, row) in part.iter().enumerate() {
                            index
                                .add((c * chunk + j) as u64, &normalized(row))
                                .map_err(ann_err)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(r) => r.err(),
                    Err(_) => Some(VectorError::Ann("an insertion thread panicked".into())),
                })
                .next()
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(VectorIndex {
            dim,
            len: rows.len(),
            exact_max: EXACT_MAX_DOCS,
            index,
            rows: OnceLock::new(),
        })
    }

    /// Overrides the size up to which searches are exact (tests and measurements).
    pub fn with_exact_max(mut self, exact_max: usize) -> VectorIndex {
        self.exact_max = exact_max;
        self
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether searches scan every vector rather than walk the graph.
    pub fn is_exact(&self) -> bool {
        self.len <= self.exact_max
    }

    /// Row `i` as stored (half precision widened to f32), if it exists.
    pub fn row(&self, i: usize) -> Option<Vec<f32>> {
        if i >= self.len {
            return None;
        }
        let mut v = vec![0.0f32; self.dim];
        match self.index.get(i as u64, &mut v) {
            Ok(1) => Some(v),
            _ => None,
        }
    }

    /// Whether searches walk the HNSW graph (catalogs past [`EXACT_MAX_DOCS`]), so that a
    /// ranking should ask for a bounded set of candidates rather than score every row.
    pub fn has_ann(&self) -> bool {
        !self.is_exact()
    }

    /// Cosine similarity of `query` to every row, in row order.
    ///
    /// usearch's own exact search returns a top `k` kept in a sorted buffer, so asking it
    /// for every row costs the square of the row count (measured in `docs/benchmarks.md`);
    /// score fusion needs every score, so this runs usearch's SIMD dot-product kernel
    /// (NumKong) over the half-precision rows copied once out of the usearch index.
    pub fn similarity_all(&self, query: &[f32]) -> Result<Vec<f32>, VectorError> {
        self.check_dim(query)?;
        let rows = self.rows.get_or_init(|| self.copy_rows());
        let q: Vec<numkong::f16> = normalized(query)
            .iter()
            .map(|&x| numkong::f16::from_f32(x))
            .collect();
        Ok(rows
            .chunks_exact(self.dim.max(1))
            .map(|row| numkong::f16::dot(row, &q).unwrap_or(0.0))
            .collect())
    }

    /// Every row out of usearch, in row order (missing rows, which a well-formed index
    /// does not have, stay zero and match nothing).
    fn copy_rows(&self) -> Vec<numkong::f16> {
        let mut out = vec![numkong::f16(0); self.len * self.dim];
        let mut buf = vec![usearch::f16::from_i16s(&[0i16])[0]; self.dim];
        for (i, row) in out.chunks_exact_mut(self.dim.max(1)).enumerate() {
            if let Ok(1) = self.index.get(i as u64, &mut buf) {
                for (o, v) in row.iter_mut().zip(usearch::f16::to_i16s(&buf)) {
                    *o = numkong::f16(*v as u16);
                }
            }
        }
        out
    }

    /// The `k` most similar rows with their cosine similarity, best first, ties by row:
    /// exact up to [`EXACT_MAX_DOCS`] rows, through the graph past it.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, VectorError> {
        self.check_dim(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let q = normalized(query);
        let k = k.min(self.len);
        let m = if self.is_exact() {
            self.index.exact_search(&q, k)
        } else {
            self.index.search(&q, k)
        }
        .map_err(ann_err)?;
        Ok(self.hits(&m))
    }

    /// The `k` most similar rows among those `allowed` (by row), best first: exact up to
    /// [`FILTER_EXACT_MAX_DOCS`] rows, through the graph (skipping rows not allowed) past it.
    pub fn search_filtered(
        &self,
        query: &[f32],
        k: usize,
        allowed: impl Fn(usize) -> bool,
    ) -> Result<Vec<(usize, f32)>, VectorError> {
        self.check_dim(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let q = normalized(query);
        if self.len <= FILTER_EXACT_MAX_DOCS {
            let m = self.index.exact_search(&q, self.len).map_err(ann_err)?;
            let mut hits = self.hits(&m);
            hits.retain(|h| allowed(h.0));
            hits.truncate(k);
            return Ok(hits);
        }
        let m = self
            .index
            .filtered_search(&q, k.min(self.len), |key| {
                usize::try_from(key).is_ok_and(&allowed)
            })
            .map_err(ann_err)?;
        Ok(self.hits(&m))
    }

    /// Exact top `k`, whatever the size (for measurements of the graph's recall).
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, VectorError> {
        self.check_dim(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let m = self
            .index
            .exact_search(&normalized(query), k.min(self.len))
            .map_err(ann_err)?;
        Ok(self.hits(&m))
    }

    /// Graph top `k`, whatever the size (for measurements).
    pub fn search_graph(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, VectorError> {
        self.check_dim(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let m = self
            .index
            .search(&normalized(query), k.min(self.len))
            .map_err(ann_err)?;
        Ok(self.hits(&m))
    }

    fn hits(&self, m: &usearch::ffi::Matches) -> Vec<(usize, f32)> {
        let mut hits: Vec<(usize, f32)> = m
            .keys
            .iter()
            .zip(&m.distances)
            .filter_map(|(&key, &d)| {
                usize::try_from(key)
                    .ok()
                    .filter(|&i| i < self.len)
                    .map(|i| (i, similarity(d)))
            })
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits
    }

    fn check_dim(&self, query: &[f32]) -> Result<(), VectorError> {
        if query.len() != self.dim {
            return Err(VectorError::Dim {
                expected: self.dim,
                got: query.len(),
            });
        }
        Ok(())
    }

    /// Saves vectors and graph to `path`, fsynced.
    pub fn write(&self, path: &Path) -> Result<(), VectorError> {
        self.index.save(utf8(path)?).map_err(ann_err)?;
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(io_err(path))
    }

    /// Memory-maps a file written by [`VectorIndex::write`], checking it holds `count`
    /// vectors of `dim`.
    pub fn open(path: &Path, dim: usize, count: usize) -> Result<VectorIndex, VectorError> {
        if !path.is_file() {
            return Err(io_err(path)(std::io::ErrorKind::NotFound.into()));
        }
        let index =
            usearch::Index::restore_view(utf8(path)?).map_err(|e| VectorError::Corrupt {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        if index.dimensions() != dim || index.size() != count {
            return Err(VectorError::Corrupt {
                path: path.to_path_buf(),
                reason: format!(
                    "{} vectors of {} dimensions, expected {count} of {dim}",
                    index.size(),
                    index.dimensions()
                ),
            });
        }
        index.change_expansion_search(EXPANSION_SEARCH);
        Ok(VectorIndex {
            dim,
            len: count,
            exact_max: EXACT_MAX_DOCS,
            index,
            rows: OnceLock::new(),
        })
    }
}

/// usearch's cosine distance back to a similarity.
fn similarity(distance: f32) -> f32 {
    1.0 - distance
}

/// usearch takes paths as `&str`.
fn utf8(path: &Path) -> Result<&str, VectorError> {
    path.to_str().ok_or_else(|| VectorError::Corrupt {
        path: path.to_path_buf(),
        reason: "path is not UTF-8".into(),
    })
}

/// Deterministic pseudo-random unit vectors (xorshift, no extra dependency): stand-ins
/// for embeddings in tests and benchmarks of the store, where only the geometry matters.
pub fn random_rows(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed.max(1);
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..n)
        .map(|_| normalized(&(0..dim).map(|_| next()).collect::<Vec<_>>()))
        .collect()
}

/// An embedder that answers with [`worded_row`]s under another embedder's model id and
/// dimension, so the index it builds opens like that model's: the benchmarks' way to build
/// and serve catalogs too large to embed on a small machine (`--synthetic-vectors`).
pub struct TextSeeded<'a, E>(pub &'a E);

impl<E: super::TextEmbedder> super::TextEmbedder for TextSeeded<'_, E> {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, super::EmbedError> {
        Ok(texts.iter().map(|t| worded_row(t, self.dim())).collect())
    }
}

/// A pseudo-random unit vector seeded by a text's bytes (FNV-1a), so the same text always
/// gets the same vector.
pub fn text_seeded_row(text: &str, dim: usize) -> Vec<f32> {
    random_rows(1, dim, fnv1a(text)).pop().unwrap_or_default()
}

/// The stand-in embedding of benchmarks that index catalogs too large to embed on a small
/// machine (`--synthetic-vectors`): the sum of a pseudo-random vector per distinct word of
/// the text ([`text_seeded_row`] of the lower-cased word) and half of one for the whole
/// text, normalised. Texts that share words get nearby vectors, as a real model's do; a
/// catalog of purely random vectors is the worst case for the HNSW graph (no neighbourhood
/// to walk, measured 3.5 times the build CPU of worded vectors at 20,000 rows), so its
/// build time said little about a real catalog's.
pub fn worded_row(text: &str, dim: usize) -> Vec<f32> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.sort_unstable();
    words.dedup();
    let mut v: Vec<f32> = text_seeded_row(text, dim)
        .into_iter()
        .map(|x| 0.5 * x)
        .collect();
    for w in &words {
        for (x, y) in v.iter_mut().zip(text_seeded_row(w, dim)) {
            *x += y;
        }
    }
    normalized(&v)
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
#[path = "vectors_tests.rs"]
pub(crate) mod tests;
