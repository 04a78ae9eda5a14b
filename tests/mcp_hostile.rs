//! Upstream MCP servers that misbehave, and the life of a server: each hostile case stays
//! bounded in time and memory, is said clearly, and disturbs nothing else served; a killed
//! child is started again; `list_changed` is followed; no child outlives shortlist.
//!
//! The upstreams are our own small server written with the Python `mcp` SDK
//! (`tests/fixtures/mcp_upstreams/own_server.py`), one mode per misbehaviour.

mod mcp_common;
mod server_common;
mod support;

use mcp_common::*;
use serde_json::{json, Map, Value};
use server_common::*;
use shortlist::catalog::{Catalog, CatalogConfig};
use shortlist::upstream::Upstreams;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A catalog of `servers` (name -> own_server mode), each with a 10 s start timeout and a
/// 10 s call timeout.
fn catalog_of(servers: &[(&str, &str)]) -> (tempfile::TempDir, CatalogConfig) {
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::new();
    for (name, mode) in servers {
        let s = own_server(mode);
        toml.push_str(&format!(
            "[[api]]\nid = {name:?}\ntimeout_secs = 10\n\
             mcp = {{ command = {}, args = {}, start_timeout_secs = 10 }}\n",
            s["command"], s["args"]
        ));
    }
    let file = dir.path().join("catalog.toml");
    std::fs::write(&file, toml).unwrap();
    let cfg = CatalogConfig::load(&file).expect("config");
    (dir, cfg)
}

async fn call(u: &Upstreams, server: &str, tool: &str, args: Value) -> Result<String, String> {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let r = u
        .call(
            server,
            tool,
            args,
            Duration::from_secs(10),
            Default::default(),
            None,
        )
        .await?;
    Ok(text(&json!({ "content": r.content })))
}

/// A hostile server beside a good one: the catalog loads the good one whole, the bad one
/// is bounded (or refused with a clear reason), within `limit`, and the good one answers.
async fn beside_a_good_one(mode: &str, limit: Duration) -> (Catalog, Arc<Upstreams>) {
    let (_dir, cfg) = catalog_of(&[("good", "normal"), ("bad", mode)]);
    let upstreams = Upstreams::new(&cfg);
    let started = Instant::now();
    let listings = upstreams.list_all().await;
    assert!(
        started.elapsed() < limit,
        "{mode}: listing took {:?}",
        started.elapsed()
    );
    let catalog = Catalog::load_listed(&cfg, &listings);
    let good: Vec<&str> = catalog
        .endpoints
        .iter()
        .filter(|e| e.api == "good")
        .map(|e| e.tool_name.as_str())
        .collect();
    assert!(good.contains(&"good__echo"), "{mode}: {good:?}");
    let echoed = call(&upstreams, "good", "echo", json!({"message": "still here"})).await;
    assert_eq!(echoed.as_deref(), Ok("still here"), "{mode}");
    (catalog, upstreams)
}

