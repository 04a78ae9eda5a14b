//! Indexing and searching with the real embedding model, through the library and the CLI.

use shortlist::catalog::Catalog;
use shortlist::index::catalog_index::{self, EndpointIndex};
use shortlist::index::doc_text::DocVariant;
use shortlist::index::{Embedder, EmbedderConfig};
use shortlist::shortlist::explain::Origin;
use shortlist::shortlist::{Options, Shortlister};
use std::path::{Path, PathBuf};
use std::process::Command;

fn catalogs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs")
}

/// The real model; a missing model fails the test with the fix, never skips it.
fn embedder() -> Embedder {
    Embedder::load(&EmbedderConfig::locate())
        .unwrap_or_else(|e| panic!("{e} (run ./scripts/setup-models.sh)"))
}

fn shortlister(spec: &str, dir: &Path) -> Shortlister {
    let catalog = Catalog::load_paths(&[catalogs().join(spec)]);
    let embedder = embedder();
    let (index, _) =
        catalog_index::build(&catalog, dir, &embedder, DocVariant::default(), |_, _| {}).unwrap();
    Shortlister::new(index, embedder, Options::default()).unwrap()
}

fn top(s: &Shortlister, query: &str, k: usize) -> Vec<String> {
    s.search(query, k, None)
        .unwrap()
        .iter()
        .map(|h| s.endpoint(h.position).unwrap().key())
        .collect()
}

fn assert_in_top(s: &Shortlister, query: &str, k: usize, wanted: &[&str]) {
    let got = top(s, query, k);
    for w in wanted {
        assert!(
            got.iter().any(|g| g == w),
            "{query:?}: {w} not in top {k}: {got:?}"
        );
    }
}

#[test]
fn tmdb_retrieval() {
    let dir = tempfile::tempdir().unwrap();
    let s = shortlister("tmdb.json", dir.path());
    assert_in_top(
        &s,
        "Who directed the top-1 rated movie?",
        10,
        &["GET /movie/top_rated", "GET /movie/{movie_id}/credits"],
    );
    assert_in_top(
        &s,
        "What are the latest movies?",
        10,
        &["GET /movie/latest"],
    );
    assert_in_top(&s, "search for a tv show by name", 5, &["GET /search/tv"]);
}

#[test]
fn spotify_retrieval() {
    let dir = tempfile::tempdir().unwrap();
    let s = shortlister("spotify.json", dir.path());
    assert_in_top(
        &s,
        "Add a song to my playback queue",
        5,
        &["POST /me/player/queue"],
    );
    assert_in_top(
        &s,
        "create a new playlist for me",
        10,
        &["POST /users/{user_id}/playlists"],
    );
    assert_in_top(
        &s,
        "what are the tracks of this album",
        5,
        &["GET /albums/{id}/tracks"],
    );
    assert_in_top(&s, "follow an artist", 10, &["PUT /me/following"]);
}

#[test]
fn reindex_embeds_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = tempfile::tempdir().unwrap();
    let spec = spec_dir.path().join("tmdb.json");
    std::fs::copy(catalogs().join("tmdb.json"), &spec).unwrap();
    let embedder = embedder();
    let build = |e: &dyn Fn(&mut Catalog)| {
        let mut c = Catalog::load_paths(std::slice::from_ref(&spec));
        e(&mut c);
        catalog_index::build(&c, dir.path(), &embedder, DocVariant::default(), |_, _| {})
            .unwrap()
            .1
    };
    let first = build(&|_| {});
    assert_eq!((first.embedded, first.reused), (54, 0));
    let again = build(&|_| {});
    assert_eq!((again.embedded, again.reused), (0, 54));
    let changed = build(&|c| c.endpoints[3].summary = Some("A different summary".into()));
    assert_eq!((changed.embedded, changed.reused), (1, 53));
    // Opening never embeds: the index answers with the stored vectors.
    let opened = EndpointIndex::open(dir.path()).unwrap().unwrap();
    assert_eq!(opened.len(), 54);
    assert!(opened.is_compatible(
        &embedder,
        catalog_index::text_version(DocVariant::default())
    ));
}

