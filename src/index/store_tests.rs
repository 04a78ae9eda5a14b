//! Tests of [`super`]: incremental builds, crash safety, and a round trip with the real model.

use super::*;
use crate::index::embedder::test_embedder;
use crate::index::vectors::VectorError;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Deterministic vectors from text hashes; counts every text it embeds.
pub(crate) struct Fake {
    id: String,
    dim: usize,
    embedded: AtomicUsize,
}

impl Fake {
    pub(crate) fn new(id: &str, dim: usize) -> Fake {
        Fake {
            id: id.into(),
            dim,
            embedded: AtomicUsize::new(0),
        }
    }
    pub(crate) fn count(&self) -> usize {
        self.embedded.load(Ordering::SeqCst)
    }
}

impl TextEmbedder for Fake {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let h = Sha256::digest(t.as_bytes());
                (0..self.dim)
                    .map(|i| h[i % 32] as f32 - 127.5 + i as f32 * 0.01)
                    .collect()
            })
            .collect())
    }
}

/// Wraps an embedder under another model id, as if the model files had changed.
struct Renamed<'a, E>(&'a E, &'a str, AtomicUsize);

impl<E: TextEmbedder> TextEmbedder for Renamed<'_, E> {
    fn model_id(&self) -> &str {
        self.1
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.2.fetch_add(texts.len(), Ordering::SeqCst);
        self.0.embed(texts)
    }
}

pub(crate) fn doc(key: &str, text: &str) -> IndexedDoc<Value> {
    IndexedDoc {
        key: key.into(),
        text: text.into(),
        lexical_only: String::new(),
        record: json!({ "name": key, "len": text.len() }),
    }
}

pub(crate) fn catalog() -> Vec<IndexedDoc<Value>> {
    vec![
        doc(
            "get_movie_credits",
            "GET /movie/{id}/credits Get the cast and crew of a movie",
        ),
        doc(
            "search_person",
            "GET /search/person Search for people by name",
        ),
        doc(
            "add_tracks",
            "POST /playlists/{id}/tracks Add tracks to a playlist",
        ),
        doc(
            "delete_playlist",
            "DELETE /playlists/{id} Unfollow a playlist",
        ),
    ]
}

pub(crate) fn build(
    dir: &Path,
    docs: Vec<IndexedDoc<Value>>,
    e: &impl TextEmbedder,
) -> (IndexStore<Value>, BuildStats) {
    IndexStore::build(dir, docs, Vec::new(), None, e, 1, |_, _| {}).unwrap()
}

#[test]
fn build_then_open_round_trips_without_embedding() {
    let dir = tempfile::tempdir().unwrap();
    assert!(IndexStore::<Value>::open(dir.path()).unwrap().is_none());
    let e = Fake::new("fake@1", 8);
    let mut calls = Vec::new();
    let (built, stats) =
        IndexStore::build(dir.path(), catalog(), Vec::new(), None, &e, 1, |d, t| {
            calls.push((d, t))
        })
        .unwrap();
    assert_eq!(
        stats,
        BuildStats {
            embedded: 4,
            reused: 0,
            removed: 0,
            written: true
        }
    );
    assert_eq!(calls, [(0, 4), (4, 4)]);

    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(e.count(), 4, "open must not embed");
    assert_eq!(opened.len(), 4);
    assert_eq!(opened.keys(), built.keys());
    assert_eq!(opened.texts(), built.texts());
    assert_eq!(opened.records().unwrap(), built.records().unwrap());
    assert_eq!(opened.manifest(), built.manifest());
    assert_eq!(
        opened.get("search_person").unwrap()["name"],
        "search_person"
    );
    assert_eq!(opened.position("add_tracks"), Some(2));
    // Every key finds its own position, whatever the keys' order; others find none.
    for (i, k) in opened.keys().iter().enumerate() {
        assert_eq!(opened.position(k), Some(i), "{k}");
    }
    for missing in ["", "nope", "zzz", "add_track", "add_tracks_"] {
        assert_eq!(opened.position(missing), None, "{missing}");
    }
    assert!(opened.get("nope").is_none());
    assert!(opened.is_compatible(&e, 1) && !opened.is_compatible(&e, 2));

    let q = e.embed(&[catalog()[2].text.clone()]).unwrap().remove(0);
    let hits = opened.search(&q, 2).unwrap();
    assert_eq!(hits[0].0, 2);
    assert!((hits[0].1 - 1.0).abs() < 1e-2, "half precision: {hits:?}");
    assert_eq!(opened.similarity_all(&q).unwrap().len(), 4);
    assert!(matches!(
        opened.search(&[1.0; 3], 2),
        Err(StoreError::Vector(VectorError::Dim { .. }))
    ));
    assert_eq!(opened.lexical().top_k("playlist tracks", 1)[0].0, 2);
}

