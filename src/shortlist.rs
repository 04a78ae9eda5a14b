//! Query -> ranked endpoints: the product's core promise.
//!
//! The pipeline, each step an option so the evaluation can switch it off and measure it
//! (`shortlist eval`, results in `docs/results.md`):
//!
//! 1. **Retrieve**: dense retrieval (local embeddings) understands paraphrase; BM25 catches
//!    exact words (`playlist`, `queue`) that a small model blurs. Both are fused
//!    ([`fusion`]).
//! 2. **Split** a query that asks for several things into its parts and rank each part too
//!    ([`intents`]), so every task gets its own best match.
//! 3. **Expand**: an endpoint that needs an identifier the user cannot know brings along the
//!    endpoint that produces it ([`prereq`]).
//! 4. **Cut** the list short where relevance falls off ([`cut`]), so a client sees two or
//!    three tools rather than ten when two or three are what the task needs.

pub mod cut;
pub mod expand;
pub mod fusion;
pub mod intents;
pub mod named;
pub mod prereq;
pub mod questions;
pub mod removal;
pub mod siblings;

pub use fusion::Fusion;

use crate::catalog::Endpoint;
use crate::index::catalog_index::EndpointIndex;
use crate::index::{Bm25, EmbedError, Embedder, StoreError};
use serde::{Deserialize, Serialize};

/// Endpoints ranked beyond `k` (and beyond the phrase tops' insertion point) before the
/// head of the ranking is cut to `k`: room for the cut to drop some.
const HEAD_MARGIN: usize = 16;

/// Nearest neighbours taken from the HNSW graph per query text in large catalogs.
const DENSE_CANDIDATES: usize = 256;

/// Which retrievers are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Retrieval {
    Dense,
    Lexical,
    #[default]
    Hybrid,
}

/// Ranking options. The defaults are the best configuration measured on RestBench.
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
    /// Rank the parts of a multi-task query separately and merge.
    pub split: bool,
    /// Weight of each part against the whole query (1) when merging.
    pub part_weight: f32,
    /// Also rank each phrase of a chained request ("the birthday | of the lead actor | of
    /// Titanic") and put each phrase's best endpoints into the list.
    pub clauses: bool,
    /// How many of each phrase's best endpoints are put in.
    pub clause_top: usize,
    /// They go after this many endpoints of the whole query's ranking.
    pub clause_after: usize,
    /// Add the endpoints that produce the identifiers shortlisted endpoints need.
    pub expand: bool,
    /// When the query names something, the scores of reads that need no identifier and
    /// look nothing up are multiplied by this (1 leaves them alone).
    pub name_list_weight: f32,
    /// Unless the query asks to remove something ([`removal`]), the scores of `DELETE`
    /// endpoints are multiplied by this (1 leaves them alone).
    pub unasked_delete_weight: f32,
    /// When the query names a person or says the kind of a thing it names ([`named`]),
    /// the scores of endpoints that work on no such kind are multiplied by this (1 leaves
    /// them alone).
    pub named_kind_weight: f32,
    /// When the query says the last path word of one endpoint and none of a sibling's
    /// ([`siblings`]: `next` and not `previous`), the sibling's scores are multiplied by
    /// this (1 leaves them alone).
    pub sibling_weight: f32,
    /// When the query asks for a person ("Who directed ...", "the lead actor of ..."),
    /// the scores of endpoints that return no people ([`named::returns_people`]) are
    /// multiplied by this (1 leaves them alone).
    pub people_weight: f32,
    /// When the query only asks a question ([`questions`]), the scores of endpoints that
    /// change something (not `GET`/`HEAD`) are multiplied by this (1 leaves them alone).
    pub question_write_weight: f32,
    /// Adaptive cut: stop the list at the first retrieved endpoint whose confidence is below
    /// this share of the best one's (`None` returns the full `k`).
    pub cut: Option<f32>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            retrieval: Retrieval::Hybrid,
            fusion: Fusion::Score,
            rrf_k: 60.0,
            dense_weight: 0.5,
            split: false,
            // Measured: with the full doc text, phrase ranking costs recall (TMDB R@5
            // 73.7 -> 70.9) and doubles the query's embedding time.
            clauses: false,
            part_weight: 1.0,
            clause_top: 1,
            clause_after: 2,
            expand: true,
            name_list_weight: 0.7,
            // Measured: recall@5 and @10 unchanged on RestBench, F1 of the cut list up (and
            // no deletion offered for a request to save).
            unasked_delete_weight: 0.6,
            named_kind_weight: 0.7,
            sibling_weight: 0.8,
            people_weight: 0.7,
            question_write_weight: 0.7,
            cut: None,
        }
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
    /// The best match of one phrase of a chained request.
    Phrase,
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
    bm25: Bm25,
    graph: prereq::Graph,
    siblings: siblings::Siblings,
    /// Whether each endpoint returns people ([`named::returns_people`]); `None` when none
    /// does, so a catalog without people pays nothing per query.
    people: Option<Vec<bool>>,
    options: Options,
}

