//! Retrieval checks: a generated text enters the index only if it makes its endpoint easier
//! to find (the ToolFactory idea of validating what a model wrote, applied to retrieval).
//!
//! A small model's texts hurt retrieval in two ways, both measured on RestBench: sentences
//! every endpoint shares ("This endpoint allows users to ... a specific movie ID") pull all
//! doc texts towards each other, and a text that describes another endpoint draws that
//! endpoint's requests to the wrong one. Each check below refuses one of them, using only
//! the catalog itself (never a benchmark's queries):
//!
//! - **finds its endpoint**: the text, used as a request against the catalog's doc texts
//!   *without* anything generated, ranks its own endpoint in the top [`CheckConfig::top`]
//!   (the product's hybrid score: dense cosine and BM25, min-max rescaled, summed): first, by
//!   default. A text that fits a sibling better, or fits everything equally, fails;
//! - **adds words**: it brings at least one distinctive word the endpoint's doc text does
//!   not already hold (a word found in at most a fifth of the catalog's generated texts:
//!   "endpoint", "retrieve", "specific" are in most of them);
//! - **not a near-duplicate**: no other endpoint's text of the same field is nearly the same
//!   (cosine at least [`CheckConfig::duplicate`]).
//!
//! Questions are checked one by one; the set passes when one of them does, and keeps only
//! those that pass. What fails is not written where the index reads it: the reason goes
//! into the field's provenance marker (`apply`), for the reviewer.

use crate::index::lexical::{tokenize, Bm25};
use crate::index::Embedder;
use std::collections::{HashMap, HashSet};

/// A word in more than this share of the generated texts says nothing about one endpoint.
const COMMON_SHARE: f64 = 0.2;

/// Thresholds of the checks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckConfig {
    /// The text must rank its endpoint within this many of the catalog.
    pub top: usize,
    /// Cosine at or above which two endpoints' texts of one field are near-duplicates
    /// (above 1: the check is off).
    pub duplicate: f32,
    /// Whether a text must add a distinctive word.
    pub new_words: bool,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            top: 1,
            duplicate: 0.85,
            new_words: true,
        }
    }
}

/// The kind of a generated text; near-duplicates are looked for within one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Description,
    Summary,
    Question,
}

/// One generated text to check.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The position of its endpoint in the catalog's doc texts.
    pub endpoint: usize,
    pub kind: Kind,
    pub text: String,
}

/// Checks every candidate against the catalog whose doc texts (without generated text)
/// are `docs`, named `labels` in reasons. `lexical` holds what each endpoint is searched
/// by besides its doc text, though not embedded (a one-word API title,
/// [`crate::index::doc_text::lexical_only`]; may be shorter than `docs`, or empty), so
/// that the checks read each endpoint as the index does. One verdict per candidate, in
/// order: `Ok` or the reason it fails.
pub fn check(
    docs: &[String],
    lexical: &[String],
    labels: &[String],
    candidates: &[Candidate],
    embedder: &Embedder,
    config: CheckConfig,
) -> anyhow::Result<Vec<Result<(), String>>> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let doc_vecs = embedder.embed(docs)?;
    let texts: Vec<String> = candidates.iter().map(|c| c.text.clone()).collect();
    let text_vecs = embedder.embed(&texts)?;
    Ok(verdicts(
        docs, lexical, labels, candidates, &doc_vecs, &text_vecs, config,
    ))
}

