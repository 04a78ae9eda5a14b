//! Whether anything in the catalog fits a request.
//!
//! A ranking always has a best hit, and its rescaled score is near 1 whatever the request:
//! "top rated movies" put to a catalog holding only Spotify comes back with Spotify's
//! top-tracks endpoints at 0.97. The answer says `"matched": false` when the evidence says
//! nothing fits, from raw signals that do not rescale per request:
//!
//! - the best cosine between the request and any endpoint in play, and how far it stands
//!   above the tenth best (a request that fits one endpoint stands out from the rest);
//! - the lowest of the best cosines of the request's tasks (a split request fits when each
//!   part does);
//! - how much of what the request says (its words weighed by rarity, a word no endpoint
//!   uses weighing most) the best hits' texts say too.
//!
//! The signals are combined by a logistic model fitted on no-match sets built from the
//! development suite ([`Calibration`]; how, and the rates it reaches, in
//! `docs/results.md`, "Saying that nothing fits").

use super::{Hit, Request, ShortlistError, Shortlister};
use serde::Serialize;

/// Hits whose texts the coverage looks at.
const COVERAGE_HITS: usize = 5;
/// The rank whose cosine the best one is compared with.
const GAP_RANK: usize = 10;

/// The raw signals of one request against the endpoints in play.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Evidence {
    /// The best cosine between the whole request and an endpoint.
    pub cosine: f32,
    /// `cosine` less the tenth best cosine.
    pub cosine_gap: f32,
    /// The lowest, over the request's tasks, of each task's best cosine (`cosine` for a
    /// request of one task).
    pub task_cosine: f32,
    /// The share of the request's words, weighed by rarity, in the best hit's text.
    pub coverage: f32,
    /// The same share in the texts of the first [`COVERAGE_HITS`] hits together.
    pub coverage_top: f32,
}

/// The logistic model that reads [`Evidence`]: weights of `cosine`, `cosine_gap`,
/// `task_cosine`, `coverage`, `coverage_top`, then the bias; a request whose no-match
/// probability is at least `threshold` is judged unmatched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Calibration {
    pub weights: [f32; 5],
    pub bias: f32,
    pub threshold: f32,
}

/// The calibration in use, fitted by `training/calibrate_matched.py` on the shipped model's
/// evidence over the suite (`shortlist eval --suite datasets/suite.toml --json
/// --per-query`): the weights on the no-match sets whose labels are clean (RestBench's
/// queries against the other API, socbench-dev's against the other services of their own
/// domain), the threshold at the lowest no-match probability that flags at most 5% of the
/// matchable requests of every calibration dataset (RestBench, socbench-dev); toolbench-dev
/// held out. Only the lowest task cosine and the coverage of the first hits count: the
/// other signals added nothing that held on the datasets left out. A query model changes
/// the cosines, and this calibration is the shipped model's.
pub const CALIBRATION: Calibration = Calibration {
    weights: [0.0, 0.0, -11.87, 0.0, -4.529],
    bias: 4.657,
    threshold: 0.875,
};

/// Whether the dynamic exposure keeps the hits of an unmatched request off a client's tool
/// list. Only a judgement that meets its targets on the suite (at least 80% of no-match
/// requests flagged, at most 5% of matchable ones) may change what a client sees; below
/// them it is a reported field only. It is below them (`docs/results.md`, "Saying that
/// nothing fits": 70% of RestBench's no-match requests flagged, 28% of socbench's per
/// domain), so the exposure ignores it.
pub const GATES_EXPOSURE: bool = false;

impl Calibration {
    /// The probability that nothing in the catalog fits.
    pub fn no_match(&self, e: &Evidence) -> f32 {
        let x = [
            e.cosine,
            e.cosine_gap,
            e.task_cosine,
            e.coverage,
            e.coverage_top,
        ];
        let z: f32 = self.bias + self.weights.iter().zip(x).map(|(w, v)| w * v).sum::<f32>();
        1.0 / (1.0 + (-z).exp())
    }
}

/// What was judged of one request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Judgement {
    /// Whether anything in play fits the request.
    pub matched: bool,
    /// The probability that nothing fits ([`Calibration::no_match`]).
    pub no_match: f32,
    pub evidence: Evidence,
}

impl Judgement {
    fn of(evidence: Evidence) -> Judgement {
        let p = CALIBRATION.no_match(&evidence);
        Judgement {
            matched: p < CALIBRATION.threshold,
            no_match: p,
            evidence,
        }
    }
}

impl Shortlister {
    /// [`Shortlister::search_in`] and whether anything fits the request (`None` when it was
    /// not judged: lexical retrieval has no cosines, and nothing fits where nothing is in
    /// play).
    pub fn search_judged(
        &self,
        query: &str,
        k: usize,
        apis: Option<&[&str]>,
    ) -> Result<(Vec<Hit>, Option<Judgement>), ShortlistError> {
        if k == 0 {
            return Ok((Vec::new(), None));
        }
        let Some(request) = self.prepare(query, apis)? else {
            return Ok((Vec::new(), None));
        };
        self.search_and_judge(&request, k)
    }

    /// The first `k` hits of a prepared request, judged on at least the hits the coverage
    /// reads, so that how many hits are asked for never changes the judgement.
    pub(crate) fn search_and_judge(
        &self,
        request: &Request,
        k: usize,
    ) -> Result<(Vec<Hit>, Option<Judgement>), ShortlistError> {
        if k == 0 {
            return Ok((Vec::new(), None));
        }
        let mut hits = self.search_request(request, k.max(COVERAGE_HITS))?;
        let judged = self.judge(request, &hits)?;
        hits.truncate(k);
        Ok((hits, judged))
    }

