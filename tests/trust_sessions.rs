//! A session is its person's, on every method: a 2025-11-25 session id used with another
//! person's token is answered as an unknown session (404) on POST, GET (the notification
//! stream and its resumption) and DELETE, from the moment the session is initialized; and
//! a legacy SSE connection is its person's, with the person carried to every message
//! (visibility, the audit log) as on `/mcp`.
//!
//! Real parts: the test OpenID provider, the server binary, raw HTTP as an attacker sends
//! it, and the Python MCP SDK over the legacy SSE transport.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/team.rs"]
mod team;

use futures::StreamExt;
use serde_json::json;
use server_common::{python_client_raw, step, Target};
use std::time::Duration;
use support::upstream;
use team::{audit_rows, rpc, Setup};

/// A team server with `tmdb` for everyone and `archive` for `eng` (alice, not bob).
async fn server(s: &Setup, base: &str) -> server_common::child_server::Started {
    let spec = server_common::repo().join("tests/fixtures/upstream_tmdb.json");
    let bearer = format!(
        "allow_private = true\nauth = {{ kind = \"bearer\", token_env = {:?} }}",
        server_common::TOKEN_ENV
    );
    let config = s.config(&format!(
        "{}{}{}",
        Setup::api(Some("tmdb"), &spec, base, &bearer),
        Setup::api(
            Some("archive"),
            &spec,
            base,
            &format!("visible_to = {{ groups = [\"eng\"] }}\n{bearer}")
        ),
        s.auth("")
    ));
    s.serve(&config, None, &["--expose", "catalog"], &[]).await
}

/// An HTTP request with `token` and, when given, the session header.
fn req(
    method: reqwest::Method,
    url: &str,
    token: &str,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut r = reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_persons_session_is_unknown_on_every_method() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let _srv = server(&s, &up.base_url()).await;
    let mcp = format!("{}/mcp", s.base);
    let (alice, bob) = (s.token("alice").await, s.token("bob").await);

    // alice initializes a session; bob holds its id from the first moment on.
    let res = req(reqwest::Method::POST, &mcp, &alice, None)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "alice-client", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let sid = res
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_string();
    let _ = res.text().await;

    // Before alice sends anything else: bob's POST, GET, resumption and DELETE all get
    // the answer an unknown session gets.
    let (status, v) = rpc(&mcp, &bob, Some(&sid), "tools/list", json!({})).await;
    assert_eq!(status, 404, "bob's POST on alice's session: {v}");
    let res = req(reqwest::Method::GET, &mcp, &bob, Some(&sid))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404, "bob's GET opened alice's stream");
    let res = req(reqwest::Method::GET, &mcp, &bob, Some(&sid))
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404, "bob's GET replayed alice's answers");
    let unknown = req(reqwest::Method::GET, &mcp, &bob, Some("no-such-session"))
        .send()
        .await
        .unwrap();
    let (a, b) = (unknown.status(), unknown.text().await.unwrap());
    let mine = req(reqwest::Method::DELETE, &mcp, &bob, Some(&sid))
        .send()
        .await
        .unwrap();
    assert_eq!(mine.status(), 404, "bob ended alice's session");
    assert_eq!(
        (a, b),
        (mine.status(), mine.text().await.unwrap()),
        "the same answer as for a session that does not exist"
    );

    // alice's session is untouched and hers.
    let res = req(reqwest::Method::POST, &mcp, &alice, Some(&sid))
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let (status, v) = rpc(&mcp, &alice, Some(&sid), "tools/list", json!({})).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["result"]["tools"].as_array().is_some(), "{v}");
    // Her own DELETE ends it.
    let res = req(reqwest::Method::DELETE, &mcp, &alice, Some(&sid))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let (status, _) = rpc(&mcp, &alice, Some(&sid), "tools/list", json!({})).await;
    assert_eq!(status, 404, "the session is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_sse_transport_carries_the_person() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let _srv = server(&s, &up.base_url()).await;
    let (alice, bob) = (s.token("alice").await, s.token("bob").await);

    // alice opens a connection; bob, knowing its id, cannot post to it.
    let res = reqwest::Client::new()
        .get(format!("{}/sse", s.base))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    let mut first = String::new();
    while !first.contains("sessionId=") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("the endpoint event")
            .expect("a chunk")
            .unwrap();
        first.push_str(&String::from_utf8_lossy(&chunk));
    }
    let path = first
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap()
        .trim()
        .to_string();
    let post = |token: &str| {
        reqwest::Client::new()
            .post(format!("{}{path}", s.base))
            .bearer_auth(token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                           "clientInfo": {"name": "x", "version": "1"}}}))
            .send()
    };
    assert_eq!(
        post(&bob).await.unwrap().status(),
        404,
        "bob posted to alice's connection"
    );
    assert_eq!(post(&alice).await.unwrap().status(), 202);
    drop(stream);

    // With a real client: alice sees the API her group sees, and her call is audited as
    // hers; bob does not see it.
    let steps = json!([
        {"op": "list_tools"},
        {"op": "call", "tool": "call_tool",
         "args": {"name": "archive__getTopRated", "arguments": {}}}
    ]);
    let sse = format!("{}/sse", s.base);
    let (doc, ok, err) = python_client_raw(
        Target::Sse(&sse),
        "legacy",
        steps.clone(),
        &[&format!("Authorization: Bearer {alice}")],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    let names = server_common::names(step(&doc, 0));
    assert!(
        names.iter().any(|n| n.starts_with("archive__")),
        "{names:?}"
    );
    assert_ne!(step(&doc, 1)["isError"], true, "{doc:#}");
    let (doc, ok, err) = python_client_raw(
        Target::Sse(&sse),
        "legacy",
        steps,
        &[&format!("Authorization: Bearer {bob}")],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    let names = server_common::names(step(&doc, 0));
    assert!(
        !names.iter().any(|n| n.starts_with("archive__")),
        "{names:?}"
    );
    assert_eq!(step(&doc, 1)["isError"], true, "{doc:#}");
    let calls: Vec<_> = audit_rows(&s.state_file())
        .into_iter()
        .filter(|(e, ..)| e == "call")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0].1.as_str(), calls[0].2.as_str()),
        ("alice", "archive")
    );
}
