//! `shortlist serve` over stdio, driven by real clients: the Python `mcp` SDK in both
//! protocol eras, the MCP Inspector CLI, and the shipped `mcp.json`.

mod server_common;
mod support;

use serde_json::{json, Value};
use server_common::*;
use std::process::Stdio;
use std::time::Duration;
use support::upstream;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_legacy_era_find_expose_and_call() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let doc = find_expose_call(Target::Stdio(fx.stdio_command(&[])), "legacy", &up).await;
    assert_eq!(doc["protocolVersion"], "2025-11-25");
    assert_eq!(doc["capabilities"]["tools"]["listChanged"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_modern_era_find_expose_and_call() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let doc = find_expose_call(Target::Stdio(fx.stdio_command(&[])), "auto", &up).await;
    assert_eq!(doc["protocolVersion"], "2026-07-28");
    assert_eq!(doc["listen"]["toolsListChanged"], true, "{doc:#}");
}

/// Catalog exposure lists every endpoint at once, after the meta-tools and in name order;
/// meta exposure only the three meta-tools, and find_tools there changes nothing (so
/// announces nothing) but call_tool still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_and_meta_exposure() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let doc = python_client(
        Target::Stdio(fx.stdio_command(&["--expose", "catalog"])),
        "legacy",
        json!([{"op": "list_tools"}]),
    )
    .await;
    let all = names(step(&doc, 0));
    assert!(all.len() >= 13 + 3, "{all:?}");
    assert_eq!(all[..3], ["find_tools", "describe_tool", "call_tool"]);
    let mut sorted = all[3..].to_vec();
    sorted.sort();
    assert_eq!(all[3..], sorted[..], "endpoints in name order");
    assert!(all.contains(&"searchMovie".to_string()) && all.contains(&"deleteList".to_string()));
    let delete = step(&doc, 0)["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "deleteList"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(delete["annotations"]["destructiveHint"], true);
    assert_eq!(delete["annotations"]["idempotentHint"], true);
    assert_eq!(delete["annotations"]["readOnlyHint"], false);
    // The catalog can change under a running server (it is watched), and clients are told.
    assert_eq!(doc["capabilities"]["tools"]["listChanged"], true);

    let doc = python_client(
        Target::Stdio(fx.stdio_command(&["--expose", "meta"])),
        "legacy",
        json!([
            {"op": "call", "tool": "find_tools", "args": {"query": "movie credits and cast"}},
            {"op": "wait_list_changed", "timeout": 2},
            {"op": "list_tools"},
            {"op": "call", "tool": "call_tool", "args": {"name": "getMovieCredits", "arguments": {"movie_id": 550}}},
            {"op": "call", "tool": "find_tools", "args": {"query": "what is the weather in Berlin tomorrow"}},
        ]),
    )
    .await;
    let answer = &step(&doc, 0)["structuredContent"];
    assert_eq!(answer["exposed"], false);
    assert_eq!(answer["matched"], true, "{answer:#}");
    // A request nothing in a movie catalog fits: said in the answer, the closest listed.
    let none = &step(&doc, 4)["structuredContent"];
    assert_eq!(none["matched"], false, "{none:#}");
    assert!(none["tools"].as_array().is_some_and(|t| !t.is_empty()));
    assert!(none["note"]
        .as_str()
        .is_some_and(|n| n.starts_with("Nothing in the catalog seems to fit")));
    // No `k`: as many hits as fit the default token budget, best first, without scores.
    let hits = answer["tools"].as_array().expect("hits");
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h.get("score").is_none()),
        "{answer:#}"
    );
    let tokens = shortlist::server::tokens::count_json(&answer["tools"]).expect("tokenizer");
    assert!(
        tokens <= shortlist::server::discovery::DEFAULT_ANSWER_TOKENS + 5,
        "{tokens} tokens"
    );
    assert_eq!(step(&doc, 1)["changed"], false);
    assert_eq!(
        names(step(&doc, 2)),
        ["find_tools", "describe_tool", "call_tool"]
    );
    assert_eq!(step(&doc, 3)["isError"], false, "{doc:#}");
    assert_eq!(up.only().path, "/3/movie/550/credits");
}