/// Scores of one query text over all positions.
struct Scored {
    /// What the ranking sorts by.
    rank_score: Vec<f32>,
    /// Rescaled 0..=1 score fusion, whatever the ranking fusion: what the cut looks at.
    confidence: Vec<f32>,
}

impl Shortlister {
    pub fn new(index: EndpointIndex, embedder: Embedder, options: Options) -> Shortlister {
        let bm25 = index.lexical().clone();
        let graph = prereq::Graph::build(index.records());
        let siblings = siblings::Siblings::build(index.records());
        let people: Vec<bool> = index.records().iter().map(named::returns_people).collect();
        let people = people.contains(&true).then_some(people);
        Shortlister {
            index,
            embedder,
            bm25,
            graph,
            siblings,
            people,
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

    /// Changes the ranking options; the index, model and analyses stay.
    pub fn set_options(&mut self, options: Options) {
        self.options = options;
    }

    /// Gives back the index and the model (to reuse the loaded model with another index).
    pub fn into_parts(self) -> (EndpointIndex, Embedder) {
        (self.index, self.embedder)
    }

    /// The endpoint at an index position.
    pub fn endpoint(&self, position: usize) -> &Endpoint {
        &self.index.records()[position]
    }

    /// All endpoints in index order.
    pub fn endpoints(&self) -> &[Endpoint] {
        self.index.records()
    }

    /// What the endpoint at `position` needs and who produces it.
    pub fn prerequisites(&self, position: usize) -> &[prereq::Need] {
        self.graph.needs(position)
    }

    /// The top `k` endpoints for `query`, optionally only those of one API. With a cut
    /// configured the list may be shorter than `k`.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        api: Option<&str>,
    ) -> Result<Vec<Hit>, ShortlistError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        // The head of the ranking is all a search needs: every step after the ordering
        // (phrase tops, prerequisites, the cut, monotone scores) keeps prefixes, so the first
        // k of a longer head are the first k of the full ranking. The cut drops endpoints, so
        // a cut list that comes out short is ranked again with a longer head.
        let mut head = k.max(self.options.clause_after) + HEAD_MARGIN;
        loop {
            let mut hits = self.rank_head(query, api, head)?;
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
        self.rank_head(query, api, usize::MAX)
    }

    /// [`Shortlister::rank`] from the best `head` endpoints of the ordering (plus the phrase
    /// tops and prerequisites they bring).
    fn rank_head(
        &self,
        query: &str,
        api: Option<&str>,
        head: usize,
    ) -> Result<Vec<Hit>, ShortlistError> {
        let n = self.index.len();
        let allowed: Vec<bool> = self
            .endpoints()
            .iter()
            .map(|e| api.is_none_or(|a| e.api == a))
            .collect();
        if n == 0 || !allowed.contains(&true) {
            return Ok(Vec::new());
        }
        let mut texts = vec![query.to_string()];
        if self.options.split {
            let parts = intents::split(query);
            if parts.len() > 1 {
                texts.extend(parts);
            }
        }
        let parts = texts.len();
        if self.options.clauses {
            texts.extend(intents::clauses(query));
        }
        let vectors = match self.options.retrieval {
            Retrieval::Lexical => Vec::new(),
            _ => self.embedder.embed(&texts)?,
        };
        let mut scored = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            scored.push(self.score(t, vectors.get(i).map(Vec::as_slice), &allowed)?);
        }
        let clauses = scored.split_off(parts);
        let weights = self.request_weights(query);
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
        let (rank_score, confidence) = combine(&scored, &allowed, &self.options);
        let mut hits: Vec<Hit> = fusion::order_top(&rank_score, &allowed, head)
            .into_iter()
            .map(|p| Hit {
                position: p,
                score: rank_score[p],
                source: Source::Query,
            })
            .collect();
        if !clauses.is_empty() {
            let tops: Vec<Vec<usize>> = clauses
                .iter()
                .map(|c| fusion::order_top(&c.rank_score, &allowed, self.options.clause_top))
                .collect();
            hits = intents::insert_tops(
                hits,
                &rank_score,
                &tops,
                self.options.clause_top,
                self.options.clause_after,
            );
        }
        if self.options.expand {
            let names = expand::names_something(query);
            hits = expand::expand(&hits, &rank_score, &self.graph, &allowed, names);
        }
        if let Some(ratio) = self.options.cut {
            hits = cut::cut(hits, &confidence, ratio, &part_tops);
        }
        Ok(cut::monotone(hits))
    }

