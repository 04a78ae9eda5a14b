//! Visibility fails closed: an API's `visible_to`, `read_only` and `auth` are found by the
//! config entry that loaded its spec, whatever file was read (the enriched copy), whatever
//! the entry names (no `id`, a folder), in the one lookup MCP and the console share; what
//! a person sees is an allow-list; an id claimed by two entries is refused, at start and
//! at a reload, and said so.
//!
//! Real parts: the test OpenID provider (alice in `eng`, bob in `sales`), the server binary,
//! a recording upstream on 127.0.0.1, raw MCP requests as an outsider sends them.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/team.rs"]
mod team;

use serde_json::{json, Value};
use std::time::Duration;
use support::upstream;
use team::{call, result_text, rpc, Setup};

/// The tool names of a `find_tools` answer (or of its API listing: the ids).
fn found(answer: &Value) -> Vec<String> {
    let v = answer
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| serde_json::from_str(&result_text(answer)).unwrap_or_default());
    let mut names: Vec<String> = ["tools", "hits", "apis"]
        .iter()
        .filter_map(|k| v[k].as_array())
        .flatten()
        .filter_map(|h| {
            h["name"]
                .as_str()
                .or_else(|| h["api"].as_str())
                .map(str::to_string)
        })
        .collect();
    if names.is_empty() {
        // The compact answer: one line per hit, its name first.
        names = result_text(answer)
            .lines()
            .filter_map(|l| l.split('(').next())
            .map(|s| s.trim().to_string())
            .filter(|s| s.contains("__"))
            .collect();
    }
    names
}