fn problems(c: &Catalog) -> String {
    c.problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tools_are_cut_to_the_bound() {
    let (c, u) = beside_a_good_one("many", Duration::from_secs(60)).await;
    let bad = c.endpoints.iter().filter(|e| e.api == "bad").count();
    assert_eq!(bad, shortlist::catalog::mcp_tools::MAX_TOOLS);
    assert!(problems(&c).contains("only the first"), "{}", problems(&c));
    u.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_description_is_cut() {
    let (c, u) = beside_a_good_one("long_description", Duration::from_secs(30)).await;
    let huge = c
        .endpoint("bad__huge")
        .expect("the tool is served, its text cut");
    let kept = huge
        .description
        .as_deref()
        .unwrap_or_default()
        .chars()
        .count();
    assert!(
        kept <= shortlist::catalog::mcp_tools::MAX_DESCRIPTION + 1,
        "{kept}"
    );
    assert!(problems(&c).contains("cut to"), "{}", problems(&c));
    u.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_nested_a_thousand_deep_is_refused_or_bounded() {
    let (c, u) = beside_a_good_one("deep_schema", Duration::from_secs(30)).await;
    // Either the listing is refused (the JSON reader's depth limit) with a reason, or the
    // tool's schema is kept within the inliner's bounds.
    match c.endpoint("bad__deep") {
        Some(ep) => {
            let size: usize = ep
                .parameters
                .iter()
                .map(|p| p.schema.to_string().len())
                .sum();
            assert!(size < 100_000, "{size}");
        }
        None => assert!(problems(&c).contains("mcp:bad"), "{}", problems(&c)),
    }
    u.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_that_never_answers_times_out() {
    let (c, u) = beside_a_good_one("silent_list", Duration::from_secs(25)).await;
    let p = problems(&c);
    assert!(
        p.contains("mcp:bad") && p.contains("did not answer within 10 s"),
        "{p}"
    );
    assert!(!c.endpoints.iter().any(|e| e.api == "bad"));
    u.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_skipped_or_said() {
    let (c, u) = beside_a_good_one("garbage", Duration::from_secs(30)).await;
    if c.endpoint("bad__echo").is_some() {
        let r = call(&u, "bad", "echo", json!({"message": "through garbage"})).await;
        assert_eq!(r.as_deref(), Ok("through garbage"));
    } else {
        assert!(problems(&c).contains("mcp:bad"), "{}", problems(&c));
    }
    u.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabyte_result_is_bounded() {
    let (_dir, cfg) = catalog_of(&[("bad", "normal")]);
    let u = Upstreams::new(&cfg);
    u.list_all().await;
    let started = Instant::now();
    let r = call(&u, "bad", "big", json!({"megabytes": 100})).await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // The transport drops a line past its 16 MB bound: the call fails readably.
    let e = r.expect_err("a 100 MB line is not read");
    assert!(e.contains("MCP server 'bad'"), "{e}");
    // One megabyte passes, cut to the answer bound by the invoker (see invoke::mcp).
    let one = call(&u, "bad", "big", json!({"megabytes": 1}))
        .await
        .unwrap();
    assert_eq!(one.len(), 1 << 20);
    u.stop().await;
}

/// A child that dies mid-call, or is killed, answers readably, and the next call starts it
/// again (a new process); no child outlives the owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_dies_is_started_again() {
    let (_dir, cfg) = catalog_of(&[("own", "normal")]);
    let u = Upstreams::new(&cfg);
    u.list_all().await;
    let pid = |s: String| s.trim_start_matches("pid=").parse::<i32>().unwrap();
    let first = pid(call(&u, "own", "whoami", json!({})).await.unwrap());
    let died = call(&u, "own", "die", json!({}))
        .await
        .expect_err("no answer");
    assert!(died.contains("stopped during the call"), "{died}");
    // The next call is refused during the first backoff second, then starts it again.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let second = pid(call(&u, "own", "whoami", json!({})).await.unwrap());
    assert_ne!(first, second);
    // Killed from outside: the next call finds the connection ended and connects again.
    assert!(std::process::Command::new("kill")
        .args(["-9", &second.to_string()])
        .status()
        .unwrap()
        .success());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let third = call(&u, "own", "whoami", json!({})).await;
    let third = match third {
        Ok(t) => pid(t),
        // The kill may land between the check and the call: then once more.
        Err(_) => {
            tokio::time::sleep(Duration::from_millis(2_100)).await;
            pid(call(&u, "own", "whoami", json!({})).await.unwrap())
        }
    };
    assert_ne!(third, second);
    u.stop().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !std::path::Path::new(&format!("/proc/{third}")).exists()
            || std::fs::read_to_string(format!("/proc/{third}/stat"))
                .is_ok_and(|s| s.contains(") Z ")),
        "the child outlived stop()"
    );
}

/// Through `shortlist serve` and a real client: a server that adds a tool and says so has
/// its new tool found and the legacy-era client is told the list changed, while another
/// server announces changes in a loop; when the client goes, the children go too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_is_followed_and_no_child_outlives_the_server() {
    require_model();
    let dir = tempfile::tempdir().unwrap();
    let config = client_config(
        dir.path(),
        json!({"own": own_server("normal"), "noisy": own_server("list_changed_loop")}),
    );
    let serve = format!(
        "{} serve {} --data-dir {} --watch-secs 1",
        shortlist_bin(),
        config.display(),
        dir.path().join("index").display()
    );
    let description = "Reports the weather on the planet Mars for a given sol";
    let doc = python_client(
        Target::Stdio(serve),
        "legacy",
        json!([
            {"op": "call", "tool": "call_tool", "args": {"name": "own__whoami", "arguments": {}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "own__add_tool", "arguments": {"name": "mars_weather", "description": description}}},
            {"op": "wait_list_changed", "timeout": 20},
            {"op": "call", "tool": "find_tools", "args": {"query": "weather on Mars", "k": 3}},
            {"op": "call", "tool": "call_tool", "args": {"name": "own__mars_weather", "arguments": {}}},
        ]),
    )
    .await;
    let pid: i32 = text(step(&doc, 0))
        .trim_start_matches("pid=")
        .parse()
        .expect("pid");
    assert_eq!(text(step(&doc, 1)), "added mars_weather", "{doc:#}");
    assert_eq!(step(&doc, 2)["changed"], true, "{doc:#}");
    let found = hit_names(step(&doc, 3));
    assert_eq!(
        found.first().map(String::as_str),
        Some("own__mars_weather"),
        "{found:?}"
    );
    assert_eq!(text(step(&doc, 4)), "called mars_weather", "{doc:#}");
    // The client closed the server's stdin; the server stopped its children.
    let gone = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && gone.elapsed() < Duration::from_secs(10)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the child {pid} outlived the server"
    );
}

/// An upstream that asks its client for sampling, roots or an elicitation is declined each
/// time: shortlist answers none of them on a person's behalf.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_the_client_are_declined() {
    let (_dir, cfg) = catalog_of(&[("own", "normal")]);
    let u = Upstreams::new(&cfg);
    u.list_all().await;
    let said = call(&u, "own", "ask_client", json!({})).await.unwrap();
    u.stop().await;
    let line = |kind: &str| {
        said.lines()
            .find(|l| l.starts_with(kind))
            .unwrap_or_else(|| panic!("{kind}: {said}"))
            .to_string()
    };
    assert!(line("sampling:").starts_with("sampling: error"), "{said}");
    assert!(line("roots:").starts_with("roots: error"), "{said}");
    // Declining is the answer MCP gives for an elicitation nobody will see.
    let e = line("elicitation:");
    assert!(
        e.starts_with("elicitation: error") || e.contains("\"action\":\"decline\""),
        "{said}"
    );
    assert!(!said.contains("\"action\":\"accept\""), "{said}");
}

/// A tool description written as a tool-poisoning attack: hidden characters and the secret
/// are removed from what is served, and the instruction aimed at the model and the other
/// server's tool it names are said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_description_is_cleaned_and_said() {
    let (c, u) = beside_a_good_one("poisoned", Duration::from_secs(30)).await;
    let add = c
        .endpoint("bad__add")
        .expect("the tool is served, its text cleaned");
    let served = add.description.clone().unwrap_or_default();
    assert!(
        !served
            .chars()
            .any(|ch| ('\u{E0000}'..='\u{E007F}').contains(&ch) || ch == '\u{202E}'),
        "{served:?}"
    );
    assert!(!served.contains("AKIAIOSFODNN7EXAMPLE"), "{served}");
    assert!(served.contains("[secret removed]"), "{served}");
    let p = problems(&c);
    assert!(
        p.contains("hidden or direction-changing character(s) removed"),
        "{p}"
    );
    assert!(
        p.contains("secret-like string(s) removed") && !p.contains("AKIA"),
        "{p}"
    );
    assert!(p.contains("text aimed at the model"), "{p}");
    assert!(p.contains("names another server's tool (add_tool)"), "{p}");
    u.stop().await;
}