    /// What the request's own words say about the endpoints it wants, as one score
    /// multiplier per position (1 where they say nothing). Each rule has its weight in
    /// [`Options`] (1 turns it off):
    /// - the query names something: reads that need no identifier and look nothing up
    ///   (`/movie/popular`, `/tv/latest`) are rarely a step, since the named thing has to be
    ///   looked up and what follows acts on it by identifier;
    /// - it asks to remove nothing ([`removal`]): `DELETE` endpoints;
    /// - it asks for a person ([`named::asks_for_person`]): endpoints that return no people;
    /// - it only asks a question ([`questions`]): endpoints that change something;
    /// - it says one sibling's last path word and not another's ([`siblings`]): the other;
    /// - it names a person or a thing of a said kind ([`named`]): endpoints that work on no
    ///   such kind.
    fn request_weights(&self, query: &str) -> Vec<f32> {
        let o = &self.options;
        let mut weights = vec![1.0f32; self.index.len()];
        let mut weigh = |w: f32, which: &dyn Fn(usize) -> bool| {
            let w = w.clamp(0.0, 1.0);
            if w != 1.0 {
                for (i, x) in weights.iter_mut().enumerate() {
                    if which(i) {
                        *x *= w;
                    }
                }
            }
        };
        if expand::names_something(query) {
            weigh(o.name_list_weight, &|i| {
                self.endpoint(i).method.is_safe()
                    && self.graph.needs(i).is_empty()
                    && !self.graph.is_lookup(i)
            });
        }
        if !removal::asks_to_remove(query) {
            weigh(o.unasked_delete_weight, &|i| {
                self.endpoint(i).method == crate::catalog::Method::Delete
            });
        }
        if let Some(people) = self
            .people
            .as_ref()
            .filter(|_| named::asks_for_person(query))
        {
            weigh(o.people_weight, &|i| !people[i]);
        }
        if !questions::asks_to_change(query) {
            weigh(o.question_write_weight, &|i| {
                !self.endpoint(i).method.is_safe()
            });
        }
        let said = crate::index::lexical::tokenize(query);
        weigh(o.sibling_weight, &|i| self.siblings.passed_over(i, &said));
        let is_noun = |s: &str| self.graph.is_path_noun(s);
        let person = named::names_person(query, is_noun);
        let typed = named::typed_name(query, is_noun);
        if person || typed.is_some() {
            let kind =
                |n: &str| (person && named::is_person_noun(n)) || typed.as_deref() == Some(n);
            weigh(o.named_kind_weight, &|i| !self.graph.works_on(i, kind));
        }
        weights
    }

