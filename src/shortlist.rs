//! Query -> ranked endpoints: the product's core promise.
//!
//! The pipeline, each step an option so the evaluation can switch it off and measure it
//! (`shortlist eval`, results in `docs/results.md`):
//!
//! 1. **Retrieve**: dense retrieval (local embeddings) understands paraphrase; BM25 catches
//!    exact words (`playlist`, `queue`) that a small model blurs. Both are fused
//!    ([`fusion`]).
//! 2. **Split** a request that asks for several things into its tasks and rank each task
//!    too ([`tasks`]), so every task gets its own best matches near the top.
//! 3. **Expand**: an endpoint that needs an identifier the user cannot know brings along the
//!    endpoint that produces it ([`prereq`]).
//! 4. **Cut** the list short where relevance falls off ([`cut`]), so a client sees two or
//!    three tools rather than ten when two or three are what the task needs.

pub mod cut;
pub mod expand;
pub mod explain;
pub mod fusion;
pub mod matched;
mod pool;
pub mod prereq;
mod scoring;
pub mod siblings;
pub mod tables;
pub mod tasks;

use explain::Explained;
pub use fusion::Fusion;

use crate::catalog::Endpoint;
use crate::index::catalog_index::EndpointIndex;
use crate::index::{EmbedError, Embedder, StoreError};
use serde::{Deserialize, Serialize};

/// Endpoints ranked beyond `k` before the
/// head of the ranking is cut to `k`: room for the cut to drop some.
const HEAD_MARGIN: usize = 16;

/// Nearest neighbours taken from the HNSW graph per query text in large catalogs.
pub const DENSE_CANDIDATES: usize = 256;

/// Which retrievers are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Retrieval {
    Dense,
    Lexical,
    #[default]
    Hybrid,
}

/// Ranking options. The defaults are the best configuration measured on the development
/// suite (`shortlist eval --suite datasets/suite.toml`, docs/results.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    pub retrieval: Retrieval,
    /// How dense and lexical scores are combined (hybrid only).
    pub fusion: Fusion,
    /// Reciprocal-rank-fusion constant: larger flattens the difference between ranks.
    pub rrf_k: f32,
    /// Weight of the dense scores in score fusion (the lexical ones get the rest).
    pub dense_weight: f32,
    /// Rank each task of a multi-task request on its own and merge ([`tasks`]).
    pub split: bool,
    /// Weight of a task's scores against the whole request's (1) when merging.
    pub part_weight: f32,
    /// Add the endpoints that produce the identifiers shortlisted endpoints need.
    pub expand: bool,
    /// The rules that read a request as one chain of steps (prerequisite expansion, the
    /// name-list weight) apply to requests of at most this many tasks.
    pub chain_max_tasks: usize,
    /// When the query names something, the scores of reads that need no identifier and
    /// look nothing up are multiplied by this (1 leaves them alone).
    pub name_list_weight: f32,
    /// When the query says the last path word of one endpoint and none of a sibling's
    /// ([`siblings`]: `next` and not `previous`), the sibling's scores are multiplied by
    /// this (1 leaves them alone).
    pub sibling_weight: f32,
    /// Adaptive cut: stop the list at the first retrieved endpoint whose confidence is below
    /// this share of the best one's (`None` returns the full `k`). A request of more tasks
    /// than [`Options::chain_max_tasks`] keeps its first endpoint and each task's best
    /// ([`cut::ratio_for`]).
    pub cut: Option<f32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            retrieval: Retrieval::Hybrid,
            fusion: Fusion::Score,
            rrf_k: 60.0,
            dense_weight: 0.5,
            split: true,
            part_weight: 0.95,
            expand: true,
            chain_max_tasks: 2,
            name_list_weight: 0.7,
            sibling_weight: 0.8,
            cut: None,
        }
    }
}

impl Options {
    /// Whether a request of `tasks` tasks (0 when it was not split) may be one chain of
    /// steps, to which prerequisite expansion and the name-list weight apply: at most
    /// [`Options::chain_max_tasks`]. In a request of more, the list's room goes to the
    /// tasks themselves.
    pub fn chain(&self, tasks: usize) -> bool {
        tasks.max(1) <= self.chain_max_tasks
    }