/// A catalog of two specs where one spec file changes: only that spec's endpoints are
/// embedded again, whatever the change does to its texts.
#[test]
fn reindex_after_one_spec_changed_embeds_only_that_specs_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = tempfile::tempdir().unwrap();
    for f in ["tmdb.json", "spotify.json"] {
        std::fs::copy(catalogs().join(f), spec_dir.path().join(f)).unwrap();
    }
    let embedder = embedder();
    let build = || {
        let c = Catalog::load_paths(&[spec_dir.path().to_path_buf()]);
        catalog_index::build(&c, dir.path(), &embedder, DocVariant::default(), |_, _| {})
            .unwrap()
            .1
    };
    let first = build();
    assert_eq!((first.embedded, first.reused), (94, 0));
    // Rename the Spotify API and reword one of its operations in the file itself.
    let path = spec_dir.path().join("spotify.json");
    let mut spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    spec["info"]["title"] = "Streaming Music Platform".into();
    std::fs::write(&path, serde_json::to_vec(&spec).unwrap()).unwrap();
    let changed = build();
    assert_eq!((changed.embedded, changed.reused), (40, 54));
}

/// APIs with one-word titles and the same endpoints: a request that names one finds its
/// endpoint first, whichever it names (the title is searched lexically, not embedded).
#[test]
fn a_request_naming_a_one_word_api_finds_that_apis_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = tempfile::tempdir().unwrap();
    for (file, title) in [("a.json", "Quillmark"), ("b.json", "Zentrova")] {
        let spec = serde_json::json!({
            "openapi": "3.0.0",
            "info": {"title": title, "version": "1"},
            "paths": {
                "/user/info": {"get": {"summary": "User info", "description": "Get basic user info.",
                    "parameters": [{"name": "profile_url", "in": "query", "required": true,
                        "schema": {"type": "string"}}]}},
                "/song/info": {"get": {"summary": "Song info", "description": "Get basic information of a song.",
                    "parameters": [{"name": "track_url", "in": "query", "required": true,
                        "schema": {"type": "string"}}]}}
            }
        });
        std::fs::write(spec_dir.path().join(file), spec.to_string()).unwrap();
    }
    let catalog = Catalog::load_paths(&[spec_dir.path().to_path_buf()]);
    let embedder = embedder();
    let (index, _) = catalog_index::build(
        &catalog,
        dir.path(),
        &embedder,
        DocVariant::default(),
        |_, _| {},
    )
    .unwrap();
    let s = Shortlister::new(index, embedder, Options::default()).unwrap();
    for (query, api) in [
        ("Fetch the basic info of a user on Quillmark", "a"),
        ("Fetch the basic info of a user on Zentrova", "b"),
    ] {
        let hits = s.search(query, 3, None).unwrap();
        let first = s.endpoint(hits[0].position).unwrap();
        assert_eq!(
            (first.api.as_str(), first.path.as_str()),
            (api, "/user/info"),
            "{query}"
        );
    }
}

/// A request of many tasks gets each task's endpoint near the top, and its places go to
/// the tasks: the whole request, which favours what fits its overall theme, takes none.
/// A request that may be one chain of steps still ranks by its whole text too.
#[test]
fn a_request_of_many_tasks_gives_its_places_to_its_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let s = shortlister("spotify.json", dir.path());
    let query = "Turn the playback volume down to 30 percent, switch repeat mode off for the \
                 current context, and list the devices that can play music";
    let wanted = [
        "PUT /me/player/volume",
        "PUT /me/player/repeat",
        "GET /me/player/devices",
    ];
    assert_in_top(&s, query, 5, &wanted);
    let (_, explained, _) = s.search_explained(query, 10, None).unwrap();
    assert_eq!(explained.tasks.len(), 3, "{:?}", explained.tasks);
    for x in &explained.hits {
        assert!(
            matches!(x.origin, Origin::TaskPart { .. }) && x.request == 0.0,
            "{x:?}"
        );
    }
    let chain = "Find the album Abbey Road and then list its tracks";
    let (_, explained, _) = s.search_explained(chain, 5, None).unwrap();
    assert!(explained.tasks.len() <= 2, "{:?}", explained.tasks);
    assert!(
        explained.hits.iter().any(|x| x.request > 0.0),
        "{:?}",
        explained.hits
    );
}

