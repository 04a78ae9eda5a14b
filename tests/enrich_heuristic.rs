//! `shortlist enrich --llm none` (the heuristic enricher), `--degrade`, and what the catalog
//! loader makes of an enriched copy: the Endpoint fields every later stage (index, tools,
//! invoke) reads.

#[path = "support/enrich_cli.rs"]
mod enrich_cli;

use enrich_cli::*;
use serde_json::{json, Value};
use shortlist::catalog::{enriched_path, Catalog, ParamLocation};
use shortlist::enrich::schema_check;
use shortlist::index::doc_text::{self, DocVariant};
use std::path::{Path, PathBuf};

fn catalogs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs")
}

fn heuristic(spec: &Path, data: &Path) -> Run {
    let r = enrich(&[
        "--llm",
        "none",
        "--json",
        "--data-dir",
        data.to_str().unwrap(),
        spec.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r
}

fn marker<'a>(obj: &'a Value, field: &str) -> &'a Value {
    &obj["x-shortlist-generated"][field]
}

#[test]
fn heuristic_fills_gaps_with_provenance_and_never_touches_human_text() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_json(dir.path(), "movies.json", &tiny_spec());
    let original = std::fs::read(&spec).unwrap();
    let r = heuristic(&spec, &dir.path().join("data"));
    let s = r.summary();
    assert_eq!(s["endpoints"], 3);
    assert_eq!(s["by_llm"]["descriptions"], 0);
    assert_eq!(
        s["by_heuristic"]["descriptions"], 2,
        "missing + weak, not the human one"
    );
    assert_eq!(s["requests"], 0);

    assert_eq!(
        std::fs::read(&spec).unwrap(),
        original,
        "the original is never modified"
    );
    let copy = enriched_path(&spec);
    assert_eq!(copy.file_name().unwrap(), "movies.enriched.json");
    let doc = read_json(&copy);
    assert_eq!(doc["openapi"], "3.0.3", "same version");

    // Missing description: filled in place, marked.
    let credits = op(&doc, "/movie/{movie_id}/credits", "get");
    assert_eq!(credits["description"], "Get movie credits.");
    assert_eq!(marker(credits, "description")["generator"], "heuristic");
    assert_eq!(
        marker(credits, "description")["date"]
            .as_str()
            .unwrap()
            .len(),
        10
    );
    // The path-level parameter got an operation-level copy; the shared one is untouched.
    let movie_id = param(credits, "movie_id");
    assert_eq!(movie_id["example"], 123);
    assert_eq!(marker(movie_id, "example")["generator"], "heuristic");
    assert!(movie_id["description"]
        .as_str()
        .unwrap()
        .starts_with("Identifier of the movie"));
    assert!(doc["paths"]["/movie/{movie_id}/credits"]["parameters"][0]
        .get("description")
        .is_none());
    assert_eq!(
        param(credits, "language")["example"],
        "en-US",
        "pattern respected"
    );

    // Weak description: the generated one goes beside it.
    let search = op(&doc, "/search/movie", "get");
    assert_eq!(search["description"], "searchMovie");
    assert!(search["x-shortlist-description"]
        .as_str()
        .unwrap()
        .starts_with("Search movie"));
    assert_eq!(marker(search, "description")["generator"], "heuristic");
    let query = param(search, "query");
    assert_eq!(query["required"], true, "the $ref was inlined faithfully");
    assert!(query.get("$ref").is_none());
    assert!(
        doc["components"]["parameters"]["Query"]
            .get("example")
            .is_none(),
        "component untouched"
    );
    assert_eq!(param(search, "page")["example"], 1);
    assert_eq!(param(search, "sort")["example"], "popularity.desc");
    assert!(
        param(search, "api_key").get("example").is_none(),
        "no fake credentials"
    );
    assert!(
        search.get("x-shortlist-summary").is_none(),
        "summaries need an LLM"
    );

    // Human text: untouched, unmarked.
    let lists = op(&doc, "/lists", "post");
    assert_eq!(
        lists["description"],
        "Creates a new, empty list owned by the account."
    );
    assert!(lists.get("x-shortlist-description").is_none());
    assert!(lists.get("x-shortlist-generated").is_none());
}