/// Under `auto`, a session-era client known to discard changed tool lists (Claude
/// Desktop's `claude-ai`) gets the meta-tools, and find_tools tells it to use call_tool;
/// one known to act on them (Claude Code) gets its shortlist as tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_clients_get_the_exposure_they_can_use() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let steps = json!([
        {"op": "list_tools"},
        {"op": "call", "tool": "find_tools", "args": {"query": "movie credits and cast", "k": 2}},
        {"op": "wait_list_changed", "timeout": 5},
        {"op": "list_tools"},
    ]);
    let run = |name: &'static str| {
        let (target, steps) = (Target::Stdio(fx.stdio_command(&[])), steps.clone());
        async move {
            let (doc, ok, err) =
                python_client_named(target, "legacy", steps, &[], Some(name)).await;
            assert!(ok, "{name}: {err}");
            doc
        }
    };
    let desktop = run("claude-ai").await;
    assert_eq!(desktop["protocolVersion"], "2025-11-25");
    let found = &step(&desktop, 1)["structuredContent"];
    assert_eq!(found["exposed"], false, "{desktop:#}");
    assert!(found["note"]
        .as_str()
        .is_some_and(|n| n.starts_with("Call one with call_tool")));
    assert_eq!(step(&desktop, 2)["changed"], false);
    assert_eq!(names(step(&desktop, 3)), names(step(&desktop, 0)));

    let code = run("claude-code").await;
    assert_eq!(step(&code, 1)["structuredContent"]["exposed"], true);
    assert_eq!(step(&code, 2)["changed"], true, "{code:#}");
    assert_eq!(names(step(&code, 3)).len(), 3 + 2, "{code:#}");
}

/// describe_tool gives the full definition: arguments with their locations, the body
/// schema, constraints, and what auth the endpoint needs (never the secret).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_tool_gives_the_full_definition() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let doc = python_client(
        Target::Stdio(fx.stdio_command(&[])),
        "legacy",
        json!([
            {"op": "call", "tool": "describe_tool", "args": {"name": "createList"}},
            {"op": "call", "tool": "describe_tool", "args": {"name": "getTopRated"}},
            {"op": "call", "tool": "describe_tool", "args": {"name": "createLists"}},
        ]),
    )
    .await;
    let create = &step(&doc, 0)["structuredContent"];
    assert_eq!(create["method"], "POST");
    assert_eq!(create["path"], "/list");
    let body = &create["inputSchema"]["properties"]["body"];
    assert_eq!(body["required"], json!(["name"]));
    assert_eq!(body["properties"]["items"]["items"]["type"], "integer");
    assert_eq!(body["properties"]["items"]["maxItems"], 20);
    assert!(create["auth"]["requires"].to_string().contains("bearer"));
    assert_eq!(create["auth"]["supplied_by_server"], "bearer token");
    let top = &step(&doc, 1)["structuredContent"];
    let ins: Vec<&str> = top["arguments"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["in"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        ins.contains(&"query") && ins.contains(&"header") && ins.contains(&"cookie"),
        "{top:#}"
    );
    let unknown = step(&doc, 2);
    assert_eq!(unknown["isError"], true);
    assert!(
        text(unknown).contains("did you mean 'createList'"),
        "{unknown:#}"
    );
    let all = doc.to_string();
    assert!(!all.contains(TOKEN), "the token leaked into a tool result");
}

