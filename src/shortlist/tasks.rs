//! The tasks of a request that asks for several things at once.
//!
//! "Track my parcel. Also, shorten this link for me" wants two endpoints that share no
//! words; one embedding of the whole request lands between them, and a list ranked for it
//! offers neither first. Each task is ranked on its own, and each keeps its own best
//! endpoints near the top of the merged list (see [`merge`]).
//!
//! Tasks are cut where written language separates them: sentence ends, semicolons, commas,
//! and the conjunctions that join clauses (`and`, `then`, `also`, `additionally`,
//! `as well as`). These are the grammar of requests in general, not words of one catalog.
//! A piece too short to be a task (fewer than [`MIN_TASK_WORDS`] content words, such as
//! "rock" of "rock and roll") stays joined to its neighbour, and names joined by `and`
//! ("Simon and Garfunkel") are not cut, so a request that asks for one thing stays whole.

use crate::index::lexical::tokenize;

/// Content words (stopwords aside) a piece needs to count as a task of its own.
pub const MIN_TASK_WORDS: usize = 2;

/// Where a piece ends: the separator and whether it may only cut between clauses (a
/// conjunction, which must not cut names apart).
const CONJUNCTIONS: &[&str] = &[
    "and then",
    "as well as",
    "additionally",
    "also",
    "and",
    "then",
];

/// The tasks of `query`, in order, or nothing when it asks for one thing.
pub fn split(query: &str) -> Vec<String> {
    let words = words(query);
    let mut pieces: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if let Some(n) = conjunction_at(&words, i) {
            if !joins_names(&words, i, n) {
                push_piece(&mut pieces, &mut current);
                i += n;
                continue;
            }
        }
        current.push(w);
        if ends_clause(w) {
            push_piece(&mut pieces, &mut current);
        }
        i += 1;
    }
    push_piece(&mut pieces, &mut current);
    let tasks = merge_short(pieces);
    if tasks.len() < 2 {
        Vec::new()
    } else {
        tasks
    }
}

/// The whitespace-separated words of `query`.
fn words(query: &str) -> Vec<&str> {
    query.split_whitespace().collect()
}

/// How many words the conjunction starting at `i` spans, if one does (case-insensitive,
/// trailing commas allowed: "Additionally, ...").
fn conjunction_at(words: &[&str], i: usize) -> Option<usize> {
    CONJUNCTIONS.iter().find_map(|c| {
        let parts: Vec<&str> = c.split(' ').collect();
        let hit = parts.iter().enumerate().all(|(j, p)| {
            words
                .get(i + j)
                .is_some_and(|w| bare(w).eq_ignore_ascii_case(p))
        });
        hit.then_some(parts.len())
    })
}

/// A word without the punctuation around it.
fn bare(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric())
}

/// A word that closes a clause: it ends in a sentence mark, a semicolon or a comma.
fn ends_clause(w: &str) -> bool {
    let w = w.trim_end_matches(['"', '\'', ')', '”', '’']);
    w.ends_with(['.', '?', '!', ';', ',', ':']) && !is_abbreviation(w)
}

/// `e.g.`, `i.e.`, `U.S.`: a period inside the word is not a sentence end.
fn is_abbreviation(w: &str) -> bool {
    w.ends_with('.') && w[..w.len() - 1].contains('.')
}

/// `Simon and Garfunkel`: the words on both sides of a one-word conjunction are
/// capitalised, so it joins names rather than tasks (a sentence's first word does not
/// count as a name).
fn joins_names(words: &[&str], i: usize, n: usize) -> bool {
    let capital = |w: Option<&&str>| {
        w.and_then(|w| bare(w).chars().next())
            .is_some_and(char::is_uppercase)
    };
    let before_starts_sentence = i < 2 || ends_clause(words[i - 2]);
    n == 1
        && i > 0
        && capital(words.get(i - 1))
        && !before_starts_sentence
        && capital(words.get(i + n))
}

fn push_piece(pieces: &mut Vec<String>, current: &mut Vec<&str>) {
    if !current.is_empty() {
        let text = current.join(" ");
        let text = text.trim_matches(|c: char| c == ',' || c == ';' || c.is_whitespace());
        if !text.is_empty() {
            pieces.push(text.to_string());
        }
        current.clear();
    }
}