#[test]
fn rebuild_embeds_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let e = Fake::new("fake@1", 8);
    build(dir.path(), catalog(), &e);

    let (_, stats) = build(dir.path(), catalog(), &e);
    assert_eq!(
        stats,
        BuildStats {
            embedded: 0,
            reused: 4,
            removed: 0,
            written: false
        }
    );
    assert_eq!(e.count(), 4);

    let mut docs = catalog();
    docs[1].text.push_str(" and their biographies");
    let (s, stats) = build(dir.path(), docs.clone(), &e);
    assert_eq!((stats.embedded, stats.reused, stats.written), (1, 3, true));
    assert_eq!(e.count(), 5);
    assert!(s.texts()[1].ends_with("biographies"));

    // Remove one, add one, reorder: one embedding, vectors follow their docs.
    docs.remove(0);
    docs.push(doc(
        "new_releases",
        "GET /browse/new-releases Get new album releases",
    ));
    docs.swap(0, 1);
    let (s, stats) = build(dir.path(), docs.clone(), &e);
    assert_eq!((stats.embedded, stats.reused, stats.removed), (1, 3, 1));
    for (i, t) in s.texts().iter().enumerate() {
        let v = e.embed(std::slice::from_ref(t)).unwrap().remove(0);
        assert_eq!(s.search(&v, 1).unwrap()[0].0, i);
    }

    // A record change alone re-embeds nothing but is written.
    docs[0].record = json!({"changed": true});
    let (_, stats) = build(dir.path(), docs.clone(), &e);
    assert_eq!((stats.embedded, stats.written), (0, true));

    // So are words searched lexically only: found by BM25, neither embedded nor stored.
    assert_eq!(s.lexical().scores("soundcloud")[0], 0.0);
    docs[0].lexical_only = "Soundcloud".into();
    let (s, stats) = build(dir.path(), docs, &e);
    assert_eq!((stats.embedded, stats.written), (0, true));
    assert!(s.lexical().scores("soundcloud")[0] > 0.0);
    assert!(!s.texts()[0].contains("Soundcloud"));
    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(*opened.records().unwrap()[0], json!({"changed": true}));
}

#[test]
fn model_dim_or_doc_text_version_change_forces_full_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), catalog(), &Fake::new("fake@1", 8));

    let other_model = Fake::new("fake@2", 8);
    let (s, stats) = build(dir.path(), catalog(), &other_model);
    assert_eq!((stats.embedded, stats.reused), (4, 0));
    assert_eq!(s.manifest().model_id, "fake@2");

    let other_dim = Fake::new("fake@2", 16);
    let (s, stats) = build(dir.path(), catalog(), &other_dim);
    assert_eq!((stats.embedded, s.vectors().dim()), (4, 16));

    let (_, stats) = IndexStore::build(
        dir.path(),
        catalog(),
        Vec::new(),
        None,
        &other_dim,
        2,
        |_, _| {},
    )
    .unwrap();
    assert_eq!(stats.embedded, 4);
}

