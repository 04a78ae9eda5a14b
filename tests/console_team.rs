//! The console of a team server, with real parts: a real OpenID provider
//! (tests/oidc/provider.mjs: alice in `eng` and `admins`, bob in `sales`), the real server
//! binary, calls made by a real MCP client against a real upstream on 127.0.0.1, and a
//! real PostgreSQL that goes away.
//!
//! - The audit log is shown to admins (`[auth] admins`) and to the static-token operator;
//!   a person who is not an admin gets 403 and why; `?sub=` and `limit` narrow it; it is
//!   newest first and read from the store the calls were recorded in.
//! - `visible_to` holds in the console: bob's pages do not name an API he does not see.
//! - `shortlist console` reads the store `--state` names, and says when there is none.
//! - A store that goes away makes the audit page say so (503), the rest of the console
//!   keeps working, and the log comes back with the store.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/postgres.rs"]
mod postgres;

use serde_json::{json, Value};
use server_common::*;
use std::time::Duration;
use support::upstream;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `shortlist ARGS` serving HTTP on 127.0.0.1; killed when dropped.
async fn start(args: &[String], env: &[(&str, &str)]) -> server_common::child_server::Started {
    let mut cmd = tokio::process::Command::new(shortlist_bin());
    cmd.args(args)
        .env(TOKEN_ENV, TOKEN)
        .env_remove("SHORTLIST_DATA_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    server_common::child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(180)).await
}

/// `shortlist console -c CONFIG --http 127.0.0.1:0 EXTRA...`.
async fn console(
    fx: &Fixture,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (String, server_common::child_server::Started) {
    let mut args = vec![
        "console".to_string(),
        "-c".to_string(),
        fx.config.display().to_string(),
        "--http".to_string(),
        "127.0.0.1:0".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let s = start(&args, env).await;
    (format!("http://127.0.0.1:{}", s.port), s)
}

/// GET `url` with `token` as bearer; as a browser asks for a page when `page`. The status
/// and the body (JSON, or the page as a JSON string).
async fn get(url: &str, token: Option<&str>, page: bool) -> (u16, Value) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if page {
        req = req.header("accept", "text/html");
    }
    let res = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// The body of a page answer.
fn page(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The endpoints the audit JSON lists, newest first, as `(sub, endpoint)`.
fn calls(doc: &Value) -> Vec<(String, String)> {
    doc["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {doc}"))
        .iter()
        .map(|e| {
            (
                e["sub"].as_str().unwrap_or_default().to_string(),
                e["endpoint"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Calls `tool` (through `call_tool`) as the holder of `token`; asserts the call went out.
async fn call_as(mcp: &str, token: &str, tool: &str) {
    let (doc, ok, err) = python_client_raw(
        Target::Http(mcp),
        "auto",
        json!([{"op": "call", "tool": "call_tool",
                "args": {"name": tool, "arguments": {"movie_id": 550}}}]),
        &[&format!("Authorization: Bearer {token}")],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    assert_ne!(step(&doc, 0)["isError"], true, "{tool}: {doc:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_read_the_audit_log_and_people_see_their_own_apis() {
    let up = upstream::start().await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let audience = format!("{base}/mcp");
    let idp = oidc::Provider::start(&audience).await;
    // `archive` (the last [[api]]) is for `eng`: alice is in it, bob is not.
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url()), ("archive", &up.base_url())],
        &format!(
            "visible_to = {{ groups = [\"eng\"] }}\n\n[auth]\nissuer = {:?}\n\
             audience = {audience:?}\nadmins = {{ groups = [\"admins\"] }}\n",
            idp.issuer
        ),
    );
    let state = fx.dir.path().join("audit.sqlite3");
    let state_arg = format!("sqlite:{}", state.display());
    let addr = format!("127.0.0.1:{port}");
    let args = fx.serve_args(&["--http", &addr, "--state", &state_arg]);
    let srv = start(&args, &[]).await;
    let alice = idp.token("alice", "mcp", None).await;
    let bob = idp.token("bob", "mcp", None).await;

    // The console wants an access token like /mcp.
    let (status, _) = get(&format!("{base}/console/api/health"), None, false).await;
    assert_eq!(status, 401);

    // What each person's console lists: alice sees the archive, bob does not.
    let health = |token: String| {
        let url = format!("{base}/console/api/health");
        async move {
            let (status, doc) = get(&url, Some(&token), false).await;
            assert_eq!(status, 200, "{doc}");
            doc
        }
    };
    let (ha, hb) = (health(alice.clone()).await, health(bob.clone()).await);
    let apis = |doc: &Value| -> Vec<String> {
        doc["apis"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(apis(&ha), ["tmdb", "archive"], "{ha}");
    assert_eq!(apis(&hb), ["tmdb"], "{hb}");
    let tool_of = |doc: &Value, api: &str| -> String {
        doc["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["api"] == api && e["path"] == "/movie/{movie_id}/credits")
            .and_then(|e| e["tool"].as_str())
            .unwrap_or_else(|| panic!("no credits endpoint of {api}: {doc}"))
            .to_string()
    };
    let archive_tool = tool_of(&ha, "archive");
    let tmdb_tool = tool_of(&ha, "tmdb");
    assert!(
        !hb.to_string().contains(&archive_tool) && !hb.to_string().contains("\"archive\""),
        "bob's health names the archive: {hb}"
    );
    // The page and "Try" agree: no archive for bob, even when he names it.
    let (status, body) = get(&format!("{base}/console/health"), Some(&bob), true).await;
    assert_eq!(status, 200);
    assert!(!page(&body).contains("archive"), "{}", page(&body));
    let (status, body) = get(
        &format!("{base}/console/try?q=movie+credits&k=10"),
        Some(&bob),
        true,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(page(&body).contains(&tmdb_tool), "{}", page(&body));
    assert!(!page(&body).contains("archive"), "{}", page(&body));
    let tried = reqwest::Client::new()
        .post(format!("{base}/console/api/try"))
        .bearer_auth(&bob)
        .json(&json!({"query": "movie credits", "api": "archive"}))
        .send()
        .await
        .unwrap();
    assert_eq!(tried.status().as_u16(), 400);
    let e = tried.text().await.unwrap();
    assert!(!e.contains("closest") && !e.contains(&archive_tool), "{e}");
    // bob writes no review (he is no reviewer): the refusal is the same for the hidden API
    // and for one that does not exist, so it tells nothing of the hidden one.
    let review = |api: &'static str| {
        let (url, bob) = (format!("{base}/console/api/review"), bob.clone());
        async move {
            let res = reqwest::Client::new()
                .post(url)
                .bearer_auth(bob)
                .json(
                    &json!({"api": api, "method": "GET", "path": "/movie/{movie_id}/credits",
                              "field": "description", "action": "accept"}),
                )
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.text().await.unwrap())
        }
    };
    let (hidden, unknown) = (review("archive").await, review("nope").await);
    assert_eq!(hidden.0, 403, "{}", hidden.1);
    assert_eq!(hidden, unknown);
    let (_, body) = get(
        &format!("{base}/console/try?q=movie+credits&k=10"),
        Some(&alice),
        true,
    )
    .await;
    assert!(page(&body).contains(&archive_tool), "{}", page(&body));

    // Real calls through /mcp, recorded in the store: alice twice, then bob.
    let mcp = audience.clone();
    call_as(&mcp, &alice, &tmdb_tool).await;
    call_as(&mcp, &alice, &archive_tool).await;
    call_as(&mcp, &bob, &tmdb_tool).await;
    assert_eq!(up.received().len(), 3, "{:?}", up.received());

    // alice, an admin, reads the log: newest first, every field but no request data.
    let (status, doc) = get(&format!("{base}/console/api/audit"), Some(&alice), false).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(
        calls(&doc),
        [
            ("bob".to_string(), tmdb_tool.clone()),
            ("alice".to_string(), archive_tool.clone()),
            ("alice".to_string(), tmdb_tool.clone()),
        ],
        "{doc}"
    );
    let newest = &doc["entries"][0];
    assert_eq!(newest["api"], "tmdb");
    assert_eq!(newest["status"], 200);
    assert!(newest["latency_ms"].is_u64() && newest["at"].as_str().unwrap().ends_with('Z'));
    let at: Vec<i64> = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["at_ms"].as_i64().unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] >= w[1]), "{at:?}");
    // Exactly these fields: nothing of the request (its arguments) or its answer; a call's
    // detail is empty.
    let mut fields: Vec<&str> = newest
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "api",
            "at",
            "at_ms",
            "client_id",
            "detail",
            "endpoint",
            "event",
            "latency_ms",
            "status",
            "sub"
        ]
    );
    assert_eq!(
        (newest["event"].as_str(), &newest["detail"]),
        (Some("call"), &Value::Null)
    );

    // ?sub= and limit narrow it.
    let (_, doc) = get(
        &format!("{base}/console/api/audit?sub=alice"),
        Some(&alice),
        false,
    )
    .await;
    assert_eq!(
        calls(&doc),
        [
            ("alice".to_string(), archive_tool.clone()),
            ("alice".to_string(), tmdb_tool.clone())
        ]
    );
    let (_, doc) = get(
        &format!("{base}/console/api/audit?limit=1"),
        Some(&alice),
        false,
    )
    .await;
    assert_eq!(calls(&doc), [("bob".to_string(), tmdb_tool.clone())]);
    let (_, doc) = get(
        &format!("{base}/console/api/audit?sub=carol"),
        Some(&alice),
        false,
    )
    .await;
    assert!(calls(&doc).is_empty(), "{doc}");
    let (status, doc) = get(
        &format!("{base}/console/api/audit?limit=0"),
        Some(&alice),
        false,
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        doc["error"].as_str().unwrap().starts_with("limit:"),
        "{doc}"
    );

    // The page: linked from the navigation, the rows, and the filter applied.
    let (status, body) = get(&format!("{base}/console/audit?sub=bob"), Some(&alice), true).await;
    assert_eq!(status, 200);
    let html = page(&body);
    assert!(html.contains("href=\"/console/audit\""), "{html}");
    assert!(
        html.contains(&format!("<code>{tmdb_tool}</code>")),
        "{html}"
    );
    assert!(!html.contains(&archive_tool), "the filter: {html}");
    assert!(html.contains("value=\"bob\""), "{html}");

    // bob is not an admin: 403 and why, on the page and in JSON.
    let (status, body) = get(&format!("{base}/console/audit"), Some(&bob), true).await;
    assert_eq!(status, 403);
    assert!(page(&body).contains("admins only"), "{}", page(&body));
    assert!(!page(&body).contains(&tmdb_tool), "{}", page(&body));
    let (status, doc) = get(
        &format!("{base}/console/api/audit?sub=bob"),
        Some(&bob),
        false,
    )
    .await;
    assert_eq!(status, 403);
    assert!(
        doc["error"].as_str().unwrap().contains("bob is not one"),
        "{doc}"
    );
    drop(srv);

    // `shortlist console` on the same store, its operator holding the static token, reads
    // what the server recorded; without a store it says there is none.
    let state_arg = format!("sqlite:{}", state.display());
    let (url, _c) = console(
        &fx,
        &["--state", &state_arg, "--auth-token-env", "CONSOLE_TOKEN"],
        &[("CONSOLE_TOKEN", "operator-secret")],
    )
    .await;
    let (status, doc) = get(
        &format!("{url}/console/api/audit"),
        Some("operator-secret"),
        false,
    )
    .await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(calls(&doc).len(), 3, "{doc}");
    // The operator sees the whole catalog, whatever `visible_to` says.
    let (_, doc) = get(
        &format!("{url}/console/api/health"),
        Some("operator-secret"),
        false,
    )
    .await;
    assert_eq!(apis(&doc), ["tmdb", "archive"], "{doc}");
    let (status, _) = get(&format!("{url}/console/api/audit"), Some("wrong"), false).await;
    assert_eq!(status, 401);
    drop(_c);
    let (url, c) = console(&fx, &[], &[]).await;
    let (status, body) = get(&format!("{url}/console/audit"), None, true).await;
    assert_eq!(status, 503, "{body}");
    assert!(page(&body).contains("no state store"), "{}", page(&body));
    let default_store = fx.dir.path().join("index/state.sqlite3");
    assert!(
        !default_store.exists(),
        "a console created {}: {}",
        default_store.display(),
        c.startup
    );
}

/// A PostgreSQL store that goes away: the audit page says the store is unavailable, the
/// rest of the console answers, and the log is read again once the database is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_store_that_goes_away_is_a_readable_answer() {
    let mut pg = tokio::task::spawn_blocking(postgres::Postgres::start)
        .await
        .expect("start PostgreSQL");
    let url = pg.database("console_audit");
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    // No [auth] and no token on loopback: the console's operator.
    let args = fx.serve_args(&["--http", "127.0.0.1:0", "--state", &url]);
    let srv = start(&args, &[]).await;
    let base = format!("http://127.0.0.1:{}", srv.port);
    let (status, doc) = get(&format!("{base}/console/api/audit"), None, false).await;
    assert_eq!(status, 200, "{doc}");
    assert!(calls(&doc).is_empty(), "{doc}");

    tokio::task::block_in_place(|| pg.kill());
    let (status, doc) = get(&format!("{base}/console/api/audit"), None, false).await;
    assert_eq!(status, 503, "{doc}");
    let e = doc["error"].as_str().unwrap_or_default();
    assert!(e.starts_with("the state store is unavailable"), "{doc}");
    assert!(!e.contains("password"), "{doc}");
    let (status, body) = get(&format!("{base}/console/audit"), None, true).await;
    assert_eq!(status, 503);
    assert!(
        page(&body).contains("the state store is unavailable"),
        "{}",
        page(&body)
    );
    let (status, _) = get(&format!("{base}/console/api/health"), None, false).await;
    assert_eq!(status, 200, "the rest of the console works");

    tokio::task::block_in_place(|| pg.resume());
    let mut last = (0, Value::Null);
    for _ in 0..20 {
        last = get(&format!("{base}/console/api/audit"), None, false).await;
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(last.0, 200, "the store is back: {}", last.1);
}
