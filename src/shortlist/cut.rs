//! The adaptive cut: stop the list where relevance falls off.
//!
//! With a fixed k = 10, precision on RestBench cannot pass ~25% (gold sets of 2-3
//! endpoints), and a client shown ten tools pays for ten tool descriptions. The cut keeps
//! the retrieved endpoints whose confidence (score fusion of the rescaled dense and lexical
//! scores, 0..=1, see [`super::fusion`]) stays within a share of the best one's, and stops
//! at the first that does not: the list stays a prefix of the full ranking, so one ranking
//! still answers every k. Endpoints added as prerequisites stand or fall with the endpoint
//! that needs them.

use super::Hit;

/// Keeps `hits` up to the first retrieved endpoint whose confidence is below `ratio` times
/// the first one's. The first endpoint is always kept.
pub fn cut(hits: Vec<Hit>, confidence: &[f32], ratio: f32) -> Vec<Hit> {
    let Some(first) = hits.first() else {
        return hits;
    };
    let floor = confidence[first.position] * ratio;
    let mut end = hits.len();
    for (i, h) in hits.iter().enumerate().skip(1) {
        if h.prerequisite_of.is_none() && confidence[h.position] < floor {
            end = i;
            break;
        }
    }
    let mut hits = hits;
    hits.truncate(end);
    hits
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

    fn hit(position: usize, via: Option<usize>) -> Hit {
        Hit {
            position,
            score: 1.0 / (position as f32 + 1.0),
            prerequisite_of: via,
        }
    }

    #[test]
    fn stops_at_the_first_weak_retrieved_endpoint() {
        let conf = [1.0, 0.9, 0.2, 0.95];
        let hits = vec![hit(0, None), hit(2, Some(0)), hit(1, None), hit(3, None)];
        let kept: Vec<usize> = cut(hits.clone(), &conf, 0.8)
            .iter()
            .map(|h| h.position)
            .collect();
        assert_eq!(
            kept,
            [0, 2, 1, 3],
            "a prerequisite is kept with its consumer"
        );
        let kept: Vec<usize> = cut(hits, &conf, 0.92).iter().map(|h| h.position).collect();
        assert_eq!(kept, [0, 2], "stops at 1 even though 3 would pass");
        assert!(cut(Vec::new(), &conf, 0.5).is_empty());
    }

    #[test]
    fn scores_never_increase() {
        let mut hits = vec![hit(3, None), hit(0, Some(3))];
        hits[1].score = 5.0;
        let m = monotone(hits);
        assert_eq!(m[1].score, m[0].score);
    }
}
