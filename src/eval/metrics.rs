//! Retrieval metrics, per query and averaged over queries.
//!
//! The definitions follow Pesl et al. (CAiSE 2025) so our figures compare with theirs:
//! for a query with gold set G and returned list L (the first k results, or fewer when an
//! adaptive cut stopped early), TP = |L ∩ G|, recall = TP / |G|, precision = TP / |L| and
//! F1 their harmonic mean, each computed per query and then averaged (macro). With a fixed
//! k, |L| = k, which is why precision cannot pass ~25% at k = 10 on RestBench (gold sets of
//! 2-3 endpoints); with a cut, |L| shrinks and precision means what a client would see.
//!
//! Besides: the share of queries whose whole gold set is in L ("complete", what an agent
//! needs to finish the task), MRR (reciprocal rank of the first gold endpoint) and nDCG@k
//! with binary relevance.

use serde::Serialize;

/// Metrics of one query at one k.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct AtK {
    pub k: usize,
    pub recall: f64,
    pub precision: f64,
    pub f1: f64,
    /// 1 when every gold endpoint is returned, else 0 (a share once averaged).
    pub complete: f64,
    pub ndcg: f64,
    /// How many endpoints were returned (k, or fewer after a cut).
    pub returned: f64,
}

/// Metrics of one query: one [`AtK`] per k, and MRR over the whole returned list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryMetrics {
    pub at: Vec<AtK>,
    pub mrr: f64,
}

/// Computes the metrics of one ranked list. `ranked` is the full list the system returned
/// (best first, at least as long as it would be for the largest k); `gold` holds distinct
/// items.
pub fn score_query(ranked: &[usize], gold: &[usize], ks: &[usize]) -> QueryMetrics {
    let at = ks
        .iter()
        .map(|&k| {
            let list = &ranked[..k.min(ranked.len())];
            let tp = list.iter().filter(|i| gold.contains(i)).count() as f64;
            let recall = ratio(tp, gold.len() as f64);
            let precision = ratio(tp, list.len() as f64);
            let f1 = if recall + precision > 0.0 {
                2.0 * recall * precision / (recall + precision)
            } else {
                0.0
            };
            let dcg: f64 = list
                .iter()
                .enumerate()
                .filter(|(_, i)| gold.contains(i))
                .map(|(r, _)| discount(r))
                .sum();
            let ideal: f64 = (0..gold.len().min(k)).map(discount).sum();
            AtK {
                k,
                recall,
                precision,
                f1,
                complete: if tp as usize == gold.len() { 1.0 } else { 0.0 },
                ndcg: ratio(dcg, ideal),
                returned: list.len() as f64,
            }
        })
        .collect();
    let mrr = ranked
        .iter()
        .position(|i| gold.contains(i))
        .map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
    QueryMetrics { at, mrr }
}

/// The mean of per-query metrics (all computed with the same ks).
pub fn mean(per_query: &[&QueryMetrics]) -> QueryMetrics {
    let n = per_query.len().max(1) as f64;
    let Some(first) = per_query.first() else {
        return QueryMetrics {
            at: Vec::new(),
            mrr: 0.0,
        };
    };
    let at = (0..first.at.len())
        .map(|j| {
            let mut sum = AtK {
                k: first.at[j].k,
                ..AtK::default()
            };
            for q in per_query {
                let a = &q.at[j];
                sum.recall += a.recall;
                sum.precision += a.precision;
                sum.f1 += a.f1;
                sum.complete += a.complete;
                sum.ndcg += a.ndcg;
                sum.returned += a.returned;
            }
            AtK {
                k: sum.k,
                recall: sum.recall / n,
                precision: sum.precision / n,
                f1: sum.f1 / n,
                complete: sum.complete / n,
                ndcg: sum.ndcg / n,
                returned: sum.returned / n,
            }
        })
        .collect();
    QueryMetrics {
        at,
        mrr: per_query.iter().map(|q| q.mrr).sum::<f64>() / n,
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The nDCG discount of 0-based rank `r`.
fn discount(r: usize) -> f64 {
    1.0 / (r as f64 + 2.0).log2()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn pesl_definitions() {
        // Gold {1, 2}; returned 5, 1, 7, 2, ...
        let m = score_query(&[5, 1, 7, 2, 9, 8], &[1, 2], &[1, 3, 5]);
        let [k1, k3, k5] = [m.at[0], m.at[1], m.at[2]];
        assert_eq!(
            (k1.recall, k1.precision, k1.f1, k1.complete),
            (0.0, 0.0, 0.0, 0.0)
        );
        assert!(close(k3.recall, 0.5) && close(k3.precision, 1.0 / 3.0));
        assert!(close(k3.f1, 0.4));
        assert!(close(k5.recall, 1.0) && close(k5.precision, 0.4) && k5.complete == 1.0);
        assert!(close(m.mrr, 0.5));
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!(close(
            k5.ndcg,
            (1.0 / 3f64.log2() + 1.0 / 5f64.log2()) / ideal
        ));
    }

    #[test]
    fn short_lists_count_what_was_returned() {
        // An adaptive cut returned two endpoints, both gold: precision 1 at every k.
        let m = score_query(&[1, 2], &[1, 2, 3], &[1, 10]);
        assert!(close(m.at[1].precision, 1.0) && close(m.at[1].recall, 2.0 / 3.0));
        assert_eq!(m.at[1].returned, 2.0);
        let empty = score_query(&[], &[1], &[5]);
        assert_eq!(
            (empty.at[0].precision, empty.at[0].f1, empty.mrr),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn averages_per_query() {
        let a = score_query(&[1], &[1], &[1]);
        let b = score_query(&[2], &[1], &[1]);
        let m = mean(&[&a, &b]);
        assert!(close(m.at[0].recall, 0.5) && close(m.mrr, 0.5));
        assert!(mean(&[]).at.is_empty());
    }
}