/// Joins every piece with fewer than [`MIN_TASK_WORDS`] content words to the piece before
/// it (the first to the one after it).
fn merge_short(pieces: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in pieces {
        match out.last_mut() {
            Some(last) if tokenize(&p).len() < MIN_TASK_WORDS => {
                last.push(' ');
                last.push_str(&p);
            }
            _ => out.push(p),
        }
    }
    if out.len() > 1 && tokenize(&out[0]).len() < MIN_TASK_WORDS {
        let first = out.remove(0);
        out[0] = format!("{first} {}", out[0]);
    }
    out
}

/// Merges the scores of the whole request (`whole`) and of its tasks: an endpoint scores
/// the best of its whole-request score and `task_weight` times its best task score. All
/// scores are rescaled 0..=1 per text, so each task's best endpoint scores `task_weight`
/// whatever its raw similarity: every task has a place near the top, not only the one the
/// whole sentence leans towards.
pub fn merge(whole: &[f32], tasks: &[Vec<f32>], task_weight: f32) -> Vec<f32> {
    whole
        .iter()
        .enumerate()
        .map(|(i, &w)| tasks.iter().map(|t| task_weight * t[i]).fold(w, f32::max))
        .collect()
}

/// A vector for the whole request from its tasks' vectors: their mean weighted by each
/// task's length in words, normalised. The tasks cover the request's words, and a model
/// that pools its token vectors by their mean gives a long text roughly the length-weighted
/// mean of its pieces' vectors; this spares embedding the request's words a second time.
/// `None` when there are no tasks or the mean is the zero vector.
pub fn whole_vector(tasks: &[String], vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let dim = vectors.first()?.len();
    let mut mean = vec![0.0f32; dim];
    for (task, v) in tasks.iter().zip(vectors) {
        let w = task.split_whitespace().count().max(1) as f32;
        for (m, x) in mean.iter_mut().zip(v) {
            *m += w * x;
        }
    }
    let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_normal() {
        return None;
    }
    mean.iter_mut().for_each(|m| *m /= norm);
    Some(mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_sentences_commas_and_conjunctions() {
        assert_eq!(
            split("Track my parcel with number 42. Also, shorten this link for me"),
            [
                "Track my parcel with number 42.",
                "shorten this link for me"
            ]
        );
        assert_eq!(
            split("Pause the vacuum robot, dim the hallway lights and then lock the garage door"),
            [
                "Pause the vacuum robot",
                "dim the hallway lights",
                "lock the garage door"
            ]
        );
        assert_eq!(
            split("Book a meeting room as well as order lunch for the team"),
            ["Book a meeting room", "order lunch for the team"]
        );
    }

    #[test]
    fn a_request_for_one_thing_stays_whole() {
        for q in [
            "List the invoices of last month",
            "Play some rock and roll",
            "Find Simon and Garfunkel albums",
            "Who wrote the most borrowed book?",
            "",
        ] {
            assert!(split(q).is_empty(), "{q}: {:?}", split(q));
        }
    }

    #[test]
    fn short_pieces_join_their_neighbour() {
        assert!(split("Hello. Translate this paragraph into French, please").is_empty());
        assert_eq!(
            split("Hi there! Convert 10 dollars to yen, e.g. for a trip"),
            ["Hi there! Convert 10 dollars to yen", "e.g. for a trip"]
        );
    }

    #[test]
    fn every_task_keeps_its_best_near_the_top() {
        let whole = [1.0, 0.6, 0.1, 0.0];
        let tasks = vec![vec![0.9, 1.0, 0.0, 0.2], vec![0.0, 0.1, 0.3, 1.0]];
        let m = merge(&whole, &tasks, 0.9);
        assert_eq!(m, [1.0, 0.9, 0.27, 0.9]);
        assert_eq!(merge(&whole, &[], 0.9), whole);
    }

    #[test]
    fn the_whole_vector_leans_to_the_longer_task() {
        let tasks = [
            "pay the invoice".to_string(),
            "cancel the old standing order".to_string(),
        ];
        let v = whole_vector(&tasks, &[vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
        let norm = (v[0] * v[0] + v[1] * v[1]).sqrt();
        assert!((norm - 1.0).abs() < 1e-6, "normalised: {v:?}");
        assert!(
            (v[1] / v[0] - 5.0 / 3.0).abs() < 1e-5,
            "weighted by words: {v:?}"
        );
        assert_eq!(whole_vector(&[], &[]), None);
        let opposite = whole_vector(
            &[tasks[0].clone(), tasks[0].clone()],
            &[vec![1.0, 0.0], vec![-1.0, 0.0]],
        );
        assert_eq!(opposite, None, "a zero mean has no direction");
    }
}
