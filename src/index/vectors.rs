//! The vector half of the index: a flat matrix of unit vectors, searched exactly by brute
//! force, plus an optional usearch HNSW graph for catalogs too large for that.
//!
//! Why the scan is the default, measured on 2 cores, release build, 384 dims, 200 queries:
//!
//! | vectors | scan (exact)  | usearch HNSW       | recall@10 | graph build |
//! |--------:|--------------:|-------------------:|----------:|------------:|
//! |     100 |   9 us        |  21 us             | 1.000     | 2 ms        |
//! |   2,000 | 155 us        | 227 us             | 0.953     | 0.37 s      |
//! |  10,000 | 0.99 ms       | 1.16 ms            | 0.597     | 7.8 s       |
//!
//! (random unit vectors, the hardest case for HNSW; usearch is built without its SIMD
//! feature). The scan is exact and still faster at 10k, so the graph is only written for
//! indexes above [`ANN_MIN_DOCS`], where a scan would cost several milliseconds per query.
//! The flat matrix is also what lets a rebuild reuse unchanged vectors without asking
//! usearch to give them back.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use usearch::ffi::{IndexOptions, MetricKind, ScalarKind};

/// Indexes with more vectors than this get a usearch graph and approximate search; up to
/// it, search scans every vector (exact; about 5 ms at this size in a release build).
pub const ANN_MIN_DOCS: usize = 50_000;

/// HNSW breadth at query time. usearch's default (64) measured lower recall@10 than this
/// at 10k vectors of 384 dims, at small cost.
const EXPANSION_SEARCH: usize = 128;

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

/// Unit vectors in row order, row `i` belonging to document `i`.
pub struct VectorIndex {
    dim: usize,
    data: Vec<f32>,
    ann: Option<usearch::Index>,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dim", &self.dim)
            .field("len", &self.len())
            .field("ann", &self.ann.is_some())
            .finish()
    }
}

