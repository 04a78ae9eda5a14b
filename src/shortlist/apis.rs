//! Endpoints scored together with their API.
//!
//! In a catalog of many APIs, a request often says which API it means ("tracks from
//! Soundcloud", "the carbon emission reports") in words that only the API's title or its
//! other endpoints carry: an endpoint called "Search" of a music API is the right one for
//! "find a song on Soundcloud", although its own text says nothing of songs. So each API
//! gets a score of its own for the request (dense: the centroid of its endpoints' vectors;
//! lexical: BM25 over its title and id), and an endpoint's score is
//! blended with its API's. A catalog of one API is left alone: there is nothing to choose.

use super::fusion;
use crate::catalog::Endpoint;
use crate::index::vectors::normalized;
use crate::index::Bm25;

/// The APIs of a catalog, as retrieval units.
pub struct Apis {
    /// Position -> API number.
    api_of: Vec<usize>,
    /// Normalised mean of each API's endpoint vectors (empty when vectors are missing).
    centroids: Vec<Vec<f32>>,
    /// Over one text per API: its title and id.
    bm25: Bm25,
}

impl Apis {
    /// `None` for a catalog of a single API.
    pub fn build(records: &[Endpoint], row: impl Fn(usize) -> Option<Vec<f32>>) -> Option<Apis> {
        let mut names: Vec<&str> = Vec::new();
        let mut api_of = Vec::with_capacity(records.len());
        for e in records {
            let i = match names.iter().position(|n| *n == e.api) {
                Some(i) => i,
                None => {
                    names.push(&e.api);
                    names.len() - 1
                }
            };
            api_of.push(i);
        }
        if names.len() < 2 {
            return None;
        }
        let mut docs = vec![String::new(); names.len()];
        let mut sums: Vec<Vec<f32>> = vec![Vec::new(); names.len()];
        let mut complete = true;
        for (p, e) in records.iter().enumerate() {
            let a = api_of[p];
            if docs[a].is_empty() {
                docs[a] = format!("{} {}", e.api_title, e.api.replace(['_', '-'], " "));
            }
            match row(p) {
                Some(v) if sums[a].is_empty() => sums[a] = v,
                Some(v) if sums[a].len() == v.len() => {
                    for (s, x) in sums[a].iter_mut().zip(v) {
                        *s += x;
                    }
                }
                _ => complete = false,
            }
        }
        let centroids = if complete {
            sums.iter().map(|s| normalized(s)).collect()
        } else {
            Vec::new()
        };
        Some(Apis {
            api_of,
            centroids,
            bm25: Bm25::build(&docs),
        })
    }

    /// Each position's API score for a request text (0..=1, rescaled over the APIs that
    /// have an allowed endpoint), dense and lexical weighted as the endpoint scores are.
    pub fn scores(
        &self,
        text: &str,
        vector: Option<&[f32]>,
        allowed: &[bool],
        dense_weight: f32,
    ) -> Vec<f32> {
        let n = self.bm25.len();
        let mut in_play = vec![false; n];
        for (p, &a) in self.api_of.iter().enumerate() {
            if allowed.get(p).copied().unwrap_or(false) {
                in_play[a] = true;
            }
        }
        let lexical = fusion::rescale(&self.bm25.scores(text), &in_play);
        let dense = match vector {
            Some(v) if !self.centroids.is_empty() => {
                let sims: Vec<f32> = self
                    .centroids
                    .iter()
                    .map(|c| c.iter().zip(v).map(|(a, b)| a * b).sum())
                    .collect();
                Some(fusion::rescale(&sims, &in_play))
            }
            _ => None,
        };
        let w = dense_weight.clamp(0.0, 1.0);
        let per_api: Vec<f32> = match dense {
            Some(d) => d
                .iter()
                .zip(&lexical)
                .map(|(d, l)| w * d + (1.0 - w) * l)
                .collect(),
            None => lexical,
        };
        self.api_of.iter().map(|&a| per_api[a]).collect()
    }
}

/// `score` blended with the API's: `(1 - weight) * score + weight * api`.
pub fn blend(scores: &mut [f32], api: &[f32], weight: f32) {
    let w = weight.clamp(0.0, 1.0);
    for (s, a) in scores.iter_mut().zip(api) {
        *s = (1.0 - w) * *s + w * a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ep(api: &str, title: &str, path: &str) -> Endpoint {
        serde_json::from_value(json!({
            "api": api, "api_title": title, "tool_name": format!("{api}{path}"),
            "method": "GET", "path": path, "operation_id": null, "summary": null,
            "description": null, "tags": [], "deprecated": false, "parameters": [],
            "request_body": null, "response_fields": [], "security": [], "servers": [],
            "generated_summary": null, "generated_questions": [],
            "description_provenance": null
        }))
        .unwrap()
    }

    #[test]
    fn the_api_a_request_names_lifts_its_endpoints() {
        let records = vec![
            ep("tunes", "Tune Cloud music", "/search"),
            ep("tunes", "Tune Cloud music", "/tracks/{id}"),
            ep("parcels", "Parcel tracker", "/search"),
        ];
        let apis = Apis::build(&records, |_| None).expect("two APIs");
        let s = apis.scores("search music on Tune Cloud", None, &[true; 3], 0.5);
        assert!(s[0] > s[2] && s[0] == s[1], "{s:?}");
        let mut scores = vec![0.5, 0.1, 0.5];
        blend(&mut scores, &s, 0.5);
        assert!(scores[0] > scores[2], "{scores:?}");
    }

    #[test]
    fn one_api_is_left_alone() {
        let records = vec![ep("a", "A", "/x"), ep("a", "A", "/y")];
        assert!(Apis::build(&records, |_| None).is_none());
    }

    #[test]
    fn centroids_score_by_meaning() {
        let records = vec![ep("a", "A", "/x"), ep("a", "A", "/y"), ep("b", "B", "/z")];
        let rows = [vec![1.0, 0.0], vec![0.8, 0.6], vec![0.0, 1.0]];
        let apis = Apis::build(&records, |p| Some(rows[p].clone())).expect("two APIs");
        let s = apis.scores("", Some(&[1.0, 0.0]), &[true; 3], 1.0);
        assert_eq!(s, [1.0, 1.0, 0.0]);
    }
}
