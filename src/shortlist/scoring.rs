//! How one request text scores every endpoint: the dense cosines (exact, or the HNSW
//! graph's nearest on a large catalog), BM25, their fusion, the merge of a request's tasks,
//! and the weights the request's own words put on positions.

use super::{expand, fusion, tasks, Fusion, Retrieval, Scored, ShortlistError, Shortlister};

impl Shortlister {
    /// What the request's own words say about the endpoints it wants, read against what
    /// the catalog says, as one score multiplier per position (1 where they say nothing).
    /// Each rule has its weight in [`super::Options`] (1 turns it off):
    /// - the request says one sibling's last path word and not another's ([`siblings`]:
    ///   `next` and not `previous`): the other;
    /// - it names something (a quoted or capitalised phrase): reads that need no identifier
    ///   and look nothing up (`/movie/popular`), since a named thing is looked up first.
    pub(super) fn request_weights(&self, query: &str, chain: bool) -> Vec<f32> {
        let weigher = Weigher::new(self, query, chain);
        (0..self.index.len()).map(|i| weigher.weight(i)).collect()
    }

    /// Cosine similarity of every position to `vector`. Catalogs large enough to carry an
    /// HNSW graph ([`crate::index::ANN_MIN_DOCS`] endpoints and more) score only the graph's
    /// [`DENSE_CANDIDATES`] nearest and give the rest the lowest of those (0 once rescaled):
    /// scanning 100,000 vectors moves 150 MB per query text, the graph visits a few
    /// thousand. An API filter scans exactly, as the graph's nearest may all lie elsewhere.
    pub(super) fn dense(
        &self,
        vector: &[f32],
        allowed: &[bool],
    ) -> Result<Vec<f32>, ShortlistError> {
        let filtered = allowed.iter().any(|a| !a);
        if !self.index.vectors().has_ann() || filtered {
            return Ok(self.index.similarity_all(vector)?);
        }
        let (near, floor) = self.nearest(vector)?;
        let mut scores = vec![floor; allowed.len()];
        for (i, s) in near {
            if let Some(x) = scores.get_mut(i) {
                *x = s;
            }
        }
        Ok(scores)
    }

    /// The graph's nearest positions to `vector` with their cosines, and the score every
    /// other position takes: the lowest of them (0 once rescaled; 0 when there are none).
    pub(super) fn nearest(
        &self,
        vector: &[f32],
    ) -> Result<(Vec<(usize, f32)>, f32), ShortlistError> {
        let near = self.index.search(vector, self.dense_candidates)?;
        let floor = near.iter().map(|h| h.1).fold(f32::INFINITY, f32::min);
        let floor = if floor.is_finite() { floor } else { 0.0 };
        Ok((near, floor))
    }

    /// Scores of one text: dense, lexical or both fused.
    pub(super) fn score(
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
            _ => Some(self.index.lexical().scores(text)),
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

    /// Merges the scores of the whole query (first) and of its task parts ([`tasks::merge`]);
    /// with rank fusion, the rankings by reciprocal rank fusion and the confidences by taking
    /// the best (an endpoint that fits one task well is relevant even if it fits the whole
    /// query poorly).
    pub(super) fn combine(&self, scored: &[Scored], allowed: &[bool]) -> (Vec<f32>, Vec<f32>) {
        let options = &self.options;
        if scored.len() == 1 {
            return (scored[0].rank_score.clone(), scored[0].confidence.clone());
        }
        let parts: Vec<Vec<f32>> = scored[1..].iter().map(|s| s.confidence.clone()).collect();
        let confidence = tasks::merge(&scored[0].confidence, &parts, options.part_weight);
        if options.fusion == Fusion::Score {
            return (confidence.clone(), confidence);
        }
        let rankings: Vec<(Vec<usize>, f32)> = scored
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let w = if i == 0 { 1.0 } else { options.part_weight };
                (fusion::ranks(&s.rank_score, allowed), w)
            })
            .collect();
        (fusion::rrf(&rankings, options.rrf_k), confidence)
    }
}

/// The request weights ([`Shortlister::request_weights`]) one position at a time.
pub(super) struct Weigher<'a> {
    shortlister: &'a Shortlister,
    /// The request's stemmed words.
    said: Vec<String>,
    /// The sibling weight, when it is not 1.
    sibling: Option<f32>,
    /// The name-list weight, when the request names something and the weight is not 1.
    name_list: Option<f32>,
}

impl<'a> Weigher<'a> {
    pub(super) fn new(shortlister: &'a Shortlister, query: &str, chain: bool) -> Weigher<'a> {
        let o = &shortlister.options;
        let not_one = |w: f32| Some(w.clamp(0.0, 1.0)).filter(|&w| w != 1.0);
        Weigher {
            shortlister,
            said: crate::index::lexical::tokenize(query),
            sibling: not_one(o.sibling_weight),
            name_list: not_one(o.name_list_weight)
                .filter(|_| chain && expand::names_something(query)),
        }
    }

    /// The product of the weights that apply to position `i`, in rule order.
    pub(super) fn weight(&self, i: usize) -> f32 {
        let t = &self.shortlister.tables;
        let mut x = 1.0f32;
        if let Some(w) = self.sibling {
            if t.siblings.passed_over(i, &self.said) {
                x *= w;
            }
        }
        if let Some(w) = self.name_list {
            if t.safe[i] && t.graph.needs(i).is_empty() && !t.graph.is_lookup(i) {
                x *= w;
            }
        }
        x
    }
}
