//! Prerequisite expansion of a ranking: each shortlisted endpoint that needs an identifier
//! brings along an endpoint that produces it (see [`super::prereq`] for how producers are
//! found).
//!
//! Which producer is picked depends on the query: the producer the ranking itself likes best
//! ("the top-rated movie" -> `/movie/top_rated`), and, when the query names something by
//! name (a capitalised or quoted phrase: "The Dark Knight"), the best-ranked lookup too,
//! because a name is what lookups take and identifiers are what they give.

use super::prereq::{Evidence, Graph, Need};
use super::{Hit, Source};
use std::collections::{HashMap, HashSet};

/// How many producer steps are followed from one retrieved endpoint.
const MAX_CHAIN: usize = 2;
/// A producer the query itself ranks among its first this many endpoints is relevant in
/// its own right.
const OWN_TOP: usize = 8;

/// Where endpoints stand in the ranking: their place in the (possibly truncated) list of
/// hits, and for the endpoints beyond it, their score, which is what ordered the rest of
/// the full ranking. Kept per hit, not per endpoint: a catalog may be far larger than a
/// list.
struct Standing<'a> {
    rank: HashMap<usize, usize>,
    score: &'a dyn Fn(usize) -> f32,
}

impl Standing<'_> {
    fn new<'a>(hits: &[Hit], score: &'a dyn Fn(usize) -> f32) -> Standing<'a> {
        let mut rank = HashMap::with_capacity(hits.len());
        for (r, h) in hits.iter().enumerate() {
            rank.entry(h.position).or_insert(r);
        }
        Standing { rank, score }
    }

    /// Place in the hits, `usize::MAX` beyond them.
    fn rank(&self, q: usize) -> usize {
        self.rank.get(&q).copied().unwrap_or(usize::MAX)
    }

    /// Which of two endpoints stands higher (`Less`: `a`).
    fn cmp(&self, a: usize, b: usize) -> std::cmp::Ordering {
        let score = self.score;
        match (self.rank(a), self.rank(b)) {
            (usize::MAX, usize::MAX) => score(b).total_cmp(&score(a)).then(a.cmp(&b)),
            (ra, rb) => ra.cmp(&rb),
        }
    }
}

/// Inserts, right after each endpoint of `hits` (best first), the producers of the
/// identifiers it needs that no endpoint placed so far produces. Producers are expanded
/// in turn (track -> album -> artist), each endpoint appears once, and an inserted endpoint
/// carries its consumer's score. `hits` may be the head of the ranking only: producers
/// beyond it are compared by `score` (of a position), the ranking's own order there;
/// `allowed` says which positions may be added.
pub fn expand(
    hits: &[Hit],
    score: &dyn Fn(usize) -> f32,
    graph: &Graph,
    allowed: &dyn Fn(usize) -> bool,
    names: bool,
) -> Vec<Hit> {
    let rank = Standing::new(hits, score);
    let mut placed: HashSet<usize> = HashSet::new();
    let mut out: Vec<Hit> = Vec::with_capacity(hits.len());
    for hit in hits {
        let p = hit.position;
        if !placed.insert(p) {
            continue;
        }
        out.push(*hit);
        // Depth-first, so a producer's own producer follows it directly.
        let mut stack = vec![(p, 0usize)];
        while let Some((consumer, depth)) = stack.pop() {
            if depth >= MAX_CHAIN {
                continue;
            }
            let mut picked: Vec<usize> = Vec::new();
            for need in graph.needs(consumer) {
                if need.producers.iter().any(|q| placed.contains(q)) {
                    continue;
                }
                let choice = pick(need, graph, &rank, allowed);
                let lookup = if names {
                    best_lookup(need, graph, &rank, allowed)
                } else {
                    None
                };
                // A lookup that produces exactly this noun does the job alone, unless the
                // query itself ranks another producer near the top.
                let choice = match (choice, lookup) {
                    (Some(c), Some(l))
                        if need.producers.contains(&l) && rank.rank(c) >= OWN_TOP =>
                    {
                        None
                    }
                    _ => choice,
                };
                for q in [choice, lookup].into_iter().flatten() {
                    if placed.insert(q) {
                        picked.push(q);
                    }
                }
            }
            for &q in &picked {
                out.push(Hit {
                    position: q,
                    score: hit.score,
                    source: Source::Prerequisite(consumer),
                });
            }
            stack.extend(picked.into_iter().rev().map(|q| (q, depth + 1)));
        }
    }
    out
}

