//! A catalog change reaches a running server without a restart: an edited spec is seen by
//! the watch (or on SIGHUP), indexed in the background with the unchanged endpoints'
//! vectors reused, served, and announced to clients of both eras (`list_changed` on a
//! session's stream, on a 2026-07-28 `subscriptions/listen` stream). A change that cannot be
//! built leaves the previous catalog served.

mod server_common;
mod support;

use serde_json::{json, Value};
use server_common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::upstream;

/// The fixture spec, copied where the test may edit it.
fn editable_spec(dir: &Path) -> PathBuf {
    let spec = dir.join("tmdb.json");
    std::fs::copy(repo().join("tests/fixtures/upstream_tmdb.json"), &spec).expect("copy spec");
    spec
}

/// Adds an operation the fixture lacks, as a person editing the spec would.
fn add_watch_providers(spec: &Path) {
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(spec).expect("read spec")).expect("spec JSON");
    doc["paths"]["/watch/providers"] = json!({"get": {
        "operationId": "getWatchProviders",
        "summary": "List the streaming services where a movie can be watched",
        "parameters": [{"name": "movie_id", "in": "query", "required": true,
                        "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "The providers"}}
    }});
    // Written aside and renamed, as editors do, so the watch never reads half a file.
    let tmp = spec.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&doc).expect("JSON")).expect("write spec");
    std::fs::rename(&tmp, spec).expect("replace spec");
}

/// Waits until the server's log holds `needle`; false after `secs`.
async fn logged(srv: &HttpServer, needle: &str, secs: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while tokio::time::Instant::now() < deadline {
        if srv.log().contains(needle) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_spec_is_served_and_announced_without_a_restart() {
    let up = upstream::start().await;
    let specs = tempfile::tempdir().expect("temp dir");
    let spec = editable_spec(specs.path());
    let fx = Fixture::with_spec(&spec, &[("tmdb", &up.base_url())], "");
    let srv = HttpServer::start_with_env(
        &fx,
        &["--expose", "catalog", "--watch-secs", "1"],
        &[("RUST_LOG", "shortlist=debug")],
    )
    .await;
    let url = srv.url("/mcp");
    let waiting = json!([
        {"op": "list_tools"},
        {"op": "wait_list_changed", "timeout": 90},
        {"op": "list_tools", "cache_mode": "bypass"},
    ]);
    let modern = tokio::spawn({
        let (url, steps) = (url.clone(), waiting.clone());
        async move { python_client(Target::Http(&url), "auto", steps).await }
    });
    let legacy = tokio::spawn({
        let (url, steps) = (url.clone(), waiting.clone());
        async move { python_client(Target::Http(&url), "legacy", steps).await }
    });
    assert!(
        logged(&srv, "listen stream opened", 60).await
            && logged(&srv, "registered for catalog changes", 60).await,
        "clients did not connect: {}",
        srv.log()
    );

    add_watch_providers(&spec);

    for (era, task) in [("2026-07-28", modern), ("2025-11-25", legacy)] {
        let doc = task.await.expect("client task");
        assert_eq!(doc["protocolVersion"], era);
        assert_eq!(step(&doc, 1)["changed"], true, "{era}: not told: {doc:#}");
        let (before, after) = (names(step(&doc, 0)), names(step(&doc, 2)));
        assert!(
            !before.contains(&"getWatchProviders".to_string()),
            "{before:?}"
        );
        assert!(
            after.contains(&"getWatchProviders".to_string()),
            "{era}: {after:?}"
        );
        assert_eq!(after.len(), before.len() + 1);
    }
    let log = srv.log();
    assert!(log.contains("catalog reloaded"), "{log}");
    // Only the new endpoint was embedded; the others kept their vectors.
    assert!(log.contains("embedded=1"), "{log}");

    // The new endpoint is found and called like any other.
    let doc = python_client(
        Target::Http(&url),
        "auto",
        json!([
            {"op": "call", "tool": "find_tools", "args": {"query": "where can I stream a movie", "k": 3}},
            {"op": "call", "tool": "call_tool", "args": {"name": "getWatchProviders", "arguments": {"movie_id": 550}}},
        ]),
    )
    .await;
    let hits = step(&doc, 0)["structuredContent"]["tools"].to_string();
    assert!(hits.contains("getWatchProviders"), "{hits}");
    let call = up.only();
    assert_eq!(
        (call.path.as_str(), call.query.as_deref()),
        ("/3/watch/providers", Some("movie_id=550"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_and_a_broken_config_keeps_the_catalog_served() {
    let up = upstream::start().await;
    let specs = tempfile::tempdir().expect("temp dir");
    let spec = editable_spec(specs.path());
    let fx = Fixture::with_spec(&spec, &[("tmdb", &up.base_url())], "");
    // No file watch: only SIGHUP reloads.
    let srv = HttpServer::start(&fx, &["--watch-secs", "0"]).await;
    let url = srv.url("/mcp");
    let describe = json!([
        {"op": "call", "tool": "describe_tool", "args": {"name": "getWatchProviders"}},
    ]);
    let hup = || {
        let pid = srv.child.id().expect("server pid") as i32;
        // SAFETY: kill(2) with a valid signal number on our own child process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    };

    add_watch_providers(&spec);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let doc = python_client(Target::Http(&url), "auto", describe.clone()).await;
    assert_eq!(
        step(&doc, 0)["isError"],
        true,
        "reloaded without a watch: {doc:#}"
    );

    hup();
    assert!(logged(&srv, "catalog reloaded", 60).await, "{}", srv.log());
    let doc = python_client(Target::Http(&url), "auto", describe.clone()).await;
    assert_eq!(step(&doc, 0)["isError"], false, "{doc:#}");

    // A config that no longer parses: the reload fails, says why, and the catalog that was
    // served still is.
    let good = std::fs::read(&fx.config).expect("read config");
    std::fs::write(&fx.config, "[[api]\nid = ").expect("break config");
    hup();
    assert!(
        logged(&srv, "catalog reload failed", 60).await,
        "{}",
        srv.log()
    );
    assert!(
        srv.log().contains("catalog.toml"),
        "the error names the file: {}",
        srv.log()
    );
    let doc = python_client(Target::Http(&url), "auto", describe).await;
    assert_eq!(step(&doc, 0)["isError"], false, "{doc:#}");
    std::fs::write(&fx.config, good).expect("restore config");
}
