//! Turning several score lists into one ranking.
//!
//! Dense cosine similarities and BM25 scores live on different scales (0.2-0.7 against
//! 0-30), so they are combined either by rank (reciprocal rank fusion, scale-free) or after
//! rescaling each list to 0-1 over the endpoints in play (score fusion, which keeps how
//! *much* better one endpoint is, and so gives the adaptive cut something to cut on).

use serde::{Deserialize, Serialize};

/// How the dense and lexical lists are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Reciprocal rank fusion: the sum of `1 / (rrf_k + rank)`.
    Rrf,
    /// A weighted sum of min-max rescaled scores: measured better than RRF on RestBench,
    /// because it keeps how far ahead the best matches are.
    #[default]
    Score,
}

/// Scores rescaled to 0..=1 over the allowed positions (min -> 0, max -> 1); 0 elsewhere
/// and everywhere when all allowed scores are equal.
pub fn rescale(scores: &[f32], allowed: &[bool]) -> Vec<f32> {
    let scale = Scale::of(
        scores
            .iter()
            .zip(allowed)
            .filter(|(_, &a)| a)
            .map(|(&s, _)| s),
    );
    scores
        .iter()
        .zip(allowed)
        .map(|(&s, &a)| if a { scale.apply(s) } else { 0.0 })
        .collect()
}

/// Min-max rescaling to 0..=1 from the lowest and highest score of a list, which is all
/// [`rescale`] needs to know of it: a ranking that scores only candidates
/// (`super::pool`) rescales as the full ranking does from the two ends alone.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    lo: f32,
    span: f32,
}

impl Scale {
    /// The scale of a list holding `scores` (and nothing else).
    pub fn of(scores: impl Iterator<Item = f32>) -> Scale {
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for s in scores {
            lo = lo.min(s);
            hi = hi.max(s);
        }
        Scale { lo, span: hi - lo }
    }

    /// `s` rescaled; 0 when the list's scores are all equal (or it is empty).
    pub fn apply(self, s: f32) -> f32 {
        if self.span > f32::EPSILON {
            (s - self.lo) / self.span
        } else {
            0.0
        }
    }
}

/// 1-based rank of each allowed position under descending scores (ties by position);
/// `usize::MAX` for the others.
pub fn ranks(scores: &[f32], allowed: &[bool]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| allowed[i]).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut rank = vec![usize::MAX; scores.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r + 1;
    }
    rank
}

/// Weighted reciprocal rank fusion of several rankings of the same positions.
pub fn rrf(rankings: &[(Vec<usize>, f32)], k: f32) -> Vec<f32> {
    let n = rankings.first().map_or(0, |(r, _)| r.len());
    (0..n)
        .map(|i| {
            rankings
                .iter()
                .filter(|(r, _)| r[i] != usize::MAX)
                .map(|(r, w)| w / (k + r[i] as f32))
                .sum()
        })
        .collect()
}

/// Positions allowed, best first by `scores`, ties by position.
pub fn order(scores: &[f32], allowed: &[bool]) -> Vec<usize> {
    order_top(scores, allowed, usize::MAX)
}

/// The first `limit` of [`order`], without sorting the rest: a query against a large
/// catalog needs its top few, and sorting 100,000 scores per query text is most of the
/// time otherwise.
pub fn order_top(scores: &[f32], allowed: &[bool], limit: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| allowed[i]).collect();
    let by_score = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b));
    if limit == 0 {
        return Vec::new();
    }
    if limit < order.len() {
        order.select_nth_unstable_by(limit - 1, by_score);
        order.truncate(limit);
    }
    order.sort_by(by_score);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescales_ranks_and_fuses() {
        let all = [true, true, true];
        assert_eq!(rescale(&[2.0, 4.0, 3.0], &all), [0.0, 1.0, 0.5]);
        assert_eq!(rescale(&[1.0, 1.0, 1.0], &all), [0.0, 0.0, 0.0]);
        assert_eq!(
            rescale(&[9.0, 4.0, 3.0], &[false, true, true]),
            [0.0, 1.0, 0.0]
        );
        assert_eq!(ranks(&[0.1, 0.9, 0.5], &all), [3, 1, 2]);
        assert_eq!(
            ranks(&[0.1, 0.9, 0.5], &[true, false, true]),
            [2, usize::MAX, 1]
        );
        let f = rrf(&[(vec![1, 2, 3], 1.0), (vec![3, 1, 2], 1.0)], 60.0);
        assert!(f[1] > f[0] && f[0] > f[2], "{f:?}");
        assert_eq!(order(&[0.1, 0.9, 0.9], &all), [1, 2, 0]);
        assert!(rrf(&[], 60.0).is_empty());
    }

    #[test]
    fn order_top_is_a_prefix_of_order() {
        let scores: Vec<f32> = (0..200).map(|i| ((i * 37) % 23) as f32 / 7.0).collect();
        let allowed: Vec<bool> = (0..200).map(|i| i % 5 != 0).collect();
        let full = order(&scores, &allowed);
        assert_eq!(full.len(), 160);
        for limit in [0, 1, 2, 10, 159, 160, 1000] {
            let top = order_top(&scores, &allowed, limit);
            assert_eq!(top, full[..limit.min(160)], "limit {limit}");
        }
    }
}