#[test]
fn interrupted_writes_leave_the_previous_index_loadable() {
    let dir = tempfile::tempdir().unwrap();
    let e = Fake::new("fake@1", 8);
    let (good, _) = build(dir.path(), catalog(), &e);

    // What a writer killed at various points leaves behind: a half-written tmp folder, a
    // renamed generation whose CURRENT swap never happened, and a half-written pointer.
    let tmp = dir.path().join(".tmp-4000000000-5");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join(MANIFEST), b"{\"format_version\": 1, \"mod").unwrap();
    std::fs::write(tmp.join(VECTORS), [0u8; 13]).unwrap();
    let orphan = dir.path().join("gen-000009");
    std::fs::create_dir(&orphan).unwrap();
    std::fs::write(orphan.join(DOCS), b"SLSTDOCS").unwrap();
    std::fs::write(dir.path().join("CURRENT.tmp-4000000000"), b"gen-0000").unwrap();

    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(opened.dir(), good.dir());
    assert_eq!(opened.records().unwrap(), good.records().unwrap());

    // The next build succeeds, reuses the live vectors and sweeps the leftovers.
    let mut docs = catalog();
    docs[0].text.push('!');
    let (s, stats) = build(dir.path(), docs, &e);
    assert_eq!((stats.embedded, stats.reused), (1, 3));
    assert!(s.dir().ends_with("gen-000010"));
    assert!(!tmp.exists() && !orphan.exists() && !good.dir().exists());
}

#[test]
fn a_failed_build_changes_nothing() {
    struct Failing;
    impl TextEmbedder for Failing {
        fn model_id(&self) -> &str {
            "failing"
        }
        fn dim(&self) -> usize {
            8
        }
        fn embed(&self, _: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Err(EmbedError::Model {
                model: "failing".into(),
                reason: "boom".into(),
            })
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (good, _) = build(dir.path(), catalog(), &Fake::new("fake@1", 8));
    assert!(IndexStore::build(
        dir.path(),
        catalog(),
        Vec::new(),
        None,
        &Failing,
        1,
        |_, _| {}
    )
    .is_err());
    let dup = vec![doc("a", "x"), doc("a", "y")];
    assert!(
        matches!(IndexStore::build(dir.path(), dup, Vec::new(), None, &Fake::new("fake@1", 8), 1, |_, _| {}), Err(StoreError::DuplicateKey(k)) if k == "a")
    );
    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(opened.dir(), good.dir());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "only CURRENT and one generation"
    );
}

#[test]
fn damaged_index_is_an_error_on_open_and_rebuilt_on_build() {
    let dir = tempfile::tempdir().unwrap();
    let e = Fake::new("fake@1", 8);
    let (good, _) = build(dir.path(), catalog(), &e);
    std::fs::write(good.dir().join(VECTORS), [1u8; 10]).unwrap();
    assert!(matches!(
        IndexStore::<Value>::open(dir.path()),
        Err(StoreError::Vector(VectorError::Corrupt { .. }))
    ));
    let (_, stats) = build(dir.path(), catalog(), &e);
    assert_eq!(stats.embedded, 4);
    assert!(IndexStore::<Value>::open(dir.path()).unwrap().is_some());

    // Records that do not match the manifest are refused, not misattributed.
    let s = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    let docs_bin = std::fs::read(s.dir().join(DOCS)).unwrap();
    for cut in [4, 12, 100, docs_bin.len() - 1] {
        std::fs::write(s.dir().join(DOCS), &docs_bin[..cut]).unwrap();
        assert!(
            matches!(
                IndexStore::<Value>::open(dir.path()),
                Err(StoreError::Corrupt { .. })
            ),
            "cut at {cut}"
        );
    }
    std::fs::write(s.dir().join(DOCS), &docs_bin).unwrap();

    // Another format is an error that says what to do.
    let mut m = s.manifest().clone();
    m.format_version = FORMAT_VERSION + 1;
    std::fs::write(s.dir().join(MANIFEST), serde_json::to_vec(&m).unwrap()).unwrap();
    let err = IndexStore::<Value>::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::OldFormat { .. }));
    assert!(err.to_string().contains("shortlist index"), "{err}");
}

