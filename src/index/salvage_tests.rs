//! Tests of [`super`]: indexes of earlier formats give their vectors to a build over
//! them, so upgrading re-embeds nothing and loses no enrichment cache.

use crate::index::binfile::{Reader, Writer};
use crate::index::generations::Generations;
use crate::index::layout::{StoreError, DOCS, DOCS_MAGIC, FORMAT_VERSION, MANIFEST, V1_VECTORS};
use crate::index::store::tests::{build, catalog, Fake};
use crate::index::store::{content_hash, IndexStore, IndexedDoc, TextEmbedder};
use serde_json::{json, Value};
use std::path::Path;

/// Writes `docs` as an index of format 1 (records.json, vectors.f32, entries in the
/// manifest), the way shortlist wrote indexes before the binary format.
fn write_format_1(data_dir: &Path, docs: &[IndexedDoc<Value>], e: &Fake) {
    let gen = data_dir.join("gen-000001");
    std::fs::create_dir_all(&gen).unwrap();
    let texts: Vec<String> = docs.iter().map(|d| d.text.clone()).collect();
    let mut flat = Vec::new();
    for v in e.embed(&texts).unwrap() {
        for x in crate::index::vectors::normalized(&v) {
            flat.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(gen.join(V1_VECTORS), flat).unwrap();
    let records: Vec<Value> = docs
        .iter()
        .map(|d| json!({"key": d.key, "text": d.text, "record": d.record}))
        .collect();
    std::fs::write(
        gen.join("records.json"),
        serde_json::to_vec(&records).unwrap(),
    )
    .unwrap();
    let entries: Vec<Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| json!({"key": d.key, "content_hash": content_hash(&d.text, 1), "vector_id": i}))
        .collect();
    let manifest = json!({"format_version": 1, "model_id": e.model_id(), "dim": e.dim(),
        "doc_text_version": 1, "entries": entries, "ann_file": null});
    std::fs::write(gen.join(MANIFEST), serde_json::to_vec(&manifest).unwrap()).unwrap();
    std::fs::write(data_dir.join("CURRENT"), "gen-000001\n").unwrap();
}

#[test]
fn an_index_of_format_1_is_upgraded_without_reembedding_or_losing_the_enrichment_cache() {
    let dir = tempfile::tempdir().unwrap();
    let e = Fake::new("fake@1", 8);
    write_format_1(dir.path(), &catalog(), &e);
    let cache_dir = dir.path().join("enrich-cache");
    std::fs::create_dir_all(&cache_dir).unwrap();
    std::fs::write(cache_dir.join("answers.jsonl"), "{\"kept\": true}\n").unwrap();
    let before = e.count();

    // Searching an old index says what to do instead of reading it.
    let err = IndexStore::<Value>::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::OldFormat { found: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("run `shortlist index`"), "{err}");

    // Building over it reuses every vector, and the cache folder is untouched.
    let mut docs = catalog();
    docs[2].text.push_str(" quickly");
    let (s, stats) = build(dir.path(), docs, &e);
    assert_eq!((stats.embedded, stats.reused, stats.written), (1, 3, true));
    assert_eq!(e.count(), before + 1);
    assert_eq!(
        std::fs::read_to_string(cache_dir.join("answers.jsonl")).unwrap(),
        "{\"kept\": true}\n"
    );
    assert!(!dir.path().join("gen-000001").exists());
    let q = e.embed(&[catalog()[1].text.clone()]).unwrap().remove(0);
    assert_eq!(s.search(&q, 1).unwrap()[0].0, 1);
    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(opened.manifest().format_version, FORMAT_VERSION);
    assert_eq!(opened.records().unwrap(), s.records().unwrap());
}

/// Rewrites the live generation under `data_dir` as format 2 wrote it: `docs.bin` without
/// its last section (the extra bytes) and both version numbers 2.
fn downgrade_to_format_2(data_dir: &Path) {
    let gen = Generations::new(data_dir).current().unwrap().unwrap();
    let bytes = std::fs::read(gen.join(DOCS)).unwrap();
    let path = gen.join(DOCS);
    let (mut r, _) = Reader::open(&bytes, &path, DOCS_MAGIC).unwrap();
    let sections: Vec<&[u8]> = (0..5).map(|_| r.bytes().unwrap()).collect();
    assert!(r.at_end());
    let mut w = Writer::new(DOCS_MAGIC, 2);
    for s in &sections[..4] {
        w.bytes(s);
    }
    std::fs::write(&path, w.finish()).unwrap();
    let mut m: Value = serde_json::from_slice(&std::fs::read(gen.join(MANIFEST)).unwrap()).unwrap();
    m["format_version"] = json!(2);
    std::fs::write(gen.join(MANIFEST), serde_json::to_vec(&m).unwrap()).unwrap();
}

#[test]
fn an_index_of_format_2_is_upgraded_without_reembedding_or_losing_the_enrichment_cache() {
    let dir = tempfile::tempdir().unwrap();
    let e = Fake::new("fake@1", 8);
    let (built, _) = build(dir.path(), catalog(), &e);
    drop(built);
    downgrade_to_format_2(dir.path());
    let cache_dir = dir.path().join("enrich-cache");
    std::fs::create_dir_all(&cache_dir).unwrap();
    std::fs::write(cache_dir.join("answers.jsonl"), "{\"kept\": true}\n").unwrap();
    let before = e.count();

    let err = IndexStore::<Value>::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, StoreError::OldFormat { found: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("vectors are reused"), "{err}");

    // The same docs with extra bytes: nothing embedded, a new generation of this format.
    let (s, stats) = IndexStore::build(
        dir.path(),
        catalog(),
        b"tables".to_vec(),
        None,
        &e,
        1,
        |_, _| {},
    )
    .unwrap();
    assert_eq!((stats.embedded, stats.reused, stats.written), (0, 4, true));
    assert_eq!(e.count(), before);
    assert_eq!(s.extra(), b"tables");
    assert_eq!(
        std::fs::read_to_string(cache_dir.join("answers.jsonl")).unwrap(),
        "{\"kept\": true}\n"
    );
    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(opened.manifest().format_version, FORMAT_VERSION);
    assert_eq!(opened.extra(), b"tables");
    let records: Vec<Value> = catalog().into_iter().map(|d| d.record).collect();
    assert_eq!(
        opened.records().unwrap(),
        records.iter().collect::<Vec<_>>()
    );
    assert_eq!(opened.record(3), Some(&records[3]));
    assert_eq!(opened.record(4), None);
    // Other extra bytes are a change even when no doc changed.
    let (_, stats) = IndexStore::build(
        dir.path(),
        catalog(),
        b"tables 2".to_vec(),
        Some("sources 1".into()),
        &e,
        1,
        |_, _| {},
    )
    .unwrap();
    assert_eq!((stats.embedded, stats.written), (0, true));
    let (_, stats) = IndexStore::build(
        dir.path(),
        catalog(),
        b"tables 2".to_vec(),
        Some("sources 1".into()),
        &e,
        1,
        |_, _| {},
    )
    .unwrap();
    assert!(!stats.written);
    let opened = IndexStore::<Value>::open(dir.path()).unwrap().unwrap();
    assert_eq!(opened.manifest().sources.as_deref(), Some("sources 1"));
    // Other sources with the same docs: a new manifest, nothing embedded.
    let (s, stats) = IndexStore::build(
        dir.path(),
        catalog(),
        b"tables 2".to_vec(),
        Some("sources 2".into()),
        &e,
        1,
        |_, _| {},
    )
    .unwrap();
    assert_eq!((stats.embedded, stats.written), (0, true));
    assert_eq!(s.manifest().sources.as_deref(), Some("sources 2"));
}