/// The producer to add for `need`: the best-ranked one, or for producers that merely
/// mention the noun, the most general (shortest path) one.
fn pick(
    need: &Need,
    graph: &Graph,
    rank: &Standing,
    allowed: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    // A producer that needs identifiers of its own costs the agent another step.
    let candidates = need.producers.iter().copied().filter(|&q| allowed(q));
    let needy = |q: usize| !graph.needs(q).is_empty();
    match need.evidence {
        Evidence::Mentioned => candidates.min_by(|&a, &b| {
            (needy(a), graph.depth(a))
                .cmp(&(needy(b), graph.depth(b)))
                .then_with(|| rank.cmp(a, b))
        }),
        _ => candidates.min_by(|&a, &b| needy(a).cmp(&needy(b)).then_with(|| rank.cmp(a, b))),
    }
}

/// The best-ranked lookup among the need's producers.
fn best_lookup(
    need: &Need,
    graph: &Graph,
    rank: &Standing,
    allowed: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    need.producers
        .iter()
        .copied()
        .filter(|&q| allowed(q) && graph.is_lookup(q))
        .min_by(|&a, &b| rank.cmp(a, b))
}

/// Words after which a name is given rather than looked up ("a playlist *called* X",
/// "*name it* X", "rename it *as* X").
const GIVES_NAME: &[&str] = &["called", "named", "titled", "name", "it", "as"];

/// Whether a query names something that has to be looked up: a quoted phrase or a
/// capitalised word that does not start a sentence (`I` excepted). Names are what lookup
/// endpoints take. A name being given (`called 'Current'`) or owned (`my 'My Rock'
/// playlist`, `My Music`) is not looked up: it is created, or found among the user's own.
pub fn names_something(query: &str) -> bool {
    let words: Vec<&str> = query.split_whitespace().collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let mut sentence_start = true;
    for (i, w) in words.iter().enumerate() {
        let word = w.trim_matches(|c: char| !c.is_alphanumeric());
        let quoted = w.starts_with(['"', '“', '\'', '‘']);
        let capital = word.chars().next().is_some_and(char::is_uppercase)
            && !sentence_start
            && word != "I"
            && !word.starts_with("I'");
        let starts_name = quoted || capital;
        let previous = if i > 0 {
            bare(words[i - 1])
        } else {
            String::new()
        };
        let continues = i > 0 && starts_name && {
            let p = words[i - 1];
            let p_word = p.trim_matches(|c: char| !c.is_alphanumeric());
            p_word.chars().next().is_some_and(char::is_uppercase) && !p.ends_with(['.', '?', '!'])
        };
        if starts_name
            && !continues
            && !GIVES_NAME.contains(&previous.as_str())
            && previous != "my"
            && bare(word) != "my"
        {
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
        assert!(names_something(
            "Add Summertime Sadness by Lana Del Rey in my first playlist"
        ));
        assert!(!names_something(
            "Who directed the top-1 rated movie? Tell me."
        ));
        assert!(!names_something("I want what I'm playing now"));
        assert!(!names_something("Make a new playlist called 'Current'"));
        assert!(!names_something(
            "Delete all music from my 'My R&B' playlist"
        ));
        assert!(!names_something(
            "Put the song now being played into My Music"
        ));
        assert!(!names_something(""));
    }
}