#[test]
fn the_loader_fills_endpoint_fields_from_the_enriched_copy() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_json(dir.path(), "movies.json", &tiny_spec());
    heuristic(&spec, &dir.path().join("data"));
    // Add what an LLM run writes (a summary and questions), as a reviewer would see them.
    let copy = enriched_path(&spec);
    let mut doc = read_json(&copy);
    let op = &mut doc["paths"]["/search/movie"]["get"];
    op["x-shortlist-summary"] = json!("Finds movies by title.");
    op["x-shortlist-questions"] = json!(["Which movies are called Alien?"]);
    op["x-shortlist-generated"]["summary"] =
        json!({"generator": "m", "template": "endpoint-summary@1", "date": "2026-01-01"});
    std::fs::write(&copy, serde_json::to_string(&doc).unwrap()).unwrap();

    let c = Catalog::load_paths(std::slice::from_ref(&spec));
    assert_eq!(c.problems, vec![]);
    assert_eq!(
        c.apis[0].source, copy,
        "the enriched copy is what was loaded"
    );
    let ep = |path: &str| c.endpoints.iter().find(|e| e.path == path).unwrap();

    let credits = ep("/movie/{movie_id}/credits");
    assert!(credits
        .description
        .as_deref()
        .unwrap()
        .starts_with("Get movie credits"));
    assert_eq!(
        credits.description_provenance.as_ref().unwrap().generator,
        "heuristic"
    );
    let movie_id = credits
        .parameters
        .iter()
        .find(|p| p.name == "movie_id")
        .unwrap();
    assert_eq!(movie_id.location, ParamLocation::Path);
    assert_eq!(movie_id.example, Some(json!(123)));
    assert_eq!(
        movie_id.example_provenance.as_ref().unwrap().generator,
        "heuristic"
    );
    assert!(movie_id.description_provenance.is_some());

    // The weak human text gives way to the generated alternative, marked as generated.
    let search = ep("/search/movie");
    assert!(search
        .description
        .as_deref()
        .unwrap()
        .starts_with("Search movie"));
    assert!(search.description_provenance.is_some());
    assert_eq!(
        search.generated_summary.as_deref(),
        Some("Finds movies by title.")
    );
    assert_eq!(
        search.generated_questions,
        vec!["Which movies are called Alien?"]
    );

    let lists = ep("/lists");
    assert_eq!(
        lists.description.as_deref(),
        Some("Creates a new, empty list owned by the account.")
    );
    assert_eq!(lists.description_provenance, None);

    // The index reads the spec's and the model's text, not the heuristic's: it only restates
    // the operationId, the path and the parameters' names, which the doc text holds anyway.
    let texts = doc_text::build_all(&c.endpoints, DocVariant::Full);
    let text = |path: &str| &texts[c.endpoints.iter().position(|e| e.path == path).unwrap()];
    assert!(movie_id
        .description
        .as_deref()
        .unwrap()
        .contains("(path parameter, integer, required)"));
    assert!(
        !text("/movie/{movie_id}/credits").contains("Get movie credits")
            && !text("/movie/{movie_id}/credits").contains("(path parameter"),
        "{}",
        text("/movie/{movie_id}/credits")
    );
    assert!(text("/movie/{movie_id}/credits").contains("movie_id (path, integer, required)"));
    assert!(
        !text("/search/movie").contains("Search movie")
            && text("/search/movie").contains("Finds movies by title.")
            && text("/search/movie").contains("Which movies are called Alien?"),
        "{}",
        text("/search/movie")
    );
    assert!(text("/lists").contains("Creates a new, empty list owned by the account."));
}

