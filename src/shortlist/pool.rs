//! Ranking a graph-served catalog from its candidates.
//!
//! Past the exact-scan size ([`crate::index::EXACT_MAX_DOCS`]) the dense scores of a query
//! text come from the HNSW graph's nearest few hundred endpoints, and every other endpoint
//! gets the lowest of them, which score fusion (min-max rescaling over the whole catalog)
//! turns into exactly 0. An endpoint outside the pool (the graph's nearest and the best
//! BM25 matches of every text of the request) therefore fuses to at most its rescaled BM25
//! share, which is at most that of the best BM25 match left out, whatever the request
//! weights (at most 1) multiply it by. When every endpoint of the pool's head scores above
//! that bound, the pool's head is the full ranking's head: the rescaling needs only the
//! lowest and highest score of each list, which the retrievers know, and the work per
//! query follows the candidates rather than the catalog (at 100,000 endpoints,
//! allocating, filling and sorting 100,000 scores per query text took about 2 ms of an
//! 8 ms search, more than the graph's nearest; `docs/benchmarks.md`). When the bound is
//! not cleared, every BM25 match is taken (the rest then scores exactly 0).
//!
//! Where that would still not be exactly the head of the full ranking (rank fusion, which
//! ranks the tied rest by position; one retriever alone, which ranks by raw scores; a head
//! that reaches into the zeros; an API filter, which scans exactly),
//! [`Shortlister::pooled_ranking`] declines and the caller scores every endpoint. The tests
//! (`pool_tests.rs`) check both agree, to the bit, on real catalogs forced onto the graph.

use super::fusion::{self, Scale};
use super::scoring::Weigher;
use super::Source;
use super::{cut, expand, tasks, Fusion, Hit, Retrieval, ShortlistError, Shortlister};
use crate::index::lexical::Bm25Query;

/// A set of positions of a catalog of `n`, with the rank of each member among them (its
/// slot), in O(1) and without a table of `n` entries.
pub(super) struct Pool {
    words: Vec<u64>,
    /// Members before each word.
    before: Vec<u32>,
    /// Members in increasing order.
    positions: Vec<usize>,
}

impl Pool {
    fn new(n: usize) -> Pool {
        Pool {
            words: vec![0; n.div_ceil(64)],
            before: Vec::new(),
            positions: Vec::new(),
        }
    }

    fn insert(&mut self, p: usize) {
        if let Some(w) = self.words.get_mut(p / 64) {
            *w |= 1 << (p % 64);
        }
    }

    /// Ends insertion: lists the members in order and counts them word by word.
    fn seal(&mut self) {
        let mut count = 0u32;
        self.before = Vec::with_capacity(self.words.len());
        for (i, &w) in self.words.iter().enumerate() {
            self.before.push(count);
            count += w.count_ones();
            let mut bits = w;
            while bits != 0 {
                self.positions.push(i * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.positions.len()
    }

    /// The slot of position `p`, if it is a member.
    fn slot(&self, p: usize) -> Option<usize> {
        let w = *self.words.get(p / 64)?;
        let bit = 1u64 << (p % 64);
        (w & bit != 0).then(|| self.before[p / 64] as usize + (w & (bit - 1)).count_ones() as usize)
    }
}

/// What the retrievers found for one text of a request.
struct Found<'a> {
    /// The graph's nearest, by position.
    near: Vec<(usize, f32)>,
    /// The dense score of every other endpoint: the lowest of the nearest.
    floor: f32,
    dense: Scale,
    bm25: Bm25Query<'a>,
    /// Every BM25 match (reordered by [`Found::top`]).
    matches: Vec<(u32, f32)>,
    lexical: Scale,
}

impl Found<'_> {
    /// The fused score of position `p` before the request weights, as the full ranking
    /// computes it (`Shortlister::score`), given its BM25 score.
    fn fused(&self, p: usize, bm25: f32, w: f32) -> f32 {
        let d = match self.near.binary_search_by_key(&p, |h| h.0) {
            Ok(i) => self.near[i].1,
            Err(_) => self.floor,
        };
        w * self.dense.apply(d) + (1.0 - w) * self.lexical.apply(bm25)
    }

    /// The `k` best BM25 matches (with every match tied with the last of them), and the
    /// best BM25 score of a position outside them (`None` when there is none).
    fn top(&mut self, k: usize, n: usize) -> (&[(u32, f32)], Option<f32>) {
        let unmatched = (self.matches.len() < n).then_some(0.0f32);
        if k >= self.matches.len() {
            return (&self.matches, unmatched);
        }
        let k = k.max(1);
        let desc = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1);
        self.matches.select_nth_unstable_by(k - 1, desc);
        let last = self.matches[k - 1].1;
        // Move the ties of the last one up beside it.
        let mut end = k;
        for i in k..self.matches.len() {
            if self.matches[i].1.total_cmp(&last).is_eq() {
                self.matches.swap(i, end);
                end += 1;
            }
        }
        let below = self.matches[end..]
            .iter()
            .map(|m| m.1)
            .chain(unmatched)
            .reduce(f32::max);
        (&self.matches[..end], below)
    }
}