/// A call whose time runs out is cancelled upstream: the server is told
/// (`notifications/cancelled`) and stops the work, and the connection keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_times_out_is_cancelled_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.txt");
    let s = own_server("normal");
    let file = dir.path().join("catalog.toml");
    std::fs::write(
        &file,
        format!(
            "[[api]]\nid = \"own\"\nmcp = {{ command = {}, args = {}, set_env = {{ OWN_SERVER_EVENTS = {:?} }} }}\n",
            s["command"],
            s["args"],
            events.display().to_string()
        ),
    )
    .unwrap();
    let cfg = CatalogConfig::load(&file).expect("config");
    let upstreams = Upstreams::new(&cfg);
    upstreams.list_all().await;
    let args: Map<String, Value> = json!({"seconds": 30}).as_object().cloned().unwrap();
    let started = Instant::now();
    let r = upstreams
        .call(
            "own",
            "sleep",
            args,
            Duration::from_secs(1),
            Default::default(),
            None,
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = r.expect_err("the call timed out");
    assert!(err.reason.contains("did not answer within 1 s"), "{err}");
    let mut told = String::new();
    for _ in 0..50 {
        told = std::fs::read_to_string(&events).unwrap_or_default();
        if told.contains("sleep cancelled") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        told.contains("sleep cancelled"),
        "the server was not told: {told:?}"
    );
    let echoed = call(&upstreams, "own", "echo", json!({"message": "after"})).await;
    assert_eq!(echoed.as_deref(), Ok("after"));
    upstreams.stop().await;
}