    /// Whether the whole request's scores count beside its tasks': in a request that may be
    /// a chain of steps, not in a request of more tasks. There the tasks cover what is
    /// asked, and the whole request (the mean of its tasks) favours endpoints that fit the
    /// request's overall theme and no task in particular, taking the tasks' places:
    /// measured on the suite, leaving it out raised R@5 by 1.8 on socbench-dev and 0.3 on
    /// toolbench-dev (`docs/results.md`).
    pub fn whole_counts(&self, tasks: usize) -> bool {
        self.chain(tasks)
    }
}

/// One ranked endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
    /// Position in the index (`Shortlister::endpoint`).
    pub position: usize,
    /// Higher is better; comparable within one result list only. Never increases down a
    /// list.
    pub score: f32,
    /// Why it is in the list.
    pub source: Source,
}

/// Why an endpoint is in a result list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Ranked for the query (or one of its task parts).
    Query,
    /// Produces an identifier that the endpoint at this index position needs.
    Prerequisite(usize),
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
    tables: tables::Tables,
    options: Options,
    /// Nearest neighbours taken from the graph per query text ([`DENSE_CANDIDATES`]).
    dense_candidates: usize,
    /// Whether a graph-served catalog is ranked from its candidates ([`pool`]) rather than
    /// by scoring every endpoint (the same ranking, checked in `pool_tests.rs`).
    pooled: bool,
}

/// A request ready to rank: the whole text then its tasks, their embeddings (none for
/// lexical retrieval), and the positions in play (all when `None`).
pub(crate) struct Request {
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
    allowed: Option<Vec<bool>>,
}

/// Scores of one query text over all positions.
struct Scored {
    /// What the ranking sorts by.
    rank_score: Vec<f32>,
    /// Rescaled 0..=1 score fusion, whatever the ranking fusion: what the cut looks at.
    confidence: Vec<f32>,
}

impl Scored {
    /// The scores of a text that does not count: 0 everywhere.
    fn zero(n: usize) -> Scored {
        Scored {
            rank_score: vec![0.0; n],
            confidence: vec![0.0; n],
        }
    }
}

impl Shortlister {
    /// The shortlister of an index. Its ranking tables are read from the index; an index
    /// written without them (or with another version of them) is analysed now, which
    /// decodes every record.
    pub fn new(
        index: EndpointIndex,
        embedder: Embedder,
        options: Options,
    ) -> Result<Shortlister, ShortlistError> {
        let tables = Self::tables_of(&index)?;
        Ok(Self::from_parts(index, tables, embedder, options))
    }

    /// The ranking tables of `index` ([`Shortlister::new`]), for a caller that opens the
    /// index while the model loads.
    pub fn tables_of(index: &EndpointIndex) -> Result<tables::Tables, ShortlistError> {
        let path = index.dir().join("docs.bin");
        Ok(
            match tables::Tables::decode(index.extra(), index.len(), &path) {
                Ok(Some(t)) => t,
                stale => {
                    if let Err(e) = stale {
                        tracing::warn!(path = %e.path.display(), reason = %e.reason, "the index's ranking tables are damaged; analysing the records again");
                    }
                    let records: Vec<Endpoint> = index.records()?.into_iter().cloned().collect();
                    tables::Tables::build(&records)
                }
            },
        )
    }

    /// A shortlister from an index and its tables ([`Shortlister::tables_of`]).
    pub fn from_parts(
        index: EndpointIndex,
        tables: tables::Tables,
        embedder: Embedder,
        options: Options,
    ) -> Shortlister {
        Shortlister {
            index,
            embedder,
            tables,
            options,
            dense_candidates: DENSE_CANDIDATES,
            pooled: true,
        }
    }

