//! The adaptive cut: end the list where relevance falls off.
//!
//! With a fixed k = 10, precision on RestBench cannot pass ~25% (gold sets of 2-3
//! endpoints), and a client shown ten tools pays for ten tool descriptions. The cut keeps
//! the endpoints whose confidence (score fusion of the rescaled dense and lexical scores,
//! 0..=1, see [`super::fusion`]; the best over the query's task parts) is within a share of
//! the best one's. Endpoints added as prerequisites stand or fall with the endpoint that
//! needs them: a lookup scores low against the question by nature, and that is why it was
//! added. The cut filters the ranking rather than truncating it, so `search(q, k)` is still
//! the first `k` of one list.

use super::{Hit, Source};

/// Keeps the endpoints ranked for the query (or one of its tasks) whose
/// confidence is at least `ratio` times the first one's, the endpoints in `always` (the
/// best match of each task of a multi-task query), and the prerequisites of kept
/// endpoints. The first endpoint is always kept. `confidence` gives a position's.
pub fn cut(
    hits: Vec<Hit>,
    confidence: &dyn Fn(usize) -> f32,
    ratio: f32,
    always: &[usize],
) -> Vec<Hit> {
    let Some(first) = hits.first() else {
        return hits;
    };
    let floor = confidence(first.position) * ratio;
    let mut kept: Vec<Hit> = Vec::with_capacity(hits.len());
    for (i, h) in hits.iter().enumerate() {
        let keep = match h.source {
            _ if i == 0 => true,
            Source::Query => confidence(h.position) >= floor || always.contains(&h.position),
            Source::Prerequisite(of) => kept.iter().any(|k| k.position == of),
        };
        if keep {
            kept.push(*h);
        }
    }
    kept
}

/// The ratio the cut applies to a request: `ratio` (the option) for a request of few
/// tasks, which may be one chain of steps whose lookups score close behind; 1 for a
/// request of many (`chain` false), whose list then holds the first endpoint and each
/// task's best (the cut's `always`): there the runners-up of one task take room that is
/// every task's, and on the development suite keeping them cost 1.6-3.9 points of F1.
pub fn ratio_for(ratio: f32, chain: bool) -> f32 {
    if chain {
        ratio
    } else {
        1.0
    }
}

/// Makes scores non-increasing down the list (an inserted prerequisite carries its
/// consumer's score, which may exceed the score of the endpoint before it).
pub fn monotone(mut hits: Vec<Hit>) -> Vec<Hit> {
    for i in 1..hits.len() {
        if hits[i].score > hits[i - 1].score {
            hits[i].score = hits[i - 1].score;
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(position: usize, source: Source) -> Hit {
        Hit {
            position,
            score: 1.0 / (position as f32 + 1.0),
            source,
        }
    }

    #[test]
    fn keeps_what_clears_the_floor() {
        let conf = |p: usize| [1.0, 0.9, 0.2, 0.95, 0.45][p];
        let q = Source::Query;
        let hits = vec![
            hit(0, q),
            hit(2, Source::Prerequisite(0)),
            hit(1, q),
            hit(4, q),
            hit(3, q),
        ];
        let kept = |h: Vec<Hit>| h.iter().map(|h| h.position).collect::<Vec<_>>();
        assert_eq!(kept(cut(hits.clone(), &conf, 0.4, &[])), [0, 2, 1, 4, 3]);
        assert_eq!(kept(cut(hits.clone(), &conf, 0.8, &[])), [0, 2, 1, 3]);
        assert_eq!(kept(cut(hits.clone(), &conf, 0.92, &[])), [0, 2, 3]);
        assert_eq!(
            kept(cut(hits.clone(), &conf, 0.96, &[])),
            [0, 2],
            "a prerequisite goes with its consumer"
        );
        assert_eq!(
            kept(cut(hits, &conf, 0.96, &[4])),
            [0, 2, 4],
            "a task part's best match stays"
        );
        assert!(cut(Vec::new(), &conf, 0.5, &[]).is_empty());
    }

    #[test]
    fn a_request_of_many_tasks_keeps_each_tasks_best() {
        let conf = |p: usize| [1.0, 0.99, 0.97, 0.6, 0.5][p];
        let hits: Vec<Hit> = (0..5).map(|p| hit(p, Source::Query)).collect();
        let kept = |ratio: f32| {
            cut(hits.clone(), &conf, ratio, &[3, 4])
                .iter()
                .map(|h| h.position)
                .collect::<Vec<_>>()
        };
        assert_eq!(kept(ratio_for(0.9, true)), [0, 1, 2, 3, 4]);
        assert_eq!(kept(ratio_for(0.9, false)), [0, 3, 4], "runners-up go");
    }

    #[test]
    fn scores_never_increase() {
        let mut hits = vec![hit(3, Source::Query), hit(0, Source::Prerequisite(3))];
        hits[1].score = 5.0;
        let m = monotone(hits);
        assert_eq!(m[1].score, m[0].score);
    }
}
