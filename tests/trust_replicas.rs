//! Two replicas sharing one PostgreSQL refresh a person's rotating refresh token once:
//! the one that takes the store's lock refreshes and stores, the other waits for the new
//! token instead of spending the old one (which the provider would refuse, asking the
//! person to consent again).
//!
//! Real parts: the test OpenID provider with rotating refresh tokens (each use spends
//! the token used) and 20 s access tokens (every call refreshes, the 30 s margin being
//! longer), PostgreSQL, two server processes, the Python test browser.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/team.rs"]
mod team;

use serde_json::json;
use server_common::{python, repo};
use support::upstream;
use team::{call, result_text, serve_at, Setup};

fn echo_spec(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("notesEcho.json");
    let spec = json!({
        "openapi": "3.0.3", "info": {"title": "notes", "version": "1"},
        "paths": {"/echo": {"get": {"operationId": "notesEcho",
            "responses": {"200": {"description": "the request as received"}}}}}
    });
    std::fs::write(&path, spec.to_string()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_refresh_a_rotating_token_once() {
    let up = upstream::start().await;
    let s = Setup::new(&["--rotate"]).await;
    let pg = tokio::task::block_in_place(postgres::Postgres::start);
    let url = tokio::task::block_in_place(|| pg.database("rotating"));
    let config = s.config(&format!(
        "{}{}",
        Setup::api(
            Some("notes"),
            &echo_spec(s.dir.path()),
            &up.base_url(),
            &format!("allow_private = true\n{}", s.notes_auth(""))
        ),
        s.auth("")
    ));
    // Replica 1 on the audience's port (where consent pages live), replica 2 beside it.
    let r1 = s
        .serve(&config, Some(&url), &["--watch-secs", "0"], &[])
        .await;
    let port2 = oidc::free_port();
    let _r2 = serve_at(port2, &config, &url, &["--watch-secs", "0"], &[]).await;
    let (mcp1, mcp2) = (
        format!("{}/mcp", s.base),
        format!("http://127.0.0.1:{port2}/mcp"),
    );
    let alice = s.token("alice").await;

    // alice consents once.
    let r = call(&mcp1, &alice, "notesEcho", json!({})).await;
    let text = result_text(&r);
    let link = text[text.find("http://").unwrap()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let out = tokio::process::Command::new(python())
        .arg(repo().join("tests/clients/browser_consent.py"))
        .arg(&link)
        .arg("alice")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // One call: the token is refreshed (it is due at once) and rotates.
    let r = call(&mcp1, &alice, "notesEcho", json!({})).await;
    assert_ne!(
        r["isError"],
        true,
        "{}\n{}",
        result_text(&r),
        r1.log.lock().unwrap()
    );

    // Then calls on both replicas at once, several rounds: every one refreshes, and none
    // asks for consent again.
    for round in 0..4 {
        let (a, b) = tokio::join!(
            call(&mcp1, &alice, "notesEcho", json!({})),
            call(&mcp2, &alice, "notesEcho", json!({})),
        );
        for (replica, r) in [(1, a), (2, b)] {
            assert_ne!(
                r["isError"],
                true,
                "round {round}, replica {replica}: {}",
                result_text(&r)
            );
        }
    }
    drop(pg);
}
