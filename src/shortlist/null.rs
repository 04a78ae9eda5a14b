//! What a catalog's best cosine looks like for a request chosen without regard to it.
//!
//! A raw cosine that means "nothing fits" among 50 endpoints means "something fits" among
//! 2,000: the more endpoints, the closer the nearest one to any request. So the judgement
//! ([`super::matched`]) also reads where a request's best cosine falls among the best
//! cosines of a fixed set of requests from many unrelated domains (`null_requests.txt`),
//! scored against the same endpoints in play: the catalog's own null distribution. The
//! requests are embedded once per shortlister and their best cosines once per set of
//! endpoints in play (a person's visible APIs, an `api` filter), kept in a small table.

use super::{ShortlistError, Shortlister};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// The null requests, one per line (`#` lines are comments).
const NULL_REQUESTS: &str = include_str!("null_requests.txt");

/// Sets of endpoints in play whose null distribution is kept; the table is emptied when
/// full (a server sees few sets: one per visibility and `api` filter).
const KEPT_SETS: usize = 256;

/// The null requests' vectors and, per set of endpoints in play, their best cosines.
#[derive(Default)]
pub(crate) struct NullCache {
    vectors: OnceLock<Vec<Vec<f32>>>,
    best: Mutex<HashMap<u64, Arc<Vec<f32>>>>,
}

/// The null requests' texts.
pub fn requests() -> impl Iterator<Item = &'static str> {
    NULL_REQUESTS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Where a best cosine falls in a null distribution (sorted ascending).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Standing {
    /// The share of null requests whose best cosine is at least this one.
    pub share_above: f32,
    /// How many standard deviations this cosine lies above the null requests' mean.
    pub z: f32,
}

/// `cosine` against a sorted null distribution; `None` when it is empty.
pub fn standing(null: &[f32], cosine: f32) -> Option<Standing> {
    if null.is_empty() {
        return None;
    }
    let n = null.len() as f32;
    let above = null.len() - null.partition_point(|&c| c < cosine);
    let mean = null.iter().sum::<f32>() / n;
    let var = null.iter().map(|c| (c - mean) * (c - mean)).sum::<f32>() / n;
    Some(Standing {
        share_above: above as f32 / n,
        z: (cosine - mean) / var.sqrt().max(1e-3),
    })
}

impl Shortlister {
    /// The null requests' best cosines among the endpoints `allowed`, sorted ascending.
    pub(super) fn null_distribution(
        &self,
        allowed: &[bool],
    ) -> Result<Arc<Vec<f32>>, ShortlistError> {
        let key = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            allowed.hash(&mut h);
            h.finish()
        };
        if let Some(best) = self
            .null
            .best
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
        {
            return Ok(best);
        }
        let vectors = match self.null.vectors.get() {
            Some(v) => v,
            None => {
                let texts: Vec<String> = requests().map(str::to_string).collect();
                let v = self.embedder.embed_queries(&texts)?;
                self.null.vectors.get_or_init(|| v)
            }
        };
        let mut best = Vec::with_capacity(vectors.len());
        for v in vectors {
            let top = self
                .dense(v, allowed)?
                .into_iter()
                .zip(allowed)
                .filter(|(_, &a)| a)
                .map(|(s, _)| s)
                .fold(f32::NEG_INFINITY, f32::max);
            if top.is_finite() {
                best.push(top);
            }
        }
        best.sort_unstable_by(f32::total_cmp);
        let best = Arc::new(best);
        if let Ok(mut m) = self.null.best.lock() {
            if m.len() >= KEPT_SETS {
                m.clear();
            }
            m.insert(key, best.clone());
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_requests_are_read_without_comments() {
        let all: Vec<&str> = requests().collect();
        assert!(all.len() >= 100, "{}", all.len());
        assert!(all.iter().all(|r| !r.starts_with('#') && r.len() > 10));
    }

    #[test]
    fn standing_counts_the_null_requests_at_or_above() {
        let null = [0.1, 0.2, 0.3, 0.4];
        let s = standing(&null, 0.3).unwrap();
        assert_eq!(s.share_above, 0.5);
        assert!((s.z - 0.4472).abs() < 1e-3, "{s:?}");
        assert_eq!(standing(&null, 0.5).unwrap().share_above, 0.0);
        assert_eq!(standing(&null, 0.0).unwrap().share_above, 1.0);
        assert!(standing(&[], 0.3).is_none());
    }
}
