//! Query -> ranked endpoints: the product's core promise.
//!
//! Dense retrieval (local embeddings) understands paraphrase; BM25 catches exact words
//! (`playlist`, `queue`) that a small model blurs. Fusing both is what the RestBench
//! measurements favour (see `docs/results.md`), so hybrid is the default.

use crate::catalog::Endpoint;
use crate::index::catalog_index::EndpointIndex;
use crate::index::{Bm25, EmbedError, Embedder, StoreError};
use serde::{Deserialize, Serialize};

/// Which retrievers are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Retrieval {
    Dense,
    Lexical,
    #[default]
    Hybrid,
}

/// Ranking options.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    pub retrieval: Retrieval,
    /// Reciprocal-rank-fusion constant.
    pub rrf_k: f32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            retrieval: Retrieval::Hybrid,
            rrf_k: 60.0,
        }
    }
}

/// One ranked endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
    /// Position in the index (`Shortlister::endpoint`).
    pub position: usize,
    /// Higher is better; comparable within one result list only.
    pub score: f32,
}

/// Ranking failed.
#[derive(Debug, thiserror::Error)]
pub enum ShortlistError {
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Ranks the endpoints of an index for a query.
pub struct Shortlister {
    index: EndpointIndex,
    embedder: Embedder,
    bm25: Bm25,
    options: Options,
}

impl Shortlister {
    pub fn new(index: EndpointIndex, embedder: Embedder, options: Options) -> Shortlister {
        let bm25 = Bm25::build(index.texts());
        Shortlister {
            index,
            embedder,
            bm25,
            options,
        }
    }

    pub fn index(&self) -> &EndpointIndex {
        &self.index
    }

    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The endpoint at an index position.
    pub fn endpoint(&self, position: usize) -> &Endpoint {
        &self.index.records()[position]
    }

    /// All endpoints in index order.
    pub fn endpoints(&self) -> &[Endpoint] {
        self.index.records()
    }

    /// The top `k` endpoints for `query`, optionally only those of one API.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        api: Option<&str>,
    ) -> Result<Vec<Hit>, ShortlistError> {
        let n = self.index.len();
        if n == 0 || k == 0 {
            return Ok(Vec::new());
        }
        let allowed = |i: usize| api.is_none_or(|a| self.index.records()[i].api == a);
        let scores: Vec<f32> = match self.options.retrieval {
            Retrieval::Dense => self.dense(query)?,
            Retrieval::Lexical => self.bm25.scores(query),
            Retrieval::Hybrid => {
                let d = rank_positions(&self.dense(query)?);
                let l = rank_positions(&self.bm25.scores(query));
                (0..n)
                    .map(|i| {
                        1.0 / (self.options.rrf_k + d[i] as f32)
                            + 1.0 / (self.options.rrf_k + l[i] as f32)
                    })
                    .collect()
            }
        };
        let mut hits: Vec<Hit> = (0..n)
            .filter(|&i| allowed(i))
            .map(|i| Hit {
                position: i,
                score: scores[i],
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.position.cmp(&b.position))
        });
        hits.truncate(k);
        Ok(hits)
    }

    fn dense(&self, query: &str) -> Result<Vec<f32>, ShortlistError> {
        let q = self.embedder.embed_one(query)?;
        Ok(self.index.similarity_all(&q)?)
    }
}

/// 1-based rank of each position under descending scores.
fn rank_positions(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut rank = vec![0; scores.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r + 1;
    }
    rank
}
