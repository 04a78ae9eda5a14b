//! MCP servers as sources on a team server: a server's `visible_to` hides its tools from
//! whoever is not allowed, in every list, answer and call, and `read_only` serves only the
//! tools annotated read-only; each call to an upstream MCP tool is audited like an API call.
//!
//! Real parts: the test OpenID provider (alice in `eng`, bob in `sales`), the server binary
//! over HTTP, the real `mcp-server-time` (PyPI) and `@modelcontextprotocol/server-memory`
//! (npm), raw MCP requests.

mod mcp_common;
mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/team.rs"]
mod team;

use mcp_common::{npm_server, pypi_server};
use serde_json::json;
use team::{audit_rows, call, result_text, rpc, Setup};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visible_to_hides_a_server_and_read_only_serves_read_only_tools() {
    let s = Setup::new(&[]).await;
    let body = format!(
        "\n[[api]]\nid = \"time\"\nvisible_to = {{ groups = [\"eng\"] }}\n\
         mcp = {{ command = {:?}, args = [\"--local-timezone\", \"UTC\"] }}\n\
         \n[[api]]\nid = \"memory\"\nread_only = true\n\
         mcp = {{ command = {:?}, args = [{:?}], set_env = {{ MEMORY_FILE_PATH = {:?} }} }}\n{}",
        pypi_server("mcp-server-time").display().to_string(),
        server_common::node22().display().to_string(),
        npm_server("server-memory").display().to_string(),
        s.dir.path().join("memory.jsonl").display().to_string(),
        s.auth("")
    );
    let config = s.config(&body);
    let _srv = s.serve(&config, None, &["--expose", "catalog"], &[]).await;
    let mcp = format!("{}/mcp", s.base);
    let (alice, bob) = (s.token("alice").await, s.token("bob").await);

    let names = |v: &serde_json::Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (_, bobs) = rpc(&mcp, &bob, None, "tools/list", json!({})).await;
    let bobs = names(&bobs);
    assert!(!bobs.iter().any(|n| n.starts_with("time__")), "{bobs:?}");
    // read_only: memory's reading tools only.
    assert!(bobs.contains(&"memory__read_graph".to_string()), "{bobs:?}");
    assert!(
        !bobs.contains(&"memory__create_entities".to_string()),
        "{bobs:?}"
    );
    let (_, hers) = rpc(&mcp, &alice, None, "tools/list", json!({})).await;
    assert!(
        names(&hers).contains(&"time__get_current_time".to_string()),
        "{hers}"
    );

    let r = call(
        &mcp,
        &bob,
        "find_tools",
        json!({"query": "current time in a timezone", "k": 20}),
    )
    .await;
    assert!(
        !r.to_string().contains("time__"),
        "bob's answer names a hidden tool: {r}"
    );
    let r = call(
        &mcp,
        &bob,
        "call_tool",
        json!({"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}),
    )
    .await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(result_text(&r).contains("unknown tool"), "{r}");

    let r = call(
        &mcp,
        &alice,
        "call_tool",
        json!({"name": "time__get_current_time", "arguments": {"timezone": "Europe/Paris"}}),
    )
    .await;
    assert_eq!(r["isError"], false, "{r}");
    assert!(result_text(&r).contains("Europe/Paris"), "{r}");
    let r = call(
        &mcp,
        &alice,
        "call_tool",
        json!({"name": "memory__create_entities", "arguments": {"entities": []}}),
    )
    .await;
    assert_eq!(r["isError"], true, "{r}");
    // The console's health page gives each server's live state, to those who see it only.
    let health = |token: String| {
        let url = format!("{}/console/api/health", s.base);
        async move {
            let r = reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .expect("GET /console/api/health");
            assert_eq!(r.status(), 200);
            r.json::<serde_json::Value>().await.expect("JSON")
        }
    };
    let hers = health(alice.clone()).await;
    let servers = hers["servers"].to_string();
    assert!(
        servers.contains(r#""id":"time","reason":null,"state":"running""#)
            || servers.contains(r#""id":"time","state":"running""#),
        "{hers:#}"
    );
    let his = health(bob.clone()).await;
    assert!(!his["servers"].to_string().contains("time"), "{his:#}");
    assert!(his["servers"].to_string().contains("memory"), "{his:#}");
    let rows = audit_rows(&s.state_file());
    assert!(
        rows.iter()
            .any(|(event, _, api, _)| event == "call" && api == "time"),
        "{rows:?}"
    );
}
