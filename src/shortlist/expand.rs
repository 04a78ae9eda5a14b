//! Prerequisite expansion of a ranking: each shortlisted endpoint that needs an identifier
//! brings along an endpoint that produces it (see [`super::prereq`] for how producers are
//! found).
//!
//! Which producer is picked depends on the query: the producer the ranking itself likes best
//! ("the top-rated movie" -> `/movie/top_rated`), and, when the query names something by
//! name (a capitalised or quoted phrase: "The Dark Knight"), the best-ranked lookup too,
//! because a name is what lookups take and identifiers are what they give.

use super::prereq::{Evidence, Graph, Need};
use super::Hit;

/// How many producer steps are followed from one retrieved endpoint.
const MAX_CHAIN: usize = 2;
/// A producer the query itself ranks among its first this many endpoints is relevant in
/// its own right.
const OWN_TOP: usize = 8;

/// Inserts, right after each endpoint of `order` (positions, best first), the producers of
/// the identifiers it needs that no endpoint placed so far produces. Producers are expanded
/// in turn (track -> album -> artist), each endpoint appears once, and an inserted endpoint
/// carries its consumer's score.
pub fn expand(
    order: &[usize],
    scores: &[f32],
    graph: &Graph,
    allowed: &[bool],
    names: bool,
) -> Vec<Hit> {
    let mut rank = vec![usize::MAX; allowed.len()];
    for (r, &p) in order.iter().enumerate() {
        rank[p] = r;
    }
    let mut placed = vec![false; allowed.len()];
    let mut out: Vec<Hit> = Vec::with_capacity(order.len());
    for &p in order {
        if placed[p] {
            continue;
        }
        placed[p] = true;
        out.push(Hit {
            position: p,
            score: scores[p],
            prerequisite_of: None,
        });
        // Depth-first, so a producer's own producer follows it directly.
        let mut stack = vec![(p, 0usize)];
        while let Some((consumer, depth)) = stack.pop() {
            if depth >= MAX_CHAIN {
                continue;
            }
            let mut picked: Vec<usize> = Vec::new();
            for need in graph.needs(consumer) {
                if need.producers.iter().any(|&q| placed[q]) {
                    continue;
                }
                let choice = pick(need, graph, &rank, allowed);
                let lookup = if names {
                    best_lookup(consumer, need, graph, &rank, allowed)
                } else {
                    None
                };
                // A lookup that produces exactly this noun does the job alone, unless the
                // query itself ranks another producer near the top.
                let choice = match (choice, lookup) {
                    (Some(c), Some(l)) if need.producers.contains(&l) && rank[c] >= OWN_TOP => None,
                    _ => choice,
                };
                for q in [choice, lookup].into_iter().flatten() {
                    if !placed[q] {
                        placed[q] = true;
                        picked.push(q);
                    }
                }
            }
            for &q in &picked {
                out.push(Hit {
                    position: q,
                    score: scores[consumer],
                    prerequisite_of: Some(consumer),
                });
            }
            stack.extend(picked.into_iter().rev().map(|q| (q, depth + 1)));
        }
    }
    out
}

/// The producer to add for `need`: the best-ranked one, or for producers that merely
/// mention the noun, the most general (shortest path) one.
fn pick(need: &Need, graph: &Graph, rank: &[usize], allowed: &[bool]) -> Option<usize> {
    // A producer that needs identifiers of its own costs the agent another step.
    let candidates = need.producers.iter().copied().filter(|&q| allowed[q]);
    let needy = |q: usize| !graph.needs(q).is_empty();
    match need.evidence {
        Evidence::Mentioned => candidates.min_by_key(|&q| (needy(q), graph.depth(q), rank[q])),
        _ => candidates.min_by_key(|&q| (needy(q), rank[q])),
    }
}

/// The best-ranked lookup among the need's producers, else among all lookups of the
/// consumer's API, unless one of those is placed already.
fn best_lookup(
    consumer: usize,
    need: &Need,
    graph: &Graph,
    rank: &[usize],
    allowed: &[bool],
) -> Option<usize> {
    let own = need
        .producers
        .iter()
        .copied()
        .filter(|&q| allowed[q] && graph.is_lookup(q))
        .min_by_key(|&q| rank[q]);
    own.or_else(|| {
        (0..allowed.len())
            .filter(|&q| {
                allowed[q] && q != consumer && graph.is_lookup(q) && graph.same_api(q, consumer)
            })
            .min_by_key(|&q| rank[q])
    })
}

/// Whether a query names something by name: a quoted phrase, or a capitalised word that
/// does not start a sentence (`I` excepted). Names are what lookup endpoints take.
pub fn names_something(query: &str) -> bool {
    if query.contains('"') || query.contains('“') || query.matches('\'').count() >= 2 {
        return true;
    }
    let mut sentence_start = true;
    for w in query.split_whitespace() {
        let word = w.trim_matches(|c: char| !c.is_alphanumeric());
        let capital = word.chars().next().is_some_and(char::is_uppercase);
        if capital && !sentence_start && word != "I" && !word.starts_with("I'") {
            return true;
        }
        sentence_start = w.ends_with(['.', '?', '!', ':']);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(names_something("Who directed The Dark Knight?"));
        assert!(names_something(
            "what is the release date of \"the matrix\""
        ));
        assert!(names_something("rename it to 'Love Mariah' please"));
        assert!(!names_something(
            "Who directed the top-1 rated movie? Tell me."
        ));
        assert!(!names_something("I want what I'm playing now"));
        assert!(!names_something(""));
    }
}
