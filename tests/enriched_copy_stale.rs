//! An enriched copy that an operator's later edit of the original has overtaken: the
//! catalog serves the original's endpoints, servers and parameters, keeps the copy's text
//! only for operations that did not change since the copy was made, and says on stderr
//! and on the console's health page that the copy is stale.

mod console_common;
#[path = "support/enrich_cli.rs"]
mod enrich_cli;
mod server_common;
mod support;

use enrich_cli::{enrich, read_json, shortlist, tiny_spec, write_json};
use serde_json::Value;
use shortlist::catalog::{enriched_path, Catalog};
use std::path::{Path, PathBuf};
use support::upstream;

/// The tiny spec calling `server`, enriched by the heuristic; then the original is edited
/// as an operator fixing it would: `POST /lists` removed, `servers` moved to `moved_to`,
/// and `GET /search/movie` given another parameter. `GET /movie/{movie_id}/credits` is
/// left alone.
fn enriched_then_edited(dir: &Path, server: &str, moved_to: &str) -> PathBuf {
    let mut doc = tiny_spec();
    doc["servers"] = serde_json::json!([{ "url": server }]);
    let spec = write_json(dir, "movies.json", &doc);
    let r = enrich(&[
        "--llm",
        "none",
        "--json",
        "--data-dir",
        dir.join("data").to_str().unwrap(),
        spec.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let copy = enriched_path(&spec);
    assert!(copy.is_file(), "{}", r.stderr);
    // Before the edit the copy's text is served.
    let before = Catalog::load_paths(std::slice::from_ref(&spec));
    let search = before.endpoint("searchMovie").expect("searchMovie");
    assert!(
        search
            .parameters
            .iter()
            .any(|p| p.description_provenance.is_some()),
        "the heuristic described searchMovie's parameters: {search:#?}"
    );
    assert!(before.warnings().next().is_none(), "{:?}", before.problems);

    doc["servers"] = serde_json::json!([{ "url": moved_to }]);
    doc["paths"].as_object_mut().unwrap().remove("/lists");
    doc["paths"]["/search/movie"]["get"]["parameters"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"name": "year", "in": "query", "schema": {"type": "integer"}}));
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_json(dir, "movies.json", &doc);
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_original_is_served_and_a_stale_copy_keeps_only_unchanged_text() {
    let old = upstream::start().await;
    let new = upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = enriched_then_edited(dir.path(), &old.base_url(), &new.base_url());

    let catalog = Catalog::load_paths(std::slice::from_ref(&spec));
    let tools: Vec<&str> = catalog
        .endpoints
        .iter()
        .map(|e| e.tool_name.as_str())
        .collect();
    assert_eq!(
        tools,
        ["getMovieCredits", "searchMovie"],
        "the endpoint removed from the original is gone"
    );
    // The unchanged operation keeps its enriched text.
    let credits = catalog.endpoint("getMovieCredits").unwrap();
    assert_eq!(credits.description.as_deref(), Some("Get movie credits."));
    assert!(credits.description_provenance.is_some());
    let movie_id = credits
        .parameters
        .iter()
        .find(|p| p.name == "movie_id")
        .unwrap();
    assert!(movie_id.description.is_some() && movie_id.example.is_some());
    assert_eq!(credits.servers, [new.base_url()], "the original's servers");
    // The changed one has the original's definition and none of the copy's text.
    let search = catalog.endpoint("searchMovie").unwrap();
    assert!(search.parameters.iter().any(|p| p.name == "year"));
    assert!(
        search.description_provenance.is_none()
            && search.generated_summary.is_none()
            && search
                .parameters
                .iter()
                .all(|p| p.description_provenance.is_none() && p.example_provenance.is_none()),
        "no enriched text on a changed operation: {search:#?}"
    );
    let stale: Vec<String> = catalog.warnings().map(|p| p.to_string()).collect();
    assert!(
        stale.iter().any(|w| w.contains("stale")
            && w.contains("GET /search/movie")
            && w.contains("POST /lists")
            && w.contains("movies.enriched.json")),
        "{stale:?}"
    );

    // What a user sees: `shortlist check` says so on stderr ...
    let out = shortlist()
        .arg("check")
        .arg(&spec)
        .output()
        .expect("run shortlist check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stale") && stderr.contains("GET /search/movie"),
        "{stderr}"
    );
    // ... and a call goes to the server the original names now.
    let config = dir.path().join("catalog.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n\n[[api]]\nspec = {spec:?}\nallow_private = true\ntimeout_secs = 5\n",
            dir.path().join("index")
        ),
    )
    .unwrap();
    let out = shortlist()
        .arg("call")
        .arg("getMovieCredits")
        .arg(r#"{"movie_id": 550}"#)
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run shortlist call");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(new.only().path, "/3/movie/550/credits");
    assert!(old.received().is_empty(), "{:?}", old.received());
}

#[test]
fn a_copy_without_its_origin_is_not_served() {
    // A copy made before copies recorded what they were made from: nothing says which of
    // its operations still match the original, so none of its text is used.
    let dir = tempfile::tempdir().unwrap();
    let spec = enriched_then_edited(dir.path(), "https://a.example", "https://b.example");
    let copy = enriched_path(&spec);
    let mut doc: Value = read_json(&copy);
    strip_origin(&mut doc);
    write_json(dir.path(), "movies.enriched.json", &doc);
    let catalog = Catalog::load_paths(std::slice::from_ref(&spec));
    let credits = catalog.endpoint("getMovieCredits").unwrap();
    assert!(credits.description_provenance.is_none(), "{credits:#?}");
    assert!(catalog.endpoint("createList").is_none());
    let warnings: Vec<String> = catalog.warnings().map(|p| p.to_string()).collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("movies.enriched.json") && w.contains("shortlist enrich")),
        "{warnings:?}"
    );
}

/// Removes every `x-shortlist-made-from` of a document.
fn strip_origin(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.shift_remove("x-shortlist-made-from");
            o.values_mut().for_each(strip_origin);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_origin),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_names_a_stale_copy() {
    console_common::require_model();
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    enriched_then_edited(&specs, "https://a.example", "https://b.example");
    let config = dir.path().join("catalog.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n\n[[api]]\nspec = {specs:?}\n",
            dir.path().join("index")
        ),
    )
    .unwrap();
    let cat = console_common::Catalog {
        dir,
        config: config.clone(),
    };
    let srv = console_common::Server::console(&cat, &[], &[]).await;
    let h: Value = reqwest::get(srv.url("/console/api/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let problems = h["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["severity"] == "warning"
            && p["file"]
                .as_str()
                .unwrap()
                .ends_with("movies.enriched.json")
            && p["message"].as_str().unwrap().contains("stale")
            && p["message"].as_str().unwrap().contains("GET /search/movie")),
        "{h:#}"
    );
    assert_eq!(h["apis"][0]["problems"], 1, "{h:#}");
    let page = reqwest::get(srv.url("/console/health"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("stale") && page.contains("movies.enriched.json"),
        "{page}"
    );
    assert!(
        srv.log().contains("stale"),
        "the console says it on stderr too: {}",
        srv.log()
    );
}