/// The checks on embedded texts (separate from `check` so that tests can give vectors).
pub fn verdicts(
    docs: &[String],
    lexical: &[String],
    labels: &[String],
    candidates: &[Candidate],
    doc_vecs: &[Vec<f32>],
    text_vecs: &[Vec<f32>],
    config: CheckConfig,
) -> Vec<Result<(), String>> {
    let bm25 = Bm25::build_with(docs, lexical);
    let doc_words: Vec<HashSet<String>> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut words: HashSet<String> = tokenize(d).into_iter().collect();
            words.extend(lexical.get(i).map(|l| tokenize(l)).unwrap_or_default());
            words
        })
        .collect();
    let cand_words: Vec<HashSet<String>> = candidates
        .iter()
        .map(|c| tokenize(&c.text).into_iter().collect())
        .collect();
    // How many endpoints' generated texts hold each word.
    let mut by_endpoint: HashMap<usize, HashSet<&String>> = HashMap::new();
    for (c, words) in candidates.iter().zip(&cand_words) {
        by_endpoint.entry(c.endpoint).or_default().extend(words);
    }
    let mut df: HashMap<&String, usize> = HashMap::new();
    for words in by_endpoint.values() {
        for w in words {
            *df.entry(w).or_default() += 1;
        }
    }
    let endpoints_with_text = by_endpoint.len().max(1) as f64;
    let common = |w: &String| {
        let n = df.get(w).copied().unwrap_or(0) as f64;
        n > 1.0 && n > COMMON_SHARE * endpoints_with_text
    };
    let label = |i: usize| labels.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let own = c.endpoint;
            // Finds its endpoint.
            let dense: Vec<f32> = doc_vecs.iter().map(|d| dot(d, &text_vecs[i])).collect();
            let lexical = bm25.scores(&c.text);
            let score = hybrid(&dense, &lexical);
            let mine = score.get(own).copied().unwrap_or(f32::MIN);
            let rank = 1 + score.iter().filter(|&&s| s > mine).count();
            if rank > config.top {
                let best = (0..score.len())
                    .max_by(|&a, &b| score[a].total_cmp(&score[b]))
                    .unwrap_or(own);
                return Err(format!(
                    "as a request it ranks its endpoint {rank} of {} in the catalog (the top {} \
                     is needed); it fits {} better",
                    docs.len(),
                    config.top,
                    label(best)
                ));
            }
            // Adds words.
            let new: Vec<&String> = cand_words[i]
                .iter()
                .filter(|w| {
                    !doc_words.get(own).is_some_and(|d| d.contains(*w))
                        && !common(w)
                        && w.chars().any(char::is_alphabetic)
                })
                .collect();
            if config.new_words && new.is_empty() {
                return Err(
                    "it adds no distinctive word to what the endpoint's text already says".into(),
                );
            }
            // Not a near-duplicate.
            let twin = candidates.iter().enumerate().find(|(j, o)| {
                *j != i
                    && o.endpoint != own
                    && o.kind == c.kind
                    && dot(&text_vecs[*j], &text_vecs[i]) >= config.duplicate
            });
            if let Some((j, o)) = twin {
                return Err(format!(
                    "it is nearly the same as the text generated for {} (cosine {:.2})",
                    label(o.endpoint),
                    dot(&text_vecs[j], &text_vecs[i])
                ));
            }
            Ok(())
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Dense and lexical scores, each min-max rescaled to 0..1, summed with equal weight (the
/// product's default fusion).
fn hybrid(dense: &[f32], lexical: &[f32]) -> Vec<f32> {
    let d = rescale(dense);
    let l = rescale(lexical);
    d.iter().zip(&l).map(|(a, b)| 0.5 * a + 0.5 * b).collect()
}

fn rescale(v: &[f32]) -> Vec<f32> {
    let (lo, hi) = v
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    if hi - lo <= f32::EPSILON {
        return vec![0.0; v.len()];
    }
    v.iter().map(|x| (x - lo) / (hi - lo)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy catalog of a bakery's API with hand-made 3-d "embeddings": axis 0 is bread,
    /// axis 1 orders, axis 2 opening hours.
    fn catalog() -> (Vec<String>, Vec<String>, Vec<Vec<f32>>) {
        let docs = vec![
            "GET /loaves loaves".to_string(),
            "POST /orders orders".to_string(),
            "GET /hours hours".to_string(),
        ];
        let labels = vec![
            "bakery GET /loaves".to_string(),
            "bakery POST /orders".to_string(),
            "bakery GET /hours".to_string(),
        ];
        let vecs = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        (docs, labels, vecs)
    }

    /// The verdicts on `cands` against [`catalog`], with nothing searched lexically only.
    fn judged(
        cands: &[Candidate],
        text_vecs: &[Vec<f32>],
        cfg: CheckConfig,
    ) -> Vec<Result<(), String>> {
        let (docs, labels, vecs) = catalog();
        verdicts(&docs, &[], &labels, cands, &vecs, text_vecs, cfg)
    }

    fn unit(v: [f32; 3]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn cand(endpoint: usize, kind: Kind, text: &str) -> Candidate {
        Candidate {
            endpoint,
            kind,
            text: text.into(),
        }
    }

    #[test]
    fn a_text_that_fits_another_endpoint_fails() {
        let cands = [cand(0, Kind::Description, "Places a new order for pickup.")];
        let cfg = CheckConfig {
            top: 1,
            ..CheckConfig::default()
        };
        let v = judged(&cands, &[unit([0.1, 1.0, 0.0])], cfg);
        let why = v[0].clone().unwrap_err();
        assert!(why.contains("ranks its endpoint 2 of 3"), "{why}");
        assert!(why.contains("bakery POST /orders"), "{why}");
    }

    #[test]
    fn a_text_that_only_repeats_the_spec_fails_and_a_new_word_passes() {
        let cands = [
            cand(0, Kind::Summary, "GET loaves."),
            cand(2, Kind::Summary, "Tells when the shop opens on Sundays."),
        ];
        let text_vecs = [unit([1.0, 0.0, 0.1]), unit([0.0, 0.1, 1.0])];
        let v = judged(&cands, &text_vecs, CheckConfig::default());
        assert!(v[0]
            .as_ref()
            .unwrap_err()
            .contains("adds no distinctive word"));
        assert_eq!(v[1], Ok(()));
    }

    #[test]
    fn near_duplicates_across_endpoints_fail_and_words_shared_by_most_texts_count_for_nothing() {
        // The same boilerplate for two endpoints: nearly the same vector.
        let cands = [
            cand(0, Kind::Description, "Retrieves sourdough details."),
            cand(1, Kind::Description, "Retrieves order details."),
            cand(2, Kind::Description, "Retrieves details."),
        ];
        let text_vecs = [
            unit([1.0, 0.3, 0.3]),
            unit([0.3, 1.0, 0.3]),
            unit([0.3, 0.3, 1.0]),
        ];
        let cfg = CheckConfig {
            duplicate: 0.7,
            ..CheckConfig::default()
        };
        let v = judged(&cands, &text_vecs, cfg);
        // "retriev" and "detail" are in every text: the third adds nothing else.
        assert!(
            v[2].as_ref()
                .unwrap_err()
                .contains("adds no distinctive word"),
            "{v:?}"
        );
        // Cosine of the first two is 0.58: below 0.7, they pass.
        assert_eq!(v[0], Ok(()));
        let strict = CheckConfig {
            duplicate: 0.5,
            ..CheckConfig::default()
        };
        let v = judged(&cands, &text_vecs, strict);
        assert!(
            v[0].as_ref()
                .unwrap_err()
                .contains("nearly the same as the text generated for bakery POST /orders"),
            "{v:?}"
        );
    }

    #[test]
    fn a_word_the_endpoint_is_searched_by_is_not_new() {
        let (docs, labels, vecs) = catalog();
        let cands = [cand(0, Kind::Summary, "Crumbworks loaves.")];
        let text_vecs = [unit([1.0, 0.0, 0.1])];
        let cfg = CheckConfig::default();
        let title = ["Crumbworks".to_string()];
        let with_title = verdicts(&docs, &title, &labels, &cands, &vecs, &text_vecs, cfg);
        assert!(
            with_title[0]
                .as_ref()
                .is_err_and(|why| why.contains("adds no distinctive word")),
            "{with_title:?}"
        );
        let without = judged(&cands, &text_vecs, cfg);
        assert_eq!(
            without[0],
            Ok(()),
            "the title's word is new to the doc text alone"
        );
    }
}