/// Every tool name in a catalog-exposure `tools/list` (all pages).
async fn listed(mcp: &str, token: &str) -> Vec<String> {
    let mut names = vec![];
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (status, v) = rpc(mcp, token, None, "tools/list", params).await;
        assert_eq!(status, 200, "{v}");
        for t in v["result"]["tools"].as_array().unwrap() {
            names.push(t["name"].as_str().unwrap().to_string());
        }
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return names,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_are_found_by_the_entry_that_loaded_the_spec_and_fail_closed() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let fixture = server_common::repo().join("tests/fixtures/upstream_tmdb.json");
    let dir = s.dir.path();
    // `billing`: no `id`, served from its enriched copy; only `eng` sees it, read-only.
    std::fs::copy(&fixture, dir.join("billing.json")).unwrap();
    std::fs::copy(&fixture, dir.join("billing.enriched.json")).unwrap();
    // `ledger`: in a folder entry, only `eng` sees it.
    std::fs::create_dir(dir.join("books")).unwrap();
    std::fs::copy(&fixture, dir.join("books/ledger.json")).unwrap();
    // `tmdb`: everyone.
    std::fs::copy(&fixture, dir.join("tmdb.json")).unwrap();
    let base = up.base_url();
    let bearer = format!(
        "allow_private = true\nauth = {{ kind = \"bearer\", token_env = {:?} }}",
        server_common::TOKEN_ENV
    );
    let body = format!(
        "{}{}{}{}",
        Setup::api(
            None,
            &dir.join("billing.json"),
            &base,
            &format!("read_only = true\nvisible_to = {{ groups = [\"eng\"] }}\n{bearer}")
        ),
        Setup::api(
            None,
            &dir.join("books"),
            &base,
            &format!("visible_to = {{ groups = [\"eng\"] }}\n{bearer}")
        ),
        Setup::api(Some("tmdb"), &dir.join("tmdb.json"), &base, &bearer),
        s.auth("")
    );
    let config = s.config(&body);
    let srv = s
        .serve(
            &config,
            None,
            &["--expose", "catalog", "--watch-secs", "1"],
            &[],
        )
        .await;
    let mcp = format!("{}/mcp", s.base);
    let (alice, bob) = (s.token("alice").await, s.token("bob").await);

    // bob is not in `eng`: neither API exists for him, in any list or call.
    let bobs = listed(&mcp, &bob).await;
    assert!(bobs.iter().any(|n| n.starts_with("tmdb__")), "{bobs:?}");
    assert!(
        !bobs
            .iter()
            .any(|n| n.starts_with("billing__") || n.starts_with("ledger__")),
        "bob's tools/list names a hidden API: {bobs:?}"
    );
    let hits = call(
        &mcp,
        &bob,
        "find_tools",
        json!({"query": "top rated movies", "k": 20}),
    )
    .await;
    let names = found(&hits);
    assert!(!names.is_empty(), "{hits}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("billing__") || n.starts_with("ledger__")),
        "bob's find_tools ranks a hidden API: {names:?}"
    );
    let apis = found(&call(&mcp, &bob, "find_tools", json!({})).await);
    assert!(
        !apis.iter().any(|a| a == "billing" || a == "ledger"),
        "bob's API listing names a hidden API: {apis:?}"
    );
    for hidden in ["billing__getTopRated", "ledger__getTopRated"] {
        let r = call(
            &mcp,
            &bob,
            "call_tool",
            json!({"name": hidden, "arguments": {}}),
        )
        .await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(result_text(&r).contains("unknown tool"), "{r}");
        let r = call(&mcp, &bob, "describe_tool", json!({"name": hidden})).await;
        assert!(result_text(&r).contains("unknown tool"), "{r}");
    }
    assert!(
        up.received().is_empty(),
        "a hidden API was called: {:?}",
        up.received()
    );

    // alice is in `eng`: she sees both, and `billing` is read-only for her (its entry's
    // rule, though the file read is the enriched copy).
    let hers = listed(&mcp, &alice).await;
    for api in ["billing__", "ledger__", "tmdb__"] {
        assert!(hers.iter().any(|n| n.starts_with(api)), "{api} {hers:?}");
    }
    let r = call(
        &mcp,
        &alice,
        "call_tool",
        json!({"name": "billing__getTopRated", "arguments": {}}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    let r = call(
        &mcp,
        &alice,
        "call_tool",
        json!({"name": "billing__createList", "arguments": {"body": {"name": "x"}}}),
    )
    .await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(result_text(&r).contains("read_only"), "{r}");
    assert_eq!(up.received().len(), 1, "only the GET went out");

    // The console applies the same lookup: bob's health page does not name them.
    let (status, page) = {
        let res = reqwest::Client::new()
            .get(format!("{}/console/api/health", s.base))
            .bearer_auth(&bob)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    };
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("tmdb"), "{page}");
    assert!(
        !page.contains("billing") && !page.contains("ledger"),
        "{page}"
    );

    // A reload that makes an id ambiguous: a second entry claims `billing` with no rule.
    // Both specs are refused (whose rule would apply depends on nothing the operator
    // chose), said on stderr, and nobody sees `billing` any more.
    std::fs::copy(&fixture, dir.join("other.json")).unwrap();
    let ambiguous = format!(
        "{body}{}",
        Setup::api(
            Some("billing"),
            &dir.join("other.json"),
            &base,
            "allow_private = true"
        )
    );
    std::fs::write(
        &config,
        format!("data_dir = {:?}\n{ambiguous}", dir.join("index")),
    )
    .unwrap();
    let mut reloaded = false;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if srv.log.lock().unwrap().contains("catalog reloaded") {
            reloaded = true;
            break;
        }
    }
    let log = srv.log.lock().unwrap().clone();
    assert!(reloaded, "no reload: {log}");
    assert!(
        log.contains("API id 'billing'") && log.contains("ambiguous"),
        "the refusal is reported: {log}"
    );
    let hers = listed(&mcp, &alice).await;
    assert!(
        !hers.iter().any(|n| n.starts_with("billing__")),
        "an ambiguous API is served: {hers:?}"
    );
    assert!(hers.iter().any(|n| n.starts_with("ledger__")), "{hers:?}");
}
