//! Why each endpoint of a result list is there: the parts of its score, read back from the
//! same signals the ranking used.
//!
//! A person checking a catalog wants to know whether a tool was offered because the
//! request's meaning matched (dense), because its words did (lexical), because one task of
//! a split request wanted it, or because another hit needs an identifier it produces.
//! [`Shortlister::explain`] recomputes those parts for the hits of a finished ranking; it
//! never reorders or rescores them, so what it explains is the ranking clients get.

use super::{expand, fusion, tasks, Hit, Request, Retrieval, ShortlistError, Shortlister, Source};
use serde::Serialize;

/// Where a hit came from, in the words a reviewer reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// Ranked for the whole request.
    Request,
    /// Ranked for one task of a split request (`task`: index into [`Explained::tasks`]).
    TaskPart { task: usize },
    /// Added because the hit at index position `for_position` needs what it produces.
    Prerequisite { for_position: usize },
}

/// The parts of one hit's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub position: usize,
    /// The hit's score in the list (unchanged).
    pub score: f32,
    pub origin: Origin,
    /// Cosine similarity of the request's embedding and the endpoint's (dense retrieval).
    pub dense_cosine: Option<f32>,
    /// That similarity rescaled 0..=1 among the endpoints in play, as fusion sees it.
    pub dense: Option<f32>,
    /// BM25 score of the request's words in the endpoint's text (lexical retrieval).
    pub lexical_bm25: Option<f32>,
    /// BM25 rescaled 0..=1 among the endpoints in play.
    pub lexical: Option<f32>,
    /// Fused 0..=1 score for the whole request.
    pub request: f32,
    /// Best weighted fused score among the task parts, with the part's index.
    pub best_task: Option<(usize, f32)>,
    /// Multiplier from the request's own words (1: none applied).
    pub weight: f32,
    /// Why the weight is below 1, if it is.
    pub weight_reasons: Vec<&'static str>,
}

/// A result list explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explained {
    /// The task parts the request was split into (empty: it asks for one thing).
    pub tasks: Vec<String>,
    pub hits: Vec<Explanation>,
}

impl Shortlister {
    /// Explains `hits`, the result of `search(query, _, api)` on this shortlister.
    pub fn explain(
        &self,
        query: &str,
        apis: Option<&[&str]>,
        hits: &[Hit],
    ) -> Result<Explained, ShortlistError> {
        if hits.is_empty() {
            return Ok(self.explain_nothing(query));
        }
        match self.prepare(query, apis)? {
            Some(request) => self.explain_request(&request, hits),
            None => Ok(self.explain_nothing(query)),
        }
    }

    /// The explanation of an empty list: the tasks the request was split into.
    pub(crate) fn explain_nothing(&self, query: &str) -> Explained {
        Explained {
            tasks: self.tasks_of(query),
            hits: Vec::new(),
        }
    }

    fn tasks_of(&self, query: &str) -> Vec<String> {
        if self.options.split {
            tasks::split(query)
        } else {
            Vec::new()
        }
    }

    /// [`Shortlister::explain`] of a request already embedded ([`Shortlister::prepare`]).
    pub(crate) fn explain_request(
        &self,
        request: &Request,
        hits: &[Hit],
    ) -> Result<Explained, ShortlistError> {
        let texts = &request.texts;
        let query = texts[0].as_str();
        let parts: Vec<String> = texts[1..].to_vec();
        if hits.is_empty() {
            return Ok(Explained {
                tasks: parts,
                hits: Vec::new(),
            });
        }
        let vectors = &request.vectors;
        let allowed: Vec<bool> = request
            .allowed
            .clone()
            .unwrap_or_else(|| vec![true; self.len()]);
        let w = self.options.dense_weight.clamp(0.0, 1.0);
        // Raw and rescaled signals per text, as `Shortlister::score` computes them.
        let mut per_text = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            let dense = match vectors.get(i) {
                Some(v) => Some(self.dense(v, &allowed)?),
                None => None,
            };
            let lexical = match self.options.retrieval {
                Retrieval::Dense => None,
                _ => Some(self.index.lexical().scores(t)),
            };
            let d = dense.as_deref().map(|d| fusion::rescale(d, &allowed));
            let l = lexical.as_deref().map(|l| fusion::rescale(l, &allowed));
            per_text.push((dense, lexical, d, l));
        }
        let fused = |i: usize, p: usize| -> f32 {
            let (_, _, d, l) = &per_text[i];
            match (d, l) {
                (Some(d), Some(l)) => w * d[p] + (1.0 - w) * l[p],
                (Some(x), None) | (None, Some(x)) => x[p],
                (None, None) => 0.0,
            }
        };
        let chain = self.options.chain(parts.len());
        let whole_counts = self.options.whole_counts(parts.len());
        let weights = self.request_weights(query, chain);
        let said = crate::index::lexical::tokenize(query);
        let names = chain && expand::names_something(query);
        let out = hits
            .iter()
            .map(|h| {
                let p = h.position;
                let weight = weights.get(p).copied().unwrap_or(1.0);
                let request = if whole_counts { fused(0, p) } else { 0.0 };
                let best_task = (1..texts.len())
                    .map(|i| (i - 1, self.options.part_weight * fused(i, p)))
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                let origin = match h.source {
                    Source::Prerequisite(of) => Origin::Prerequisite { for_position: of },
                    Source::Query => match best_task {
                        Some((t, s)) if s > request => Origin::TaskPart { task: t },
                        _ => Origin::Request,
                    },
                };
                let mut weight_reasons = Vec::new();
                if self.options.sibling_weight < 1.0 && self.tables.siblings.passed_over(p, &said) {
                    weight_reasons.push("the request names a sibling endpoint's last path word");
                }
                if names
                    && self.options.name_list_weight < 1.0
                    && self.tables.safe[p]
                    && self.tables.graph.needs(p).is_empty()
                    && !self.tables.graph.is_lookup(p)
                {
                    weight_reasons.push("the request names something: a plain list ranks lower");
                }
                let (dense, lexical, d, l) = &per_text[0];
                Explanation {
                    position: p,
                    score: h.score,
                    origin,
                    dense_cosine: dense.as_ref().map(|x| x[p]),
                    dense: d.as_ref().map(|x| x[p]),
                    lexical_bm25: lexical.as_ref().map(|x| x[p]),
                    lexical: l.as_ref().map(|x| x[p]),
                    request,
                    best_task,
                    weight,
                    weight_reasons,
                }
            })
            .collect();
        Ok(Explained {
            tasks: parts,
            hits: out,
        })
    }
}