#[test]
fn every_generated_example_on_the_real_specs_passes_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let deg = dir.path().join("degraded");
    for name in [
        "tmdb.json",
        "spotify.json",
        "musixmatch.yaml",
        "adyen_fund.yaml",
    ] {
        let spec = catalogs().join(name);
        let r = enrich(&["--degrade", deg.to_str().unwrap(), spec.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    heuristic(&deg, &dir.path().join("data"));
    let c = Catalog::load_paths(std::slice::from_ref(&deg));
    assert_eq!(c.problems, vec![]);
    assert_eq!(c.endpoints.len(), 54 + 40 + 16 + 8);
    let mut checked = 0;
    for ep in &c.endpoints {
        assert!(ep.description.is_some(), "{}", ep.key());
        for p in &ep.parameters {
            assert!(p.description.is_some(), "{} {}", ep.key(), p.name);
            if let Some(ex) = &p.example {
                let problems = schema_check::check(&p.schema, ex);
                assert!(
                    problems.is_empty(),
                    "{} {} = {ex}: {problems:?}",
                    ep.key(),
                    p.name
                );
                assert!(p.example_provenance.is_some());
                checked += 1;
            }
        }
    }
    assert!(checked > 200, "{checked}");
    // YAML specs get YAML copies.
    let yaml = std::fs::read_to_string(deg.join("musixmatch.enriched.yaml")).unwrap();
    assert!(yaml.starts_with("swagger: \"2.0\""), "{}", &yaml[..40]);
    assert!(
        yaml.contains("x-example:"),
        "Swagger 2.0 parameters carry x-example"
    );
}

#[test]
fn degrade_keeps_operations_and_drops_prose() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deg");
    let tmdb = catalogs().join("tmdb.json");
    let spotify = catalogs().join("spotify.json");
    let r = enrich(&[
        "--degrade",
        out.to_str().unwrap(),
        tmdb.to_str().unwrap(),
        spotify.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = Catalog::load_paths(&[tmdb, spotify]);
    let after = Catalog::load_paths(&[out.join("tmdb.json"), out.join("spotify.json")]);
    assert_eq!(after.problems, vec![]);
    assert_eq!(after.endpoints.len(), before.endpoints.len());
    for (a, b) in after.endpoints.iter().zip(&before.endpoints) {
        assert_eq!(
            (a.method, &a.path, &a.operation_id),
            (b.method, &b.path, &b.operation_id)
        );
        assert_eq!(a.api_title, b.api_title);
        assert_eq!((&a.summary, &a.description), (&None, &None), "{}", a.key());
        assert!(a.tags.is_empty());
        let names = |e: &shortlist::catalog::Endpoint| {
            e.parameters
                .iter()
                .map(|p| (p.name.clone(), p.location, p.schema.get("type").cloned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(a), names(b), "{}", a.key());
        assert!(
            a.parameters
                .iter()
                .all(|p| p.description.is_none() && p.example.is_none()),
            "{}",
            a.key()
        );
    }
    // Degrading in place would destroy the original: refused.
    let r = enrich(&[
        "--degrade",
        out.to_str().unwrap(),
        out.join("tmdb.json").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("refusing to degrade a spec in place"),
        "{}",
        r.stderr
    );
}

#[test]
fn reviewed_values_survive_a_rerun_and_stale_copies_go() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_json(dir.path(), "movies.json", &tiny_spec());
    let data = dir.path().join("data");
    heuristic(&spec, &data);
    let copy = enriched_path(&spec);
    // A reviewer rewrites one generated description and adopts it by deleting its marker.
    let mut doc = read_json(&copy);
    let op = &mut doc["paths"]["/movie/{movie_id}/credits"]["get"];
    op["description"] = json!("Lists the cast of a movie, with the characters they play.");
    op["x-shortlist-generated"]
        .as_object_mut()
        .unwrap()
        .remove("description");
    std::fs::write(&copy, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    let r = heuristic(&spec, &data);
    assert_eq!(r.summary()["specs"][0]["carried"], 1);
    let doc = read_json(&copy);
    let op = op_of(&doc);
    assert_eq!(
        op["description"],
        "Lists the cast of a movie, with the characters they play."
    );
    assert!(op["x-shortlist-generated"].get("description").is_none());
    assert_eq!(
        param(op, "movie_id")["example"],
        123,
        "the rest is regenerated"
    );

    // A spec with nothing left to fill gets no copy, and a stale one is removed.
    let complete = json!({"openapi": "3.1.0", "info": {"title": "T", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "listThings", "description": "Lists every thing in the store.",
            "responses": {"200": {"description": "OK"}}}}}});
    let spec2 = write_json(dir.path(), "complete.json", &complete);
    std::fs::write(enriched_path(&spec2), "{}").unwrap();
    heuristic(&spec2, &data);
    assert!(!enriched_path(&spec2).exists());
}

fn op_of(doc: &Value) -> &Value {
    op(doc, "/movie/{movie_id}/credits", "get")
}

#[test]
fn usage_errors_name_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_json(dir.path(), "movies.json", &tiny_spec());
    let r = enrich(&[spec.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--llm none"), "{}", r.stderr);
    let r = enrich(&["--llm-url", "http://127.0.0.1:9/v1", spec.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--llm-model is required"), "{}", r.stderr);
    let r = shortlist()
        .args([
            "enrich",
            "--llm-url",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "m",
            "--api-key-env",
            "SHORTLIST_TEST_UNSET_KEY",
        ])
        .arg(&spec)
        .output()
        .unwrap();
    let r = Run::from(r);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("SHORTLIST_TEST_UNSET_KEY is not set"),
        "{}",
        r.stderr
    );
    let bad = dir.path().join("prompts");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(
        bad.join("endpoint-summary.txt"),
        "[user]\nSummarize {{metod}}",
    )
    .unwrap();
    let r = enrich(&[
        "--llm-url",
        "http://127.0.0.1:9/v1",
        "--llm-model",
        "m",
        "--prompts",
        bad.to_str().unwrap(),
        spec.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("endpoint-summary.txt: unknown placeholder {{metod}}"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_config_enrich_table_supplies_the_settings() {
    let dir = tempfile::tempdir().unwrap();
    write_json(dir.path(), "movies.json", &tiny_spec());
    let cfg = dir.path().join("catalog.toml");
    std::fs::write(
        &cfg,
        "data_dir = \"data\"\n[enrich]\nllm_url = \"none\"\nconcurrency = 2\n\n[[api]]\nspec = \"movies.json\"\n",
    )
    .unwrap();
    let r = enrich(&["--config", cfg.to_str().unwrap(), "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.summary()["by_heuristic"]["descriptions"], 2);
    assert!(dir.path().join("movies.enriched.json").is_file());
}