impl Shortlister {
    /// Whether a graph-served, unfiltered ranking may come from the pool: hybrid retrieval
    /// with score fusion only (rank fusion ranks the tied rest by position, and one
    /// retriever alone ranks by its raw scores), and weights that keep the order of bounds.
    pub(super) fn pool_applies(&self) -> bool {
        let o = &self.options;
        self.pooled
            && self.index.vectors().has_ann()
            && o.retrieval == Retrieval::Hybrid
            && o.fusion == Fusion::Score
            && o.part_weight.is_finite()
            && o.part_weight >= 0.0
            && [o.dense_weight, o.sibling_weight, o.name_list_weight]
                .iter()
                .all(|w| w.is_finite())
    }

    /// The first `head` of the ranking of `texts` (the request, then its tasks; `vectors`
    /// their embeddings) over the whole catalog, from the pool of candidates alone, and how
    /// many endpoints it scored; `None` where that would not be exactly the full ranking's
    /// head.
    pub(super) fn pooled_ranking(
        &self,
        query: &str,
        texts: &[String],
        vectors: &[Vec<f32>],
        chain: bool,
        head: usize,
    ) -> Result<Option<(Vec<Hit>, usize)>, ShortlistError> {
        let n = self.index.len();
        if texts.is_empty() || vectors.len() != texts.len() {
            return Ok(None);
        }
        let mut found = Vec::with_capacity(texts.len());
        for (t, v) in texts.iter().zip(vectors) {
            // As `Shortlister::dense`: every other endpoint scores the floor.
            let (mut near, floor) = self.nearest(v)?;
            let rest = (near.len() < n).then_some(floor);
            let dense = Scale::of(near.iter().map(|h| h.1).chain(rest));
            near.sort_unstable_by_key(|h| h.0);
            let bm25 = self.index.lexical().query(t);
            let matches = bm25.matches();
            let unmatched = (matches.len() < n).then_some(0.0);
            let lexical = Scale::of(matches.iter().map(|m| m.1).chain(unmatched));
            found.push(Found {
                near,
                floor,
                dense,
                bm25,
                matches,
                lexical,
            });
        }
        // BM25 matches of a common word can be most of the catalog; the best few of them
        // usually settle the head, and when they do not, all of them are taken.
        for k in [head.max(self.dense_candidates), usize::MAX] {
            if let Some(ranked) = self.rank_found(query, &mut found, chain, head, k) {
                return Ok(Some(ranked));
            }
        }
        Ok(None)
    }