/// Enriched text reaches the client marked as generated: a spec stripped to minimal
/// metadata and filled in by the heuristic enricher is served, and the tool definitions
/// and `describe_tool` say which texts no human wrote, with their provenance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_descriptions_and_examples_reach_the_client_marked() {
    let up = upstream::start().await;
    let work = tempfile::tempdir().unwrap();
    let spec = repo().join("tests/fixtures/upstream_tmdb.json");
    let enrich = |args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(shortlist_bin())
            .arg("enrich")
            .args(args)
            .output()
            .expect("shortlist enrich runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    enrich(&[
        "--degrade".as_ref(),
        work.path().as_os_str(),
        spec.as_os_str(),
    ]);
    let degraded = work.path().join("upstream_tmdb.json");
    let data = work.path().join("data");
    enrich(&[
        "--llm".as_ref(),
        "none".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
        degraded.as_os_str(),
    ]);
    let fx = Fixture::with_spec(&degraded, &[("tmdb", &up.base_url())], "");
    let doc = python_client(
        Target::Stdio(fx.stdio_command(&["--expose", "catalog"])),
        "legacy",
        json!([
            {"op": "list_tools"},
            {"op": "call", "tool": "describe_tool", "args": {"name": "getMovieCredits"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "credits of a movie"}},
        ]),
    )
    .await;
    let tools = step(&doc, 0)["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let credits = tools
        .iter()
        .find(|t| t["name"] == "getMovieCredits")
        .unwrap_or_else(|| panic!("getMovieCredits listed: {doc:#}"));
    let description = credits["description"].as_str().unwrap_or("");
    assert!(description.contains("generated description"), "{credits:#}");
    assert_eq!(
        credits["_meta"]["shortlist/generated"]["description"]["generator"], "heuristic",
        "{credits:#}"
    );
    let movie_id = &credits["inputSchema"]["properties"]["movie_id"];
    assert!(
        movie_id["x-generated"]
            .as_array()
            .is_some_and(|g| g.contains(&json!("description"))),
        "{movie_id:#}"
    );
    assert!(movie_id["description"]
        .as_str()
        .is_some_and(|d| !d.is_empty()));
    let examples = tools
        .iter()
        .filter_map(|t| t["inputSchema"]["properties"].as_object())
        .flat_map(|p| p.values())
        .filter(|p| {
            p["x-generated"]
                .as_array()
                .is_some_and(|g| g.contains(&json!("example")))
        })
        .inspect(|p| {
            assert!(
                p["examples"].as_array().is_some_and(|e| e.len() == 1),
                "{p:#}"
            )
        })
        .count();
    assert!(
        examples > 0,
        "no generated example reached a schema: {doc:#}"
    );
    // No tool is marked whose text a human wrote: the meta tools are the server's own.
    let find = tools.iter().find(|t| t["name"] == "find_tools").unwrap();
    assert!(find.get("_meta").is_none_or(Value::is_null), "{find:#}");

    let described = &step(&doc, 1)["structuredContent"];
    assert_eq!(
        described["generated"]["description"]["generator"], "heuristic",
        "{described:#}"
    );
    assert_eq!(
        described["inputSchema"]["properties"]["movie_id"]["x-generated"][0],
        "description"
    );
    let hits = step(&doc, 2)["structuredContent"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!hits.is_empty(), "{doc:#}");
}