/// One embedding serves a search and its explanation: the same hits as `search_in`, the
/// same explanation as `explain`, with and without the cut (which may rank again with a
/// longer head) and for a request of one task and of several.
#[test]
fn a_search_explained_at_once_matches_search_then_explain() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = shortlister("spotify.json", dir.path());
    let requests = [
        "Skip to the next song on my speaker",
        "Turn the volume down, switch repeat off, and list my devices",
    ];
    for cut in [None, Some(0.9)] {
        s.set_options(Options {
            cut,
            ..Options::default()
        });
        for q in requests {
            for k in [1, 5] {
                let (hits, explained, judged) = s.search_explained(q, k, None).unwrap();
                assert_eq!(hits, s.search_in(q, k, None).unwrap(), "{q} k={k} {cut:?}");
                // The same judgement as `find_tools` gives, whatever k.
                assert_eq!(judged, s.search_judged(q, k, None).unwrap().1, "{q} k={k}");
                assert!(judged.is_some());
                assert!(!hits.is_empty());
                assert_eq!(explained, s.explain(q, None, &hits).unwrap(), "{q} k={k}");
                assert_eq!(explained.hits.len(), hits.len());
            }
        }
    }
    let (hits, explained, judged) = s
        .search_explained("anything", 5, Some(&["no-such-api"]))
        .unwrap();
    assert!(hits.is_empty() && explained.hits.is_empty() && judged.is_none());
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_shortlist"))
}