    /// [`Shortlister::rank`] among the endpoints of `apis` (all when `None`), judged as
    /// [`Shortlister::search_judged`] does.
    pub fn rank_judged(
        &self,
        query: &str,
        apis: Option<&[&str]>,
    ) -> Result<(Vec<Hit>, Option<Judgement>), ShortlistError> {
        let Some(request) = self.prepare(query, apis)? else {
            return Ok((Vec::new(), None));
        };
        let hits = self.rank_request(&request, usize::MAX)?;
        let judged = self.judge(&request, &hits)?;
        Ok((hits, judged))
    }

    /// The evidence of a prepared request and its ranking, judged.
    fn judge(&self, request: &Request, hits: &[Hit]) -> Result<Option<Judgement>, ShortlistError> {
        let Some(whole) = request.vectors.first() else {
            return Ok(None);
        };
        let n = self.index.len();
        let allowed = request.allowed.clone().unwrap_or_else(|| vec![true; n]);
        let in_play = |scores: Vec<f32>| -> Vec<f32> {
            scores
                .into_iter()
                .zip(&allowed)
                .filter(|(_, &a)| a)
                .map(|(s, _)| s)
                .collect()
        };
        let mut cosines = in_play(self.dense(whole, &allowed)?);
        if cosines.is_empty() {
            return Ok(None);
        }
        cosines.sort_unstable_by(|a, b| b.total_cmp(a));
        let cosine = cosines[0];
        let tenth = cosines[(GAP_RANK - 1).min(cosines.len() - 1)];
        let mut task_cosine = cosine;
        if request.vectors.len() > 1 {
            task_cosine = f32::INFINITY;
            for v in &request.vectors[1..] {
                let best = in_play(self.dense(v, &allowed)?)
                    .into_iter()
                    .fold(f32::NEG_INFINITY, f32::max);
                task_cosine = task_cosine.min(best);
            }
        }
        let text = &request.texts[0];
        let lexical = self.index.lexical();
        let top: Vec<usize> = hits
            .iter()
            .take(COVERAGE_HITS)
            .map(|h| h.position)
            .collect();
        let evidence = Evidence {
            cosine,
            cosine_gap: cosine - tenth,
            task_cosine,
            coverage: lexical.coverage(text, &top[..top.len().min(1)]),
            coverage_top: lexical.coverage(text, &top),
        };
        Ok(Some(Judgement::of(evidence)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::index::catalog_index;
    use crate::index::doc_text::DocVariant;
    use crate::index::{Embedder, EmbedderConfig};
    use crate::shortlist::Options;
    use std::path::Path;

    fn shortlister(dir: &Path) -> Shortlister {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs");
        let catalog = Catalog::load_paths(&[root.join("tmdb.json"), root.join("spotify.json")]);
        let embedder = Embedder::load(&EmbedderConfig::locate())
            .unwrap_or_else(|e| panic!("{e} (run ./scripts/setup-models.sh)"));
        let (index, _) =
            catalog_index::build(&catalog, dir, &embedder, DocVariant::default(), |_, _| {})
                .unwrap();
        Shortlister::new(index, embedder, Options::default()).unwrap()
    }

    /// A movie request put to the whole catalog and to Spotify alone: the same hits' kind
    /// of evidence, weaker where only music is in play, and the judgement follows the
    /// calibration.
    #[test]
    fn evidence_is_weaker_where_nothing_fits() {
        let dir = tempfile::tempdir().unwrap();
        let s = shortlister(dir.path());
        let query = "Who directed the movie Inception and what is its rating?";
        let (hits, all) = s.search_judged(query, 5, None).unwrap();
        let all = all.expect("judged");
        assert_eq!(s.tables().api(hits[0].position), "tmdb");
        let spotify = ["spotify"];
        let (hits, music) = s.search_judged(query, 5, Some(&spotify)).unwrap();
        let music = music.expect("judged");
        assert!(hits.iter().all(|h| s.tables().api(h.position) == "spotify"));
        let (a, m) = (all.evidence, music.evidence);
        assert!(a.cosine > m.cosine + 0.1, "{a:?} vs {m:?}");
        assert!(a.coverage_top > m.coverage_top, "{a:?} vs {m:?}");
        assert!(a.task_cosine >= m.task_cosine, "{a:?} vs {m:?}");
        assert!(all.no_match < music.no_match, "{all:?} vs {music:?}");
        for j in [all, music] {
            assert_eq!(j.matched, j.no_match < CALIBRATION.threshold, "{j:?}");
            assert!((0.0..=1.0).contains(&j.no_match));
        }
        // A search for fewer hits than the coverage reads is judged the same.
        let (one, judged) = s.search_judged(query, 1, Some(&spotify)).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(judged, Some(music));
        // Nothing in play: nothing judged.
        let (none, judged) = s.search_judged(query, 5, Some(&["nowhere"])).unwrap();
        assert!(none.is_empty() && judged.is_none());
    }

    #[test]
    fn lexical_retrieval_is_not_judged() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = shortlister(dir.path());
        s.set_options(Options {
            retrieval: crate::shortlist::Retrieval::Lexical,
            ..Options::default()
        });
        let (hits, judged) = s.search_judged("top rated movies", 3, None).unwrap();
        assert_eq!(hits.len(), 3);
        assert!(judged.is_none());
    }
}