    /// The ranking's head from the graph's nearest and the `k` best BM25 matches of each
    /// text, if every endpoint outside them provably ranks below the head.
    fn rank_found(
        &self,
        query: &str,
        found: &mut [Found],
        chain: bool,
        head: usize,
        k: usize,
    ) -> Option<(Vec<Hit>, usize)> {
        let o = &self.options;
        let n = self.index.len();
        let w = o.dense_weight.clamp(0.0, 1.0);
        let mut pool = Pool::new(n);
        // The best score an endpoint outside the pool can have for each text: its dense
        // score rescales to 0 (it is not among the nearest), its BM25 score is at most
        // the best outside the top, and the request weights are at most 1.
        let mut bounds = Vec::with_capacity(found.len());
        for f in found.iter_mut() {
            f.near.iter().for_each(|h| pool.insert(h.0));
            let (top, below) = f.top(k, n);
            top.iter().for_each(|m| pool.insert(m.0 as usize));
            bounds.push(below.map_or(f32::NEG_INFINITY, |b| (1.0 - w) * f.lexical.apply(b)));
        }
        pool.seal();
        let m = pool.len();
        let rest = m < n;
        // Each text's BM25 scores of the pool, from one pass over its matches.
        let bm25: Vec<Vec<f32>> = found
            .iter()
            .map(|f| {
                let mut x = vec![0.0f32; m];
                for &(d, s) in &f.matches {
                    if let Some(slot) = pool.slot(d as usize) {
                        x[slot] = s;
                    }
                }
                x
            })
            .collect();
        let weigher = Weigher::new(self, query, chain);
        // As the full ranking: the whole text of a request of many tasks does not count.
        let whole_counts = o.whole_counts(found.len() - 1);
        let of_text = |t: usize| if t == 0 && !whole_counts { 0.0 } else { 1.0 };
        if !whole_counts {
            bounds[0] = f32::NEG_INFINITY;
        }
        // Per text, weighted, as the full ranking's `rank_score` of that text.
        let scored: Vec<Vec<f32>> = found
            .iter()
            .zip(&bm25)
            .enumerate()
            .map(|(t, (f, b))| {
                pool.positions
                    .iter()
                    .zip(b)
                    .map(|(&p, &l)| f.fused(p, l, w) * weigher.weight(p) * of_text(t))
                    .collect()
            })
            .collect();
        let every = vec![true; m];
        let above = |s: f32, bound: f32| !rest || s.total_cmp(&bound).is_gt();
        let mut part_tops = Vec::new();
        if o.cut.is_some() {
            for (sc, &bound) in scored.iter().zip(&bounds).skip(1) {
                match fusion::order_top(sc, &every, 1).first() {
                    Some(&s) if above(sc[s], bound) => part_tops.push(pool.positions[s]),
                    _ => return None,
                }
            }
        }
        let (whole, parts) = scored.split_first()?;
        let bound = bounds[1..]
            .iter()
            .map(|b| o.part_weight * b)
            .fold(bounds[0], f32::max);
        let confidence = if parts.is_empty() {
            whole.clone()
        } else {
            tasks::merge(whole, parts, o.part_weight)
        };
        let top = fusion::order_top(&confidence, &every, head);
        if (rest && top.len() < head) || !top.iter().all(|&s| above(confidence[s], bound)) {
            return None;
        }
        let mut hits: Vec<Hit> = top
            .into_iter()
            .map(|s| Hit {
                position: pool.positions[s],
                score: confidence[s],
                source: Source::Query,
            })
            .collect();
        // Any endpoint's score, for the prerequisites beyond the head: the pool's, or
        // computed as the full ranking does.
        let score = |p: usize| match pool.slot(p) {
            Some(s) => confidence[s],
            None => {
                let weight = weigher.weight(p);
                let mut per_text = found
                    .iter()
                    .enumerate()
                    .map(|(t, f)| f.fused(p, f.bm25.score(p), w) * weight * of_text(t));
                let first = per_text.next().unwrap_or(0.0);
                per_text.map(|c| o.part_weight * c).fold(first, f32::max)
            }
        };
        if o.expand && chain {
            let names = expand::names_something(query);
            hits = expand::expand(&hits, &score, &self.tables.graph, &|_| true, names);
        }
        if let Some(ratio) = o.cut {
            hits = cut::cut(hits, &score, cut::ratio_for(ratio, chain), &part_tops);
        }
        Some((cut::monotone(hits), m))
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