/// The Inspector CLI lists the tools and calls find_tools and a catalog tool over stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_lists_and_calls_over_stdio() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let mut base = vec!["-q".to_string(), "--format".into(), "json".into()];
    let cmd: Vec<String> = std::iter::once("--".to_string())
        .chain(std::iter::once(shortlist_bin().to_string()))
        .chain(fx.serve_args(&[]))
        .collect();

    let mut a = base.clone();
    a.extend(["--method".into(), "tools/list".into()]);
    a.extend(cmd.clone());
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).expect("inspector JSON");
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["find_tools", "describe_tool", "call_tool"]);

    base.extend(["--method".into(), "tools/call".into(), "--tool-name".into()]);
    let mut a = base.clone();
    a.extend([
        "find_tools".into(),
        "--tool-args-json".into(),
        r#"{"query": "who directed a movie"}"#.into(),
    ]);
    a.extend(cmd.clone());
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("getMovieCredits"), "{out}");

    // Each Inspector run is a new client with an empty exposed set, and the Inspector only
    // calls tools it has listed: call_tool is the way in.
    let mut a = base.clone();
    a.extend(["call_tool".into(), "--tool-args-json".into()]);
    a.push(r#"{"name": "getMovieCredits", "arguments": {"movie_id": 550}}"#.into());
    a.extend(cmd.clone());
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("David Fincher"), "{out}");
    assert_eq!(up.only().path, "/3/movie/550/credits");

    // With every endpoint exposed, the Inspector calls the tool directly.
    let mut a = base.clone();
    a.extend([
        "getMovieCredits".into(),
        "--tool-args-json".into(),
        r#"{"movie_id": 551}"#.into(),
    ]);
    a.extend(cmd.clone());
    a.extend(["--expose".into(), "catalog".into()]);
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(up
        .received()
        .iter()
        .any(|r| r.path == "/3/movie/551/credits"));

    // An unknown tool is a failure the Inspector reports with its exit code 5.
    let mut a = base.clone();
    a.extend(["noSuchTool".into(), "--tool-args-json".into(), "{}".into()]);
    a.extend(cmd);
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 5, "{out}\n{err}");
}

/// The shipped mcp.json starts a working server: its command and arguments, run from the
/// repository root as a client would (with `shortlist` resolved to the built binary).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_json_is_a_working_client_configuration() {
    let text = std::fs::read_to_string(repo().join("mcp.json")).expect("mcp.json at the root");
    let cfg: Value = serde_json::from_str(&text).expect("mcp.json is JSON");
    let server = &cfg["mcpServers"]["shortlist"];
    assert_eq!(server["command"], "shortlist");
    let args: Vec<String> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a.as_str().map(String::from))
        .collect();
    assert_eq!(args.first().map(String::as_str), Some("serve"));
    // Indexed first, as the README's steps do: the Inspector gives a server 15 s to answer,
    // and a first embedding of the example catalog on a busy machine can take longer.
    let mut index_args = args.clone();
    index_args[0] = "index".into();
    let out = std::process::Command::new(shortlist_bin())
        .args(&index_args)
        .current_dir(repo())
        .output()
        .expect("run shortlist index");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut a: Vec<String> = ["-q", "--format", "json", "--method", "tools/list", "--"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.push(shortlist_bin().to_string());
    a.extend(args);
    let (code, out, err) = inspector(&a, Some(&repo())).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("\"find_tools\""), "{out}");
}

/// A restart over an unchanged catalog reuses the index: nothing is embedded again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_with_an_existing_index_embeds_nothing() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let first = HttpServer::start(&fx, &[]).await;
    assert!(first.startup.contains("embedded"), "{}", first.startup);
    drop(first);
    let started = std::time::Instant::now();
    let second = HttpServer::start(&fx, &[]).await;
    assert!(second.startup.contains("(0 embedded"), "{}", second.startup);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "restart took {:?}",
        started.elapsed()
    );
    // The restart read no spec (the index records the same files), and still finds,
    // exposes and calls endpoints with the config's base URL and credentials.
    find_expose_call(Target::Http(&second.url("/mcp")), "legacy", &up).await;
}

/// Garbage on stdin is answered or skipped, and the next request is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_survives_malformed_json_rpc() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let mut child = tokio::process::Command::new(shortlist_bin())
        .args(fx.serve_args(&[]))
        .env(TOKEN_ENV, TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let send = |v: String| format!("{v}\n");
    for msg in [
        send(init.to_string()),
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()),
        "{this is not json\n".to_string(),
        send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": "wrong"})
                .to_string(),
        ),
        send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string()),
    ] {
        stdin.write_all(msg.as_bytes()).await.expect("write");
    }
    stdin.flush().await.expect("flush");
    let mut answered = Vec::new();
    let got_list = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let v: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
            answered.push(v.clone());
            if v["id"] == 3 {
                return Some(v);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| panic!("no answer to the request after the garbage: {answered:#?}"));
    assert_eq!(got_list["result"]["tools"][0]["name"], "find_tools");
    assert_eq!(got_list["result"]["ttlMs"], 0, "{got_list:#}");
    // The request with malformed params cannot be routed, so rmcp answers it with an
    // Invalid Request error (its id may be unreadable, hence null).
    let bad = answered
        .iter()
        .find(|v| v["error"]["code"] == -32600)
        .unwrap_or_else(|| panic!("no Invalid Request error: {answered:#?}"));
    assert!(bad["id"] == 2 || bad["id"].is_null(), "{bad:#}");
}

