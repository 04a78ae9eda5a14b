//! Faults through the whole server, with the Python `mcp` SDK as the client: each gives a
//! clear result and the server goes on serving the next request in the same session.

mod server_common;
mod support;

use serde_json::json;
use server_common::*;
use std::time::{Duration, Instant};
use support::upstream::{self, HUGE_BYTES};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_give_clear_results_and_serving_continues() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let ok_call = json!({"op": "call", "tool": "getTopRated", "args": {}});
    let started = Instant::now();
    let doc = python_client(
        Target::Stdio(fx.stdio_command(&[])),
        "legacy",
        json!([
            // 0: slow upstream, past the 2 s timeout of the fixture catalog
            {"op": "call", "tool": "call_tool", "args": {"name": "slow"}},
            ok_call,
            // 2: 500 with an HTML body
            {"op": "call", "tool": "html500", "args": {}},
            ok_call,
            // 4: a 50 MB response
            {"op": "call", "tool": "huge", "args": {}},
            ok_call,
            // 6: unknown tool, directly (a protocol error) and through call_tool (a tool error)
            {"op": "call", "tool": "noSuchTool", "args": {}, "expect_error": true},
            {"op": "call", "tool": "call_tool", "args": {"name": "noSuchTool", "arguments": {}}},
            ok_call,
            // 9: wrong argument types
            {"op": "call", "tool": "getMovieCredits", "args": {"movie_id": "five hundred", "language": 7}},
            ok_call,
            // 11: path parameters trying to leave their segment or the host
            {"op": "call", "tool": "getMovieCredits", "args": {"movie_id": "../../account"}},
            {"op": "call", "tool": "deleteList", "args": {"list_id": "../../account"}},
            {"op": "call", "tool": "deleteList", "args": {"list_id": "@evil.example"}},
            ok_call,
            // 15: meta-tool misuse
            {"op": "call", "tool": "find_tools", "args": {"query": ""}},
            {"op": "call", "tool": "call_tool", "args": {"name": "getTopRated", "arguments": [1]}},
            ok_call,
        ]),
    )
    .await;
    let s = |i| step(&doc, i);
    for i in [1, 3, 5, 8, 10, 14, 17] {
        assert_eq!(
            s(i)["isError"],
            false,
            "step {i} should have worked: {:#}",
            s(i)
        );
    }

    let slow = text(s(0));
    assert_eq!(s(0)["isError"], true);
    assert!(
        slow.to_lowercase().contains("timed out") || slow.to_lowercase().contains("timeout"),
        "{slow}"
    );

    let html = text(s(2));
    assert_eq!(s(2)["isError"], true);
    assert!(html.contains("500"), "{html}");
    assert!(
        !html.contains("<body>"),
        "HTML should be reduced to text: {html}"
    );

    let huge = text(s(4));
    assert!(
        huge.len() < 1024 * 1024,
        "a {HUGE_BYTES}-byte body must be cut, got {} bytes",
        huge.len()
    );
    assert!(
        huge.to_lowercase().contains("truncated") || huge.contains("bytes"),
        "{}",
        &huge[huge.len().saturating_sub(300)..]
    );

    assert_eq!(s(6)["error"]["code"], -32602, "{:#}", s(6));
    assert!(s(6)["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("find_tools"));
    assert_eq!(s(7)["isError"], true);
    assert!(text(s(7)).contains("unknown tool 'noSuchTool'"));

    assert_eq!(s(9)["isError"], true);
    let wrong = text(s(9));
    assert!(
        wrong.contains("movie_id") && wrong.contains("language"),
        "{wrong}"
    );

    // A non-integer id is refused before sending; string ids stay inside their segment.
    assert_eq!(s(11)["isError"], true);
    for i in [12, 13] {
        let t = text(s(i));
        assert!(
            !t.contains("Invalid API key"),
            "step {i} reached another endpoint: {t}"
        );
    }
    let deletes: Vec<_> = up
        .received()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 2, "{deletes:#?}");
    for r in &deletes {
        let segment = r
            .path
            .strip_prefix("/3/list/")
            .unwrap_or_else(|| panic!("{r:?}"));
        assert!(!segment.contains('/') && !segment.starts_with('@'), "{r:?}");
    }
    assert_eq!(s(15)["isError"], true);
    assert_eq!(s(16)["isError"], true);

    // What reached the upstream: never /3/account, never another host, nothing for the
    // refused calls.
    for r in up.received() {
        assert_ne!(
            r.path, "/3/account",
            "a path parameter escaped its segment: {r:?}"
        );
        assert!(r.path.starts_with("/3/") || r.path == "/slow", "{r:?}");
        assert_eq!(
            r.header("host"),
            Some(up.addr.to_string().as_str()),
            "{r:?}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_down_is_a_clear_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let fx = Fixture::new(&format!("http://127.0.0.1:{port}/3"));
    let doc = python_client(
        Target::Stdio(fx.stdio_command(&[])),
        "legacy",
        json!([
            {"op": "call", "tool": "getTopRated", "args": {}},
            {"op": "call", "tool": "call_tool", "args": {"name": "getTopRated"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "top rated movies"}},
        ]),
    )
    .await;
    for i in [0, 1] {
        assert_eq!(step(&doc, i)["isError"], true);
        let t = text(step(&doc, i)).to_lowercase();
        assert!(t.contains("connect") || t.contains("refused"), "{t}");
        assert!(!t.contains(TOKEN));
    }
    assert_eq!(text(step(&doc, 0)), text(step(&doc, 1)));
    assert_eq!(step(&doc, 2)["isError"], false);
}