    /// How a catalog served by the HNSW graph is ranked: `candidates` nearest neighbours
    /// per query text, and from those candidates and the BM25 matches alone (`pooled`) or
    /// by scoring every endpoint. The defaults ([`DENSE_CANDIDATES`], pooled) are what
    /// search uses; the others are for tests and measurements.
    pub fn set_graph_ranking(&mut self, candidates: usize, pooled: bool) {
        self.dense_candidates = candidates;
        self.pooled = pooled;
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

    /// Changes the ranking options; the index, model and analyses stay.
    pub fn set_options(&mut self, options: Options) {
        self.options = options;
    }

    /// Gives back the index and the model (to reuse the loaded model with another index).
    pub fn into_parts(self) -> (EndpointIndex, Embedder) {
        (self.index, self.embedder)
    }

    /// The endpoint at an index position, decoded on first use; `None` past the end or
    /// when the index file is damaged there.
    pub fn endpoint(&self, position: usize) -> Option<&Endpoint> {
        self.index.record(position)
    }

    /// Number of endpoints.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the index has no endpoints.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The per-endpoint tables ranking works from (API of each endpoint, prerequisites).
    pub fn tables(&self) -> &tables::Tables {
        &self.tables
    }

    /// What the endpoint at `position` needs and who produces it.
    pub fn prerequisites(&self, position: usize) -> &[prereq::Need] {
        self.tables.graph.needs(position)
    }

    /// The top `k` endpoints for `query`, optionally only those of one API. With a cut
    /// configured the list may be shorter than `k`.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        api: Option<&str>,
    ) -> Result<Vec<Hit>, ShortlistError> {
        let apis: Option<Vec<&str>> = api.map(|a| vec![a]);
        self.search_in(query, k, apis.as_deref())
    }