/// A broken spec in the catalog is reported on stderr at startup, and the rest is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_reports_catalog_problems_and_serves_the_rest() {
    let up = upstream::start().await;
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url())],
        "\n[[api]]\nid = \"gone\"\nspec = \"missing-spec.yaml\"\n",
    );
    let srv = HttpServer::start(&fx, &[]).await;
    assert!(
        srv.startup.contains("missing-spec.yaml") && srv.startup.contains("no such file"),
        "{}",
        srv.startup
    );
    let doc = python_client(
        Target::Http(&srv.url("/mcp")),
        "legacy",
        json!([{"op": "call", "tool": "call_tool", "args": {"name": "getTopRated"}}]),
    )
    .await;
    assert_eq!(step(&doc, 0)["isError"], false, "{doc:#}");
}

/// The API filter is free text and the meta-tools do not list the catalog: `api` matches
/// an id or title in any spelling, a near miss is an error naming the closest APIs, and
/// `find_tools` without a query lists the APIs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_filter_matches_ids_and_titles_and_lists_on_demand() {
    let up = upstream::start().await;
    let fx = Fixture::with_apis(&[("tmdb", &up.base_url()), ("movies_archive", &up.base_url())]);
    let doc = python_client(
        Target::Stdio(fx.stdio_command(&["--expose", "meta"])),
        "legacy",
        json!([
            {"op": "list_tools"},
            {"op": "call", "tool": "find_tools", "args": {}},
            {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "api": "Movies-Archive"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "api": "TMDB"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "api": "movie_archiv"}},
            {"op": "call", "tool": "find_tools", "args": {"api": "archive"}},
        ]),
    )
    .await;
    let find = step(&doc, 0)["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "find_tools"))
        .cloned()
        .unwrap_or(Value::Null);
    let api = &find["inputSchema"]["properties"]["api"];
    assert_eq!(api["type"], "string", "{find:#}");
    assert!(api.get("enum").is_none() && !find.to_string().contains("movies_archive"));

    let listing = &step(&doc, 1)["structuredContent"];
    assert_eq!(listing["total"], 2, "{doc:#}");
    assert_eq!(listing["apis"][0]["api"], "movies_archive");
    assert_eq!(listing["apis"][0]["title"], "TMDB-shaped test upstream");
    assert_eq!(
        listing["apis"][1]["endpoints"],
        listing["apis"][0]["endpoints"]
    );

    let names = |i: usize| -> Vec<String> {
        step(&doc, i)["structuredContent"]["tools"]
            .as_array()
            .map(|t| {
                // Without `k` each hit is one line, `name(arguments) METHOD /path: purpose`.
                t.iter()
                    .filter_map(|h| h.as_str()?.split('(').next().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (archive, tmdb) = (names(2), names(3));
    assert!(!archive.is_empty() && !tmdb.is_empty(), "{doc:#}");
    assert!(
        archive.iter().all(|n| !tmdb.contains(n)),
        "{archive:?} {tmdb:?}"
    );

    let miss = step(&doc, 4);
    assert_eq!(miss["isError"], true, "{miss:#}");
    let msg = text(miss);
    assert!(
        msg.contains("api='movie_archiv'") && msg.contains("closest: movies_archive"),
        "{msg}"
    );
    let narrowed = &step(&doc, 5)["structuredContent"];
    assert_eq!(narrowed["total"], 1, "{doc:#}");
    assert_eq!(narrowed["apis"][0]["api"], "movies_archive");
}