#[test]
fn empty_catalog_builds_and_opens() {
    let dir = tempfile::tempdir().unwrap();
    let (s, stats) = build(dir.path(), Vec::new(), &Fake::new("fake@1", 8));
    assert!(s.is_empty() && stats.written);
    let s = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert!(s.search(&[1.0; 8], 5).unwrap().is_empty());
}

/// The child half of [`sigkill_during_builds_never_breaks_the_index`]: builds forever.
#[test]
#[ignore]
fn child_build_loop() {
    let Some(dir) = std::env::var_os("SHORTLIST_TEST_KILL_DIR") else {
        return;
    };
    let e = Fake::new("fake@1", 8);
    for round in 0usize.. {
        let docs = (0..500)
            .map(|i| doc(&format!("op{i}"), &format!("round {} op {i}", round % 2)))
            .collect();
        IndexStore::build(Path::new(&dir), docs, Vec::new(), None, &e, 1, |_, _| {}).unwrap();
    }
}

#[test]
fn sigkill_during_builds_never_breaks_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let e = Fake::new("fake@1", 8);
    let docs = (0..500)
        .map(|i| doc(&format!("op{i}"), &format!("round 0 op {i}")))
        .collect();
    build(dir.path(), docs, &e);
    let exe = std::env::current_exe().unwrap();
    for delay_ms in [5, 17, 33, 60, 95, 140, 210, 300] {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "index::store::tests::child_build_loop",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SHORTLIST_TEST_KILL_DIR", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        let s = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
        assert_eq!(s.len(), 500);
        let round = &s.texts()[0][..7];
        assert!(
            s.texts().iter().all(|t| t.starts_with(round)),
            "mixed generations after kill at {delay_ms} ms"
        );
        let q = e.embed(&[s.texts()[42].clone()]).unwrap().remove(0);
        assert_eq!(s.search(&q, 1).unwrap()[0].0, 42);
    }
}

#[test]
fn real_model_round_trip_reembeds_only_changes() {
    let real = test_embedder();
    let dir = tempfile::tempdir().unwrap();
    let counting = Renamed(real, real.model_id(), AtomicUsize::new(0));
    let (_, stats) = build(dir.path(), catalog(), &counting);
    assert_eq!((stats.embedded, counting.2.load(Ordering::SeqCst)), (4, 4));

    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert!(opened.is_compatible(real, 1));
    let q = real.embed_one("who starred in the film?").unwrap();
    assert_eq!(opened.search(&q, 1).unwrap()[0].0, 0);
    let q = real.embed_one("put a song on my list").unwrap();
    assert_eq!(opened.search(&q, 1).unwrap()[0].0, 2);

    let (_, stats) = build(dir.path(), catalog(), &counting);
    assert_eq!((stats.embedded, counting.2.load(Ordering::SeqCst)), (0, 4));

    let mut docs = catalog();
    docs[3].text = "DELETE /playlists/{id} Remove a playlist from the library".into();
    let (_, stats) = build(dir.path(), docs.clone(), &counting);
    assert_eq!((stats.embedded, counting.2.load(Ordering::SeqCst)), (1, 5));

    let renamed = Renamed(
        real,
        "all-MiniLM-L6-v2@000000000000/mean/256",
        AtomicUsize::new(0),
    );
    let (s, stats) = build(dir.path(), docs, &renamed);
    assert_eq!(
        (
            stats.embedded,
            stats.reused,
            renamed.2.load(Ordering::SeqCst)
        ),
        (4, 0, 4)
    );
    assert!(!s.is_compatible(real, 1));
}