    /// [`Shortlister::search`] among the endpoints of any of `apis` (all when `None`).
    pub fn search_in(
        &self,
        query: &str,
        k: usize,
        apis: Option<&[&str]>,
    ) -> Result<Vec<Hit>, ShortlistError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        // The head of the ranking is all a search needs: every step after the ordering
        // (prerequisites, the cut, monotone scores) keeps prefixes, so the first k of a
        // longer head are the first k of the full ranking. The cut drops endpoints, so a cut
        // list that comes out short is ranked again with a longer head, from the same
        // embeddings.
        match self.prepare(query, apis)? {
            Some(request) => self.search_request(&request, k),
            None => Ok(Vec::new()),
        }
    }

    /// [`Shortlister::search_judged`] and [`Shortlister::explain`] of its hits, from one
    /// embedding of the request (the console's Try shows all three).
    pub fn search_explained(
        &self,
        query: &str,
        k: usize,
        apis: Option<&[&str]>,
    ) -> Result<(Vec<Hit>, Explained, Option<matched::Judgement>), ShortlistError> {
        let Some(request) = self.prepare(query, apis)? else {
            return Ok((Vec::new(), self.explain_nothing(query), None));
        };
        let (hits, judged) = self.search_and_judge(&request, k)?;
        let explained = self.explain_request(&request, &hits)?;
        Ok((hits, explained, judged))
    }

    /// The first `k` of a prepared request's ranking.
    fn search_request(&self, request: &Request, k: usize) -> Result<Vec<Hit>, ShortlistError> {
        let mut head = k + HEAD_MARGIN;
        loop {
            let mut hits = self.rank_request(request, head)?;
            if hits.len() >= k || head >= self.index.len() {
                hits.truncate(k);
                return Ok(hits);
            }
            head = head.saturating_mul(4);
        }
    }

    /// Every endpoint in play (all, or one API's) ranked for `query`, cut where the options
    /// say. `search(q, k)` is the first `k` of this list, so one ranking answers every k.
    pub fn rank(&self, query: &str, api: Option<&str>) -> Result<Vec<Hit>, ShortlistError> {
        let apis: Option<Vec<&str>> = api.map(|a| vec![a]);
        match self.prepare(query, apis.as_deref())? {
            Some(request) => self.rank_request(&request, usize::MAX),
            None => Ok(Vec::new()),
        }
    }

    /// A request read and embedded once for ranking (and explaining): `None` when no
    /// endpoint is in play (an empty index, or APIs that hold none).
    pub(crate) fn prepare(
        &self,
        query: &str,
        apis: Option<&[&str]>,
    ) -> Result<Option<Request>, ShortlistError> {
        let n = self.index.len();
        // Without a filter every endpoint is allowed, and a graph-served catalog is ranked
        // from its candidates without a table of every endpoint.
        let allowed: Option<Vec<bool>> =
            apis.map(|apis| (0..n).map(|i| apis.contains(&self.tables.api(i))).collect());
        if n == 0 || allowed.as_ref().is_some_and(|a| !a.contains(&true)) {
            return Ok(None);
        }
        let mut texts = vec![query.to_string()];
        if self.options.split {
            texts.extend(tasks::split(query));
        }
        let vectors = self.embed_request(&texts)?;
        Ok(Some(Request {
            texts,
            vectors,
            allowed,
        }))
    }

    /// [`Shortlister::rank`] of a prepared request from the best `head` endpoints of the
    /// ordering (plus the prerequisites they bring).
    fn rank_request(&self, request: &Request, head: usize) -> Result<Vec<Hit>, ShortlistError> {
        self.rank_texts(
            &request.texts[0],
            &request.texts,
            &request.vectors,
            request.allowed.clone(),
            head,
        )
    }

    /// The vectors of a request's `texts` (the whole request, then its tasks): none for
    /// lexical retrieval. For a request of many tasks only the tasks go to the model, and
    /// the whole request takes their weighted mean ([`tasks::whole_vector`]): those
    /// requests are the long ones, and the whole request's scores do not enter their
    /// ranking ([`Options::whole_counts`]); the vector serves the explanation.
    pub(crate) fn embed_request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ShortlistError> {
        if self.options.retrieval == Retrieval::Lexical {
            return Ok(Vec::new());
        }
        let tasks = texts.get(1..).unwrap_or_default();
        if !self.options.chain(tasks.len()) {
            let parts = self.embedder.embed_queries(tasks)?;
            if let Some(whole) = tasks::whole_vector(tasks, &parts) {
                let mut vectors = Vec::with_capacity(texts.len());
                vectors.push(whole);
                vectors.extend(parts);
                return Ok(vectors);
            }
        }
        Ok(self.embedder.embed_queries(texts)?)
    }

    /// The ranking of the request `texts` (the whole `query`, then its tasks) with their
    /// embeddings `vectors` (none for lexical retrieval), among the `allowed` positions
    /// (all when `None`), from the best `head` endpoints of the ordering.
    fn rank_texts(
        &self,
        query: &str,
        texts: &[String],
        vectors: &[Vec<f32>],
        allowed: Option<Vec<bool>>,
        head: usize,
    ) -> Result<Vec<Hit>, ShortlistError> {
        let n = self.index.len();
        // A request of few tasks may be one chain of steps (look a thing up, then act on
        // it); in a request of many, the list's room goes to the tasks themselves.
        let chain = self.options.chain(texts.len() - 1);
        let filtered = allowed.as_ref().is_some_and(|a| a.contains(&false));
        if !filtered && self.pool_applies() {
            if let Some((hits, _)) = self.pooled_ranking(query, texts, vectors, chain, head)? {
                return Ok(hits);
            }
        }
        let allowed = allowed.unwrap_or_else(|| vec![true; n]);
        // The whole text of a request of many tasks does not count: it is not scored.
        let whole_counts = self.options.whole_counts(texts.len() - 1);
        let mut scored = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            scored.push(if i == 0 && !whole_counts {
                Scored::zero(n)
            } else {
                self.score(t, vectors.get(i).map(Vec::as_slice), &allowed)?
            });
        }
        let weights = self.request_weights(query, chain);
        for sc in scored.iter_mut() {
            for (i, w) in weights.iter().enumerate() {
                sc.rank_score[i] *= w;
                sc.confidence[i] *= w;
            }
        }
        // The best endpoint of each task part: the cut keeps it, so a request for three
        // things is not cut down to the one the whole sentence matches best.
        let cuts = self.options.cut.is_some();
        let part_tops: Vec<usize> = scored
            .iter()
            .skip(1)
            .filter(|_| cuts)
            .filter_map(|sc| {
                fusion::order_top(&sc.rank_score, &allowed, 1)
                    .first()
                    .copied()
            })
            .collect();
        let (rank_score, confidence) = self.combine(&scored, &allowed);
        let mut hits: Vec<Hit> = fusion::order_top(&rank_score, &allowed, head)
            .into_iter()
            .map(|p| Hit {
                position: p,
                score: rank_score[p],
                source: Source::Query,
            })
            .collect();
        if self.options.expand && chain {
            let names = expand::names_something(query);
            hits = expand::expand(
                &hits,
                &|p| rank_score[p],
                &self.tables.graph,
                &|p| allowed[p],
                names,
            );
        }
        if let Some(ratio) = self.options.cut {
            let ratio = cut::ratio_for(ratio, chain);
            hits = cut::cut(hits, &|p| confidence[p], ratio, &part_tops);
        }
        Ok(cut::monotone(hits))
    }
}