    /// Cosine similarity of every position to `vector`. Catalogs large enough to carry an
    /// HNSW graph ([`crate::index::ANN_MIN_DOCS`] endpoints and more) score only the graph's
    /// [`DENSE_CANDIDATES`] nearest and give the rest the lowest of those (0 once rescaled):
    /// scanning 100,000 vectors moves 150 MB per query text, the graph visits a few
    /// thousand. An API filter scans exactly, as the graph's nearest may all lie elsewhere.
    fn dense(&self, vector: &[f32], allowed: &[bool]) -> Result<Vec<f32>, ShortlistError> {
        let filtered = allowed.iter().any(|a| !a);
        if !self.index.vectors().has_ann() || filtered {
            return Ok(self.index.similarity_all(vector)?);
        }
        let near = self.index.search(vector, DENSE_CANDIDATES)?;
        let floor = near.iter().map(|h| h.1).fold(f32::INFINITY, f32::min);
        let floor = if floor.is_finite() { floor } else { 0.0 };
        let mut scores = vec![floor; allowed.len()];
        for (i, s) in near {
            if let Some(x) = scores.get_mut(i) {
                *x = s;
            }
        }
        Ok(scores)
    }

    /// Scores of one text: dense, lexical or both fused.
    fn score(
        &self,
        text: &str,
        vector: Option<&[f32]>,
        allowed: &[bool],
    ) -> Result<Scored, ShortlistError> {
        let dense = match vector {
            Some(v) => Some(self.dense(v, allowed)?),
            None => None,
        };
        let lexical = match self.options.retrieval {
            Retrieval::Dense => None,
            _ => Some(self.bm25.scores(text)),
        };
        let d = dense.as_deref().map(|d| fusion::rescale(d, allowed));
        let l = lexical.as_deref().map(|l| fusion::rescale(l, allowed));
        let w = self.options.dense_weight.clamp(0.0, 1.0);
        let confidence: Vec<f32> = match (&d, &l) {
            (Some(d), Some(l)) => d
                .iter()
                .zip(l)
                .map(|(a, b)| w * a + (1.0 - w) * b)
                .collect(),
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (None, None) => vec![0.0; allowed.len()],
        };
        let rank_score = match (&dense, &lexical, self.options.fusion) {
            (Some(dense), Some(lexical), Fusion::Rrf) => fusion::rrf(
                &[
                    (fusion::ranks(dense, allowed), 1.0),
                    (fusion::ranks(lexical, allowed), 1.0),
                ],
                self.options.rrf_k,
            ),
            (Some(_), Some(_), Fusion::Score) => confidence.clone(),
            (Some(x), None, _) | (None, Some(x), _) => x.clone(),
            (None, None, _) => vec![0.0; allowed.len()],
        };
        Ok(Scored {
            rank_score,
            confidence,
        })
    }
}

/// Merges the scores of the whole query (first) and of its parts: rankings by reciprocal
/// rank fusion, confidences by taking the best (an endpoint that fits one task well is
/// relevant even if it fits the whole query poorly).
fn combine(scored: &[Scored], allowed: &[bool], options: &Options) -> (Vec<f32>, Vec<f32>) {
    if scored.len() == 1 {
        return (scored[0].rank_score.clone(), scored[0].confidence.clone());
    }
    let rankings: Vec<(Vec<usize>, f32)> = scored
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let w = if i == 0 { 1.0 } else { options.part_weight };
            (fusion::ranks(&s.rank_score, allowed), w)
        })
        .collect();
    let rank_score = fusion::rrf(&rankings, options.rrf_k);
    let confidence = (0..allowed.len())
        .map(|i| {
            scored
                .iter()
                .map(|s| s.confidence[i])
                .fold(0.0f32, f32::max)
        })
        .collect();
    (rank_score, confidence)
}