#[test]
fn cli_index_search_and_errors() {
    let data = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["index", "--data-dir"])
        .arg(data.path())
        .arg(catalogs().join("tmdb.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("indexed 54 endpoint(s)"));

    let out = bin()
        .args([
            "search",
            "Who directed the top-1 rated movie?",
            "-k",
            "10",
            "--json",
            "--data-dir",
        ])
        .arg(data.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["matched"], true, "{answer}");
    let hits = answer["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 10);
    assert_eq!(hits[0]["rank"], 1);
    assert!(hits
        .iter()
        .any(|h| h["path"] == "/movie/top_rated" && h["method"] == "GET"));

    // A request nothing in the catalog fits: said, and the closest hits still listed.
    let out = bin()
        .args([
            "search",
            "what is the weather in Berlin tomorrow",
            "-k",
            "3",
            "--json",
            "--data-dir",
        ])
        .arg(data.path())
        .output()
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["matched"], false, "{answer}");
    assert_eq!(answer["hits"].as_array().map(Vec::len), Some(3));
    assert!(
        answer["no_match_probability"].as_f64() > Some(0.5),
        "{answer}"
    );
    let out = bin()
        .args([
            "search",
            "what is the weather in Berlin tomorrow",
            "-k",
            "3",
            "--data-dir",
        ])
        .arg(data.path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing in the catalog seems to fit"));

    let out = bin()
        .args(["search", "movies", "-k", "3", "--data-dir"])
        .arg(data.path())
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(table.lines().next().unwrap().trim_start().starts_with("1 "));

    // No index and no catalog to build it from: exit 2 and one clear line.
    let empty = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["search", "x", "--data-dir"])
        .arg(empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("give the catalog (--config FILE or spec paths) to build it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A missing model says how to fetch it.
    let out = bin()
        .args(["index", "--data-dir"])
        .arg(empty.path())
        .arg(catalogs().join("tmdb.json"))
        .env("SHORTLIST_MODEL_DIR", "/nonexistent/model")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("setup-models.sh"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `search` on a catalog brings its index up to date as `serve` does: built on the first
/// search with serve's progress line, reused while the spec is unchanged, updated for what
/// changed.
#[test]
fn cli_search_builds_the_index_it_needs_then_reuses_it() {
    let specs = tempfile::tempdir().unwrap();
    let spec = specs.path().join("musixmatch.yaml");
    let text = std::fs::read_to_string(catalogs().join("musixmatch.yaml")).unwrap();
    std::fs::write(&spec, &text).unwrap();
    let data = tempfile::tempdir().unwrap();
    let search = || {
        let out = bin()
            .args([
                "search",
                "lyrics of a track",
                "-k",
                "3",
                "--json",
                "--data-dir",
            ])
            .arg(data.path())
            .arg(&spec)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), err)
    };

    let (first, err) = search();
    assert!(
        err.contains("shortlist: embedding 16 new or changed endpoint(s)…"),
        "{err}"
    );
    assert!(err.contains("16 endpoint(s) of 1 API(s) ready"), "{err}");
    let answer: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(answer["hits"].as_array().map(Vec::len), Some(3), "{answer}");

    // Unchanged: opened as it is, nothing said, the same answer.
    let (second, err) = search();
    assert_eq!(
        err, "",
        "an unchanged catalog's search prints only its results"
    );
    assert_eq!(second, first);

    // One operation's text changed: only it is embedded again.
    std::fs::write(
        &spec,
        text.replacen("summary: \"\"", "summary: \"Get an album\"", 1),
    )
    .unwrap();
    let (_, err) = search();
    assert!(
        err.contains("shortlist: embedding 1 new or changed endpoint(s)…"),
        "{err}"
    );
    assert!(err.contains("(1 embedded, 15 reused)"), "{err}");
}

#[test]
fn cli_folder_with_broken_specs_indexes_the_rest() {
    let specs = tempfile::tempdir().unwrap();
    std::fs::copy(
        catalogs().join("musixmatch.yaml"),
        specs.path().join("musixmatch.yaml"),
    )
    .unwrap();
    std::fs::write(
        specs.path().join("broken.yaml"),
        "openapi: 3.0.0\npaths: [\n",
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["index", "--data-dir"])
        .arg(data.path())
        .arg(specs.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a skipped spec is reported in the exit code"
    );
    assert!(
        err.contains("broken.yaml") && err.contains("invalid YAML"),
        "{err}"
    );
    assert!(err.contains("skipped 1 spec(s)"), "{err}");
    assert!(err.contains("indexed 16 endpoint(s)"), "{err}");
}

#[test]
fn missing_runtime_library_says_how_to_fetch_it() {
    let empty = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["index", "--data-dir"])
        .arg(empty.path())
        .arg(catalogs().join("tmdb.json"))
        .env("ORT_DYLIB_PATH", "/nonexistent/libonnxruntime.so")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("setup-models.sh") && err.contains("libonnxruntime"),
        "{err}"
    );
}

/// `search(q, k)` ranks only the head of the list; it must return exactly the first k of
/// the full ranking (positions, scores and why each is there), with and without the cut,
/// for every RestBench query and several k.
#[test]
fn search_is_the_head_of_the_full_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = shortlister("tmdb.json", dir.path());
    let queries: Vec<String> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/restbench/tmdb_queries.jsonl"),
    )
    .expect("RestBench queries")
    .lines()
    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    .filter_map(|v| v["query"].as_str().map(str::to_string))
    .collect();
    assert_eq!(queries.len(), 100);
    for cut in [None, Some(0.8)] {
        s.set_options(Options {
            cut,
            ..Options::default()
        });
        for q in &queries {
            let full = s.rank(q, None).unwrap();
            for k in [1, 3, 5, 10, 30] {
                let head = s.search(q, k, None).unwrap();
                let want = &full[..k.min(full.len())];
                assert_eq!(head.len(), want.len(), "{q:?} k={k} cut={cut:?}");
                for (h, w) in head.iter().zip(want) {
                    assert_eq!(
                        (h.position, h.score.to_bits(), h.source),
                        (w.position, w.score.to_bits(), w.source),
                        "{q:?} k={k} cut={cut:?}"
                    );
                }
            }
        }
    }
}

/// Whether anything fits is judged among the APIs a request may see, never the others: the
/// server filters a person's hidden APIs out the same way (`--api` here, a person's sight
/// there), so an API they cannot see must not make an answer say it fits.
#[test]
fn whether_anything_fits_is_judged_among_the_apis_in_play() {
    let data = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["index", "--data-dir"])
        .arg(data.path())
        .arg(catalogs().join("tmdb.json"))
        .arg(catalogs().join("spotify.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let search = |api: Option<&str>| {
        let mut cmd = bin();
        cmd.args(["search", "the cast and crew of a film", "-k", "3", "--json"]);
        if let Some(a) = api {
            cmd.args(["--api", a]);
        }
        let out = cmd.arg("--data-dir").arg(data.path()).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let all = search(None);
    assert_eq!(all["matched"], true, "{all}");
    // TMDB, which fits, is out of play: nothing in play fits, and only Spotify is listed.
    let spotify = search(Some("spotify"));
    assert_eq!(spotify["matched"], false, "{spotify}");
    let hits = spotify["hits"].as_array().unwrap();
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h["api"] == "spotify"),
        "{spotify}"
    );
}
