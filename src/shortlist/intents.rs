//! Splitting a query that asks for several things into its parts.
//!
//! "Skip to the next track and set the volume to 60" wants two endpoints that share no
//! words; one embedding of the whole sentence lands between them and may rank a third
//! endpoint first. Ranking each part on its own and merging the lists gives each task its
//! own best match. Only clear task boundaries split (`and`, `then`, commas, semicolons)
//! and a part must keep at least two content words, so "rock and roll" or "Simon and
//! Garfunkel" do not become tasks.

use super::{Hit, Source};
use crate::index::lexical::tokenize;

/// Phrases that separate tasks, matched case-insensitively on word boundaries. Longer
/// phrases first, so `and then` is consumed whole.
const SEPARATORS: &[&str] = &[
    ", and then ",
    " and then ",
    ", then ",
    " then ",
    ", and ",
    " and ",
    "; ",
    ", ",
];

/// The parts of `query`, or just the query when it does not split into at least two parts
/// of at least two content words each.
pub fn split(query: &str) -> Vec<String> {
    let lower = query.to_lowercase();
    // Work on byte offsets of the lower-cased text only when lower-casing kept them (ASCII
    // and most scripts); otherwise do not split rather than cut inside a character.
    if lower.len() != query.len() {
        return vec![query.to_string()];
    }
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < lower.len() {
        let hit = SEPARATORS.iter().find(|s| {
            lower[i..].starts_with(**s)
                && query.is_char_boundary(i)
                && !(s.trim() == "and" && joins_names(query, i, i + s.len()))
        });
        match hit {
            Some(s) => {
                cuts.push((i, i + s.len()));
                i += s.len();
            }
            None => i += lower[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    let mut parts: Vec<String> = Vec::new();
    let mut start = 0;
    for (a, b) in cuts {
        parts.push(query[start..a].trim().to_string());
        start = b;
    }
    parts.push(query[start..].trim().to_string());
    // A fragment too short to be a task joins the part before it (or after, for the first).
    let mut merged: Vec<String> = Vec::new();
    for p in parts {
        let content = tokenize(&p).len();
        match merged.last_mut() {
            Some(last) if content < 2 => {
                last.push_str(" and ");
                last.push_str(&p);
            }
            _ => merged.push(p),
        }
    }
    if merged.len() > 1 && tokenize(&merged[0]).len() < 2 {
        let first = merged.remove(0);
        merged[0] = format!("{first} and {}", merged[0]);
    }
    if merged.len() < 2 {
        vec![query.to_string()]
    } else {
        merged
    }
}

/// `Simon and Garfunkel`: both words around the conjunction are capitalised, so it joins
/// names rather than tasks.
fn joins_names(query: &str, before: usize, after: usize) -> bool {
    let capital = |w: Option<&str>| {
        w.and_then(|w| w.chars().next())
            .is_some_and(char::is_uppercase)
    };
    capital(query[..before].split_whitespace().last())
        && capital(query[after..].split_whitespace().next())
}

/// Words that link the phrases of a chained request ("the birthday *of* the lead actor *of*
/// the movie X", "movies directed *by* Y", "Z*'s* latest show").
const LINKS: &[&str] = &[
    " of ", " by ", " from ", " in ", " for ", " with ", " to ", " that ", " which ", " who ",
    "'s ", " and ", " or ", " versus ", " vs ", ", ", "; ", "? ",
];

/// The phrases of a chained request, each with at least one content word: "When is the
/// birthday of the lead actor of Titanic?" -> "When is the birthday", "the lead actor",
/// "Titanic?". Each names one hop of the chain (a person's details, a movie's credits, a
/// movie lookup), which the whole sentence's single embedding blurs. Empty when the query
/// is a single phrase.
pub fn clauses(query: &str) -> Vec<String> {
    let spans = clause_spans(query);
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: &str| {
        let p = p.trim();
        if !tokenize(p).is_empty() && !out.iter().any(|o| o == p) {
            out.push(p.to_string());
        }
    };
    for &(a, b) in &spans {
        push(&query[a..b]);
    }
    if spans.len() < 2 {
        Vec::new()
    } else {
        out
    }
}

/// Byte ranges of the phrases of `query` (see [`clauses`]), links excluded.
fn clause_spans(query: &str) -> Vec<(usize, usize)> {
    let lower = query.to_lowercase();
    if lower.len() != query.len() {
        return Vec::new();
    }
    let mut spans = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < lower.len() {
        match LINKS.iter().find(|s| lower[i..].starts_with(**s)) {
            Some(s) if query.is_char_boundary(i) => {
                spans.push((start, i));
                i += s.len();
                start = i;
            }
            _ => i += lower[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    spans.push((start, query.len()));
    spans.retain(|&(a, b)| !tokenize(&query[a..b]).is_empty());
    spans
}

/// `hits` with the first `top` endpoints of each of `tops` (rankings of the phrases, in
/// query order) moved to just after its first `after` endpoints, unless already there.
/// An inserted endpoint keeps its own score from `scores`.
pub fn insert_tops(
    hits: Vec<Hit>,
    scores: &[f32],
    tops: &[Vec<usize>],
    top: usize,
    after: usize,
) -> Vec<Hit> {
    let score = |p: usize| scores.get(p).copied().unwrap_or(0.0);
    let mut out: Vec<Hit> = hits.iter().take(after).copied().collect();
    for t in tops {
        for &p in t.iter().take(top) {
            if !out.iter().any(|h| h.position == p) {
                out.push(Hit {
                    position: p,
                    score: score(p),
                    source: Source::Phrase,
                });
            }
        }
    }
    for h in &hits {
        if !out.iter().any(|o| o.position == h.position) {
            out.push(*h);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_task_boundaries() {
        assert_eq!(
            split("Skip to the next track and set the volume to 60"),
            ["Skip to the next track", "set the volume to 60"]
        );
        assert_eq!(
            split("Pause playback, turn down the volume and then resume playing"),
            ["Pause playback", "turn down the volume", "resume playing"]
        );
    }

    #[test]
    fn clauses_of_a_chain() {
        assert_eq!(
            clauses("When is the birthday of the lead actor of Titanic?"),
            ["When is the birthday", "the lead actor", "Titanic?"]
        );
        assert_eq!(
            clauses("Clint Eastwood's latest movie"),
            ["Clint Eastwood", "latest movie"]
        );
        assert!(clauses("top rated movies").is_empty());
        assert!(clauses("").is_empty());
    }

    #[test]
    fn phrase_tops_follow_the_head() {
        let hits: Vec<Hit> = (0..6)
            .map(|p| Hit {
                position: p,
                score: 1.0,
                source: Source::Query,
            })
            .collect();
        let order = |h: Vec<Hit>| h.iter().map(|h| h.position).collect::<Vec<_>>();
        let out = insert_tops(hits.clone(), &[1.0; 6], &[vec![5, 4], vec![1, 3]], 1, 2);
        assert_eq!(order(out.clone()), [0, 1, 5, 2, 3, 4]);
        assert_eq!(out[2].source, Source::Phrase);
        assert_eq!(
            order(insert_tops(hits.clone(), &[1.0; 6], &[vec![5, 4]], 2, 9)),
            [0, 1, 2, 3, 4, 5]
        );
        assert!(insert_tops(Vec::new(), &[0.5; 2], &[vec![1]], 1, 3)[0].source == Source::Phrase);
    }

    #[test]
    fn keeps_names_and_single_tasks_whole() {
        for q in [
            "Play some rock and roll",
            "Who directed the top-1 rated movie?",
            "Find Simon and Garfunkel albums",
            "",
            "Größe and Übermaß",
        ] {
            assert_eq!(split(q), [q], "{q}");
        }
    }
}
