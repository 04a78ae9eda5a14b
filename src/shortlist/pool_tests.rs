//! The candidate ranking of a graph-served catalog against scoring every endpoint: the
//! real catalogs of `catalogs/` and the real model, the catalog forced onto the graph with
//! a few candidates per text, so that the pool is a part of the catalog.

use super::*;
use crate::catalog::Catalog;
use crate::index::catalog_index;
use crate::index::doc_text::DocVariant;
use crate::index::{Embedder, EmbedderConfig};
use crate::shortlist::{Options, HEAD_MARGIN};

use std::path::Path;

/// Dense candidates per text in these tests: enough for a search of 10 (a head of 26, as
/// the 256 of a large catalog are), few enough that the pool leaves endpoints out.
const CANDIDATES: usize = 32;

/// Requests written for this test, each reaching a rule of the ranking that the pool must
/// reproduce: several tasks (each ranked and merged), a named thing (the name-list weight
/// and lookups as prerequisites), a sibling's last path word, identifiers to produce,
/// words no endpoint has (dense scores alone), one word, and requests across APIs.
const WRITTEN: &[&str] = &[
    "Find the movie Inception and then add its soundtrack album to my library",
    "What's the weather in Berlin tomorrow? Also, get the lyrics of Bohemian Rhapsody",
    "Skip to the next song, turn the volume down and show my saved albums",
    "Who directed The Dark Knight?",
    "Play \"Blinding Lights\" by The Weeknd",
    "go back to the previous track",
    "what is playing right now",
    "list the reviews of the most popular movie",
    "add the top track of Adele to a new playlist",
    "qwertyuiop zxcvbnm",
    "forecast",
    "transfer funds between two balance accounts, then check the balance",
    "hourly temperature and precipitation for Lisbon",
    "lyrics of the song currently playing",
];

fn shortlister(dir: &Path) -> Shortlister {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs");
    let specs: Vec<_> = [
        "tmdb.json",
        "spotify.json",
        "adyen_fund.yaml",
        "musixmatch.yaml",
        "open_meteo.yaml",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    let catalog = Catalog::load_paths(&specs);
    let embedder = Embedder::load(&EmbedderConfig::locate())
        .unwrap_or_else(|e| panic!("{e} (run ./scripts/setup-models.sh)"));
    let (index, _) =
        catalog_index::build(&catalog, dir, &embedder, DocVariant::default(), |_, _| {}).unwrap();
    let mut s = Shortlister::new(index.with_exact_max(16), embedder, Options::default()).unwrap();
    s.set_graph_ranking(CANDIDATES, true);
    s
}

fn queries() -> Vec<String> {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/restbench");
    let mut out: Vec<String> = WRITTEN.iter().map(|q| q.to_string()).collect();
    for f in ["tmdb_queries.jsonl", "spotify_queries.jsonl"] {
        let text = std::fs::read_to_string(bench.join(f)).expect("RestBench queries");
        out.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter_map(|v| v["query"].as_str().map(str::to_string)),
        );
    }
    assert_eq!(out.len(), WRITTEN.len() + 157);
    out
}

/// A request's texts and their embeddings, as `Shortlister::prepare` makes them
/// under `options` (embedded once per request for every variant of the test).
struct Request {
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
}

impl Request {
    fn new(s: &Shortlister, query: &str) -> Request {
        let mut texts = vec![query.to_string()];
        texts.extend(tasks::split(query));
        let vectors = s.embedder.embed(&texts).unwrap();
        Request { texts, vectors }
    }

    fn under(&self, options: &Options) -> (&[String], &[Vec<f32>]) {
        let t = if options.split { self.texts.len() } else { 1 };
        let v = match options.retrieval {
            Retrieval::Lexical => 0,
            _ => t,
        };
        (&self.texts[..t], &self.vectors[..v])
    }
}