impl VectorIndex {
    /// An index over `rows` (normalised here), without an HNSW graph.
    pub fn from_rows(dim: usize, rows: &[Vec<f32>]) -> Result<VectorIndex, VectorError> {
        let mut data = Vec::with_capacity(rows.len() * dim);
        for r in rows {
            if r.len() != dim {
                return Err(VectorError::Dim {
                    expected: dim,
                    got: r.len(),
                });
            }
            data.extend(normalized(r));
        }
        Ok(VectorIndex {
            dim,
            data,
            ann: None,
        })
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i`, if it exists.
    pub fn row(&self, i: usize) -> Option<&[f32]> {
        self.data.get(i * self.dim..(i + 1) * self.dim)
    }

    /// Whether an HNSW graph is loaded.
    pub fn has_ann(&self) -> bool {
        self.ann.is_some()
    }

    /// Cosine similarity of `query` to every row, in row order.
    pub fn similarity_all(&self, query: &[f32]) -> Result<Vec<f32>, VectorError> {
        self.check_dim(query)?;
        let q = normalized(query);
        Ok(self
            .data
            .chunks_exact(self.dim.max(1))
            .map(|row| dot(row, &q))
            .collect())
    }

    /// The `k` most similar rows with their cosine similarity, best first, ties by row.
    /// Approximate when a graph is loaded ([`VectorIndex::build_ann`] or
    /// [`VectorIndex::load_ann`]), exact otherwise.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, VectorError> {
        self.check_dim(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        match &self.ann {
            Some(ann) => self.search_ann(ann, query, k),
            _ => self.search_exact(query, k),
        }
    }

    /// Brute-force top `k`.
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>, VectorError> {
        let mut hits: Vec<(usize, f32)> = self
            .similarity_all(query)?
            .into_iter()
            .enumerate()
            .collect();
        let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if k < hits.len() {
            hits.select_nth_unstable_by(k - 1, by_score);
            hits.truncate(k);
        }
        hits.sort_by(by_score);
        Ok(hits)
    }

    /// HNSW top `k`; falls back to the exact scan if the graph is missing or fails.
    pub fn search_ann_or_exact(
        &self,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(usize, f32)>, VectorError> {
        self.check_dim(query)?;
        match &self.ann {
            Some(ann) if k > 0 && !self.is_empty() => self.search_ann(ann, query, k),
            _ => self.search_exact(query, k),
        }
    }

    fn search_ann(
        &self,
        ann: &usearch::Index,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(usize, f32)>, VectorError> {
        let q = normalized(query);
        match ann.search(&q, k) {
            Ok(m) => {
                let mut hits: Vec<(usize, f32)> = m
                    .keys
                    .iter()
                    .zip(&m.distances)
                    .filter_map(|(&key, &d)| {
                        usize::try_from(key)
                            .ok()
                            .filter(|&i| i < self.len())
                            .map(|i| (i, 1.0 - d))
                    })
                    .collect();
                hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                Ok(hits)
            }
            Err(e) => {
                tracing::warn!(error = %e, "usearch search failed; scanning instead");
                self.search_exact(query, k)
            }
        }
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

    /// Builds the HNSW graph over the current rows (keys are row numbers).
    pub fn build_ann(&mut self) -> Result<(), VectorError> {
        let options = IndexOptions {
            dimensions: self.dim,
            metric: MetricKind::Cos,
            quantization: ScalarKind::F32,
            connectivity: 0,
            expansion_add: 0,
            expansion_search: EXPANSION_SEARCH,
            multi: false,
        };
        let ann = usearch::Index::new(&options).map_err(ann_err)?;
        ann.reserve(self.len()).map_err(ann_err)?;
        for (i, row) in self.data.chunks_exact(self.dim.max(1)).enumerate() {
            ann.add(i as u64, row).map_err(ann_err)?;
        }
        self.ann = Some(ann);
        Ok(())
    }

    /// Writes the rows as little-endian f32 to `path` and fsyncs it.
    pub fn write_flat(&self, path: &Path) -> Result<(), VectorError> {
        let file = File::create(path).map_err(io_err(path))?;
        let mut w = BufWriter::new(file);
        for x in &self.data {
            w.write_all(&x.to_le_bytes()).map_err(io_err(path))?;
        }
        let file = w.into_inner().map_err(|e| io_err(path)(e.into_error()))?;
        file.sync_all().map_err(io_err(path))
    }

    /// Reads `count` rows of `dim` from a file written by [`VectorIndex::write_flat`].
    pub fn read_flat(path: &Path, dim: usize, count: usize) -> Result<VectorIndex, VectorError> {
        let expected = count.checked_mul(dim).and_then(|n| n.checked_mul(4));
        let file = File::open(path).map_err(io_err(path))?;
        let actual = file.metadata().map_err(io_err(path))?.len();
        if expected.map(|e| e as u64) != Some(actual) {
            return Err(VectorError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("{actual} bytes, expected {count} vectors of {dim} f32"),
            });
        }
        let mut bytes = Vec::with_capacity(actual as usize);
        BufReader::new(file)
            .read_to_end(&mut bytes)
            .map_err(io_err(path))?;
        let data = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(VectorIndex {
            dim,
            data,
            ann: None,
        })
    }

    /// Saves the HNSW graph (building it first if needed) to `path`, fsynced.
    pub fn write_ann(&mut self, path: &Path) -> Result<(), VectorError> {
        if self.ann.is_none() {
            self.build_ann()?;
        }
        let Some(ann) = &self.ann else { return Ok(()) };
        let p = utf8(path)?;
        ann.save(p).map_err(ann_err)?;
        File::open(path)
            .and_then(|f| f.sync_all())
            .map_err(io_err(path))
    }

    /// Loads a graph saved by [`VectorIndex::write_ann`], checking it matches the rows.
    pub fn load_ann(&mut self, path: &Path) -> Result<(), VectorError> {
        let ann = usearch::Index::restore(utf8(path)?).map_err(ann_err)?;
        if ann.dimensions() != self.dim || ann.size() != self.len() {
            return Err(VectorError::Corrupt {
                path: path.to_path_buf(),
                reason: format!(
                    "graph has {} x {}, vectors are {} x {}",
                    ann.size(),
                    ann.dimensions(),
                    self.len(),
                    self.dim
                ),
            });
        }
        ann.change_expansion_search(EXPANSION_SEARCH);
        self.ann = Some(ann);
        Ok(())
    }
}

/// usearch takes paths as `&str`.
fn utf8(path: &Path) -> Result<&str, VectorError> {
    path.to_str().ok_or_else(|| VectorError::Corrupt {
        path: path.to_path_buf(),
        reason: "path is not UTF-8".into(),
    })
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four accumulators let the compiler vectorise without -ffast-math reassociation.
    let mut acc = [0.0f32; 4];
    let mut ca = a.chunks_exact(4);
    let mut cb = b.chunks_exact(4);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for i in 0..4 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    acc[0] + acc[1] + acc[2] + acc[3] + tail
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic pseudo-random unit vectors (xorshift), no extra dependency.
    pub(crate) fn random_rows(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
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

    #[test]
    fn exact_search_matches_naive_cosine() {
        let rows = random_rows(50, 16, 7);
        let idx = VectorIndex::from_rows(16, &rows).unwrap();
        let q: Vec<f32> = rows[3].iter().map(|x| x * 2.0).collect();
        let hits = idx.search(&q, 5).unwrap();
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].0, 3);
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
        let all = idx.similarity_all(&q).unwrap();
        let mut naive: Vec<(usize, f32)> = all.iter().copied().enumerate().collect();
        naive.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            naive[..5].iter().map(|h| h.0).collect::<Vec<_>>()
        );
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    #[test]
    fn bad_input_is_an_error_or_empty_never_a_panic() {
        let idx = VectorIndex::from_rows(4, &random_rows(3, 4, 1)).unwrap();
        assert!(matches!(
            idx.search(&[1.0; 3], 2),
            Err(VectorError::Dim { .. })
        ));
        assert!(idx.search(&[0.0; 4], 0).unwrap().is_empty());
        assert_eq!(idx.search(&[0.0; 4], 10).unwrap().len(), 3);
        assert!(idx
            .search(&[f32::NAN; 4], 2)
            .unwrap()
            .iter()
            .all(|h| h.1 == 0.0));
        assert!(VectorIndex::from_rows(4, &[vec![1.0; 5]]).is_err());
        let empty = VectorIndex::from_rows(4, &[]).unwrap();
        assert!(empty.search(&[1.0; 4], 3).unwrap().is_empty());
    }

    #[test]
    fn flat_and_ann_files_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let rows = random_rows(40, 8, 3);
        let mut idx = VectorIndex::from_rows(8, &rows).unwrap();
        idx.write_flat(&dir.path().join("v.f32")).unwrap();
        idx.write_ann(&dir.path().join("i.usearch")).unwrap();

        let mut back = VectorIndex::read_flat(&dir.path().join("v.f32"), 8, 40).unwrap();
        assert_eq!(back.row(39), idx.row(39));
        assert!(back.row(40).is_none());
        back.load_ann(&dir.path().join("i.usearch")).unwrap();
        let q = &rows[11];
        assert_eq!(back.search_ann_or_exact(q, 1).unwrap()[0].0, 11);
        assert!(matches!(
            VectorIndex::read_flat(&dir.path().join("v.f32"), 8, 41),
            Err(VectorError::Corrupt { .. })
        ));
        std::fs::write(dir.path().join("bad.usearch"), b"not an index").unwrap();
        assert!(back.load_ann(&dir.path().join("bad.usearch")).is_err());
    }

    /// usearch on tiny indexes: does HNSW agree with exact cosine for catalog-sized inputs?
    #[test]
    fn usearch_on_small_catalogs_agrees_with_exact_top_5() {
        for n in [1, 2, 5, 9, 40, 54, 100] {
            let rows = random_rows(n, 384, n as u64 + 11);
            let mut idx = VectorIndex::from_rows(384, &rows).unwrap();
            idx.build_ann().unwrap();
            for q in random_rows(20, 384, 99) {
                let exact: Vec<usize> = idx
                    .search_exact(&q, 5)
                    .unwrap()
                    .iter()
                    .map(|h| h.0)
                    .collect();
                let ann: Vec<usize> = idx
                    .search_ann_or_exact(&q, 5)
                    .unwrap()
                    .iter()
                    .map(|h| h.0)
                    .collect();
                assert_eq!(exact, ann, "n={n}");
            }
        }
    }

    /// Timings for the report: `cargo test --release -- --ignored --nocapture search_timing`.
    #[test]
    #[ignore]
    fn search_timing() {
        use std::time::Instant;
        for n in [100, 2_000, 10_000] {
            let rows = random_rows(n, 384, 5);
            let mut idx = VectorIndex::from_rows(384, &rows).unwrap();
            let t = Instant::now();
            idx.build_ann().unwrap();
            let build = t.elapsed();
            let queries = random_rows(200, 384, 6);
            let t = Instant::now();
            let exact: Vec<Vec<usize>> = queries
                .iter()
                .map(|q| {
                    idx.search_exact(q, 10)
                        .unwrap()
                        .iter()
                        .map(|h| h.0)
                        .collect()
                })
                .collect();
            let brute = t.elapsed() / queries.len() as u32;
            let t = Instant::now();
            let ann: Vec<Vec<usize>> = queries
                .iter()
                .map(|q| {
                    idx.search_ann_or_exact(q, 10)
                        .unwrap()
                        .iter()
                        .map(|h| h.0)
                        .collect()
                })
                .collect();
            let hnsw = t.elapsed() / queries.len() as u32;
            let found: usize = exact
                .iter()
                .zip(&ann)
                .map(|(e, a)| e.iter().filter(|i| a.contains(i)).count())
                .sum();
            let recall = found as f32 / (10 * queries.len()) as f32;
            println!("n={n}: brute {brute:?}/query, usearch {hnsw:?}/query (recall@10 {recall:.3}), graph build {build:?}");
        }
    }
}