/// Every ranking head from the pool equals the head of the ranking that scores every
/// endpoint (positions, scores to the bit, and why each is there), under the default
/// options and under options that switch each rule on or off; and the pool answers alone
/// for most requests, from a part of the catalog.
#[test]
fn the_pool_ranks_as_scoring_every_endpoint_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = shortlister(dir.path());
    let n = s.len();
    assert!(n > 100 && s.index.vectors().has_ann(), "{n} endpoints");
    assert!(s.pool_applies());
    let requests: Vec<(String, Request)> = queries()
        .into_iter()
        .map(|q| {
            let r = Request::new(&s, &q);
            (q, r)
        })
        .collect();
    let d = Options::default();
    let variants = [
        d.clone(),
        Options {
            cut: Some(0.8),
            ..d.clone()
        },
        Options {
            retrieval: Retrieval::Lexical,
            ..d.clone()
        },
        Options {
            retrieval: Retrieval::Dense,
            cut: Some(0.5),
            ..d.clone()
        },
        Options {
            dense_weight: 0.3,
            part_weight: 0.7,
            chain_max_tasks: 3,
            name_list_weight: 0.5,
            sibling_weight: 0.5,
            ..d.clone()
        },
        Options {
            split: false,
            expand: false,
            ..d.clone()
        },
    ];
    let key = |h: &Hit| (h.position, h.score.to_bits(), h.source);
    let (mut answered, mut sizes) = (0, Vec::new());
    for options in &variants {
        s.set_options(options.clone());
        for (q, r) in &requests {
            let (texts, vectors) = r.under(options);
            for head in [1, 5, 10 + HEAD_MARGIN, 40 + HEAD_MARGIN] {
                s.set_graph_ranking(CANDIDATES, true);
                let pooled = s.rank_texts(q, texts, vectors, None, head).unwrap();
                s.set_graph_ranking(CANDIDATES, false);
                let every = s.rank_texts(q, texts, vectors, None, head).unwrap();
                assert_eq!(
                    pooled.iter().map(key).collect::<Vec<_>>(),
                    every.iter().map(key).collect::<Vec<_>>(),
                    "{q:?} head={head} {options:?}"
                );
            }
            // How often the pool answers a search for 10 alone, and from how much.
            if options == &d {
                s.set_graph_ranking(CANDIDATES, true);
                let chain = d.chain(texts.len() - 1);
                let alone = s.pooled_ranking(q, texts, vectors, chain, 10 + HEAD_MARGIN);
                if let Some((_, scored)) = alone.unwrap() {
                    answered += 1;
                    sizes.push(scored);
                }
            }
        }
    }
    sizes.sort_unstable();
    let median = sizes.get(sizes.len() / 2).copied().unwrap_or(n);
    eprintln!(
        "the pool answered {answered} of {} searches alone; median pool {median} of {n} endpoints",
        requests.len(),
    );
    assert!(answered * 10 >= requests.len() * 9);
    assert!(median * 3 < n * 2);
}

#[test]
fn a_pool_knows_its_members_and_their_slots() {
    let mut pool = Pool::new(200);
    for p in [130, 3, 64, 63, 199, 3, 0] {
        pool.insert(p);
    }
    pool.seal();
    assert_eq!(pool.positions, [0, 3, 63, 64, 130, 199]);
    for (slot, &p) in pool.positions.iter().enumerate() {
        assert_eq!(pool.slot(p), Some(slot), "{p}");
    }
    for p in [1, 62, 65, 198, 200, 5000] {
        assert_eq!(pool.slot(p), None, "{p}");
    }
    let mut empty = Pool::new(0);
    empty.seal();
    assert_eq!((empty.len(), empty.slot(0)), (0, None));
}

/// A scale from a list's lowest and highest score rescales as [`fusion::rescale`] does.
#[test]
fn a_scale_rescales_as_fusion_does() {
    let every = [0.2f32, 0.5, 0.2, 0.9, 0.2, 0.3];
    let full = fusion::rescale(&every, &[true; 6]);
    // The pool's scores and the one value shared by the rest.
    let scale = Scale::of([0.5, 0.9, 0.3, 0.2].into_iter());
    for (p, s) in every.iter().enumerate() {
        assert_eq!(scale.apply(*s).to_bits(), full[p].to_bits(), "{p}");
    }
    assert_eq!(Scale::of([0.4, 0.4].into_iter()).apply(0.4), 0.0);
}

/// The top matches of a list with ties take every tie of the last one, and the best
/// score left out is below them.
#[test]
fn the_top_matches_take_their_ties() {
    let texts: Vec<String> = [
        "movie",
        "movie",
        "movie list",
        "movie",
        "music",
        "movie movie",
    ]
    .map(String::from)
    .to_vec();
    let bm = crate::index::lexical::Bm25::build(&texts);
    let scores = bm.scores("movie");
    for k in 1..=7 {
        let bm25 = bm.query("movie");
        let matches = bm25.matches();
        let mut found = Found {
            near: Vec::new(),
            floor: 0.0,
            dense: Scale::of(std::iter::once(0.0)),
            lexical: Scale::of(scores.iter().copied()),
            bm25,
            matches,
        };
        let (top, below) = found.top(k, texts.len());
        let inside: Vec<usize> = top.iter().map(|m| m.0 as usize).collect();
        assert!(inside.len() >= k.min(5), "k={k}: {inside:?}");
        let lowest = inside
            .iter()
            .map(|&d| scores[d])
            .fold(f32::INFINITY, f32::min);
        let outside: Vec<f32> = (0..texts.len())
            .filter(|d| !inside.contains(d))
            .map(|d| scores[d])
            .collect();
        assert!(outside.iter().all(|&s| s < lowest), "k={k}: ties left out");
        assert_eq!(below, outside.iter().copied().reduce(f32::max), "k={k}");
    }
}
