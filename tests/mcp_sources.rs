//! MCP servers as catalog sources: a person's own client config file naming real servers
//! from the registries (mcp-server-time and mcp-server-git from PyPI; server-memory,
//! server-filesystem and server-everything from npm, all installed pinned by
//! `scripts/setup-test-tools.sh`), served by `shortlist serve FILE` and driven by the
//! Python `mcp` SDK in both protocol eras.

mod mcp_common;
mod server_common;
mod support;

use mcp_common::*;
use serde_json::{json, Value};
use server_common::*;

/// Plain requests find each server's tool, and calls reach the real servers: a file
/// written by the filesystem server is on disk, an entity written to the memory server is
/// read back, the git server shows the repository's commits, the time server the time.
async fn real_servers_in(mode: &str) {
    let fx = RealServers::new();
    let dir = fx.dir.path();
    let note = fx.files.join("note.txt");
    let doc = python_client(
        Target::Stdio(fx.serve_command(&[])),
        mode,
        json!([
            {"op": "call", "tool": "find_tools", "args": {"query": "what is the current time in Tokyo"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "remember a fact about a person"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "list the files in a folder"}},
            {"op": "call", "tool": "find_tools", "args": {"query": "show the recent commits of a git repository"}},
            {"op": "call", "tool": "call_tool", "args": {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "files__write_file", "arguments": {"path": note, "content": "written through shortlist"}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "memory__create_entities", "arguments": {"entities": [{"name": "Alice", "entityType": "person", "observations": ["works at Acme"]}]}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "memory__open_nodes", "arguments": {"names": ["Alice"]}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "git__git_log", "arguments": {"repo_path": fx.repo, "max_count": 3}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "everything__get-tiny-image", "arguments": {}}},
            {"op": "call", "tool": "call_tool", "args": {"name": "time__get_current_time", "arguments": {"zone": "Asia/Tokyo"}}},
        ]),
    )
    .await;
    for (i, want) in [
        (0, "time__get_current_time"),
        (1, "memory__"),
        (2, "files__list_directory"),
        (3, "git__git_log"),
    ] {
        let found = hit_names(step(&doc, i));
        assert!(
            found.iter().any(|n| n.starts_with(want)),
            "step {i}: {want} not among {found:?}"
        );
    }
    let time = step(&doc, 4);
    assert_eq!(time["isError"], false, "{time:#}");
    assert!(text(time).contains("Asia/Tokyo"), "{time:#}");

    let written = step(&doc, 5);
    assert_eq!(written["isError"], false, "{written:#}");
    assert_eq!(
        std::fs::read_to_string(&note).expect("the filesystem server wrote the file"),
        "written through shortlist"
    );

    assert_eq!(step(&doc, 6)["isError"], false, "{:#}", step(&doc, 6));
    let read = text(step(&doc, 7));
    assert!(read.contains("works at Acme"), "{read}");
    let stored = std::fs::read_to_string(dir.join("memory.jsonl")).expect("memory file");
    assert!(stored.contains("works at Acme"), "{stored}");

    let log = text(step(&doc, 8));
    assert!(
        log.contains("second commit") && log.contains("first commit"),
        "{log}"
    );

    let image = step(&doc, 9);
    let kinds: Vec<&str> = image["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["type"].as_str()).collect())
        .unwrap_or_default();
    assert!(kinds.contains(&"image"), "{image:#}");

    // A wrong argument is named before anything reaches the server.
    let wrong = step(&doc, 10);
    assert_eq!(wrong["isError"], true, "{wrong:#}");
    assert!(text(wrong).contains("zone"), "{wrong:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_servers_from_a_client_config_legacy_era() {
    real_servers_in("legacy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_servers_from_a_client_config_modern_era() {
    real_servers_in("auto").await;
}

/// `shortlist check FILE` reads the same file a client reads, lists each server's tools,
/// and warns about what a careful person would want to know.
#[test]
fn check_lists_every_server_and_flags_unpinned_packages() {
    let fx = RealServers::new();
    let mut servers: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fx.config).unwrap()).unwrap();
    // Never started: its working folder does not exist, so nothing is fetched either.
    servers["mcpServers"]["unpinned"] = json!({
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
        "cwd": "/nonexistent/folder"
    });
    servers["mcpServers"]["broken"] = json!({"command": "/nonexistent/mcp-server"});
    let file = fx.dir.path().join("with-extra.json");
    std::fs::write(&file, servers.to_string()).unwrap();
    let out = std::process::Command::new(shortlist_bin())
        .args(["check"])
        .arg(&file)
        .output()
        .expect("run shortlist check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stderr.contains("'unpinned'") && stderr.contains("without a pinned version"),
        "{stderr}"
    );
    assert!(
        stderr.contains("mcp:broken") && stderr.contains("cannot start"),
        "{stderr}"
    );
    // The five real servers still load: one broken server costs nothing else.
    assert!(stdout.starts_with("5 API(s)"), "{stdout}");
    assert_eq!(
        out.status.code(),
        Some(2),
        "a skipped server is an error: {stdout}"
    );
}

/// A child sees the defaults (PATH, HOME, ...), the variables its entry names and the
/// values its entry sets, and nothing else of shortlist's environment: not a state key, not
/// a cloud credential. (`shortlist call` lists and calls the real server once.)
#[test]
fn a_child_sees_only_the_environment_its_entry_allows() {
    let toml = format!(
        "[[api]]\nid = \"everything\"\nmcp = {{ command = {:?}, args = [{:?}, \"stdio\"], \
         env = [\"PASSED_BY_NAME\"], set_env = {{ SET_HERE = \"literal-value\" }} }}\n",
        node22().display().to_string(),
        npm_server("server-everything").display().to_string(),
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.toml");
    std::fs::write(&file, toml).unwrap();
    let out = std::process::Command::new(shortlist_bin())
        .args(["call", "everything__get-env", "{}", "-c"])
        .arg(&file)
        .env("SHORTLIST_STATE_KEY", "state-key-never-passed")
        .env("AWS_SECRET_ACCESS_KEY", "cloud-secret-never-passed")
        .env("PASSED_BY_NAME", "named-value")
        .output()
        .expect("run shortlist call");
    let env = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{env}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        env.contains("named-value") && env.contains("literal-value"),
        "{env}"
    );
    assert!(env.contains("PATH"), "{env}");
    for secret in [
        "state-key-never-passed",
        "cloud-secret-never-passed",
        "SHORTLIST_STATE_KEY",
    ] {
        assert!(!env.contains(secret), "{secret} reached the child: {env}");
    }
}

/// `shortlist eval` takes a client config as its catalog and gold tools as `server tool`.
#[test]
fn eval_measures_a_catalog_of_mcp_servers() {
    let fx = RealServers::new();
    let queries = fx.dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        [
            json!({"id": "q1", "query": "what time is it in Tokyo", "gold": ["time get_current_time"]}),
            json!({"id": "q2", "query": "list the files in my folder", "gold": ["files list_directory"]}),
            json!({"id": "q3", "query": "add an observation about Alice", "gold": ["memory add_observations"]}),
        ]
        .iter()
        .map(|q| q.to_string() + "\n")
        .collect::<String>(),
    )
    .unwrap();
    let out = std::process::Command::new(shortlist_bin())
        .arg("eval")
        .arg(&fx.config)
        .arg(&queries)
        .env("SHORTLIST_DATA_DIR", fx.dir.path().join("index"))
        .output()
        .expect("run shortlist eval");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("(5 API(s), 50 endpoints)"), "{stdout}");
    assert!(stdout.contains("all: 3 queries"), "{stdout}");
}

/// `shortlist install CLIENT --take-over`: a preview that writes nothing, then the client's
/// servers moved behind shortlist (a real client then reaches the real time server through
/// the entry written), then undone to the byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_servers_move_behind_shortlist_and_back() {
    let fx = RealServers::new();
    let file = fx.dir.path().join("client.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fx.config).unwrap()).unwrap();
    doc["globalShortcut"] = json!("Ctrl+Space");
    let original = serde_json::to_string_pretty(&doc).unwrap();
    std::fs::write(&file, &original).unwrap();
    let install = |extra: &[&str]| {
        std::process::Command::new(shortlist_bin())
            .args(["install", "claude-desktop", "--file"])
            .arg(&file)
            .args(["--data-dir"])
            .arg(fx.dir.path().join("index"))
            .args(extra)
            .output()
            .expect("run shortlist install")
    };
    let preview = install(&["--take-over"]);
    let said = String::from_utf8_lossy(&preview.stdout);
    assert!(preview.status.success(), "{said}");
    assert!(
        said.contains("5 server(s)") && said.contains("nothing was written"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);

    let applied = install(&["--take-over", "--apply"]);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let now: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(now["globalShortcut"], "Ctrl+Space");
    let servers = now["mcpServers"].as_object().unwrap();
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["shortlist"]);
    // The client starts shortlist as the file now says, and reaches the time server.
    let doc = python_client(
        Target::ConfigEntry {
            file: &file,
            name: "shortlist",
            expand: "none",
        },
        "legacy",
        json!([{"op": "call", "tool": "call_tool", "args": {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}}]),
    )
    .await;
    assert!(text(step(&doc, 0)).contains("UTC"), "{doc:#}");

    let undone = install(&["--undo"]);
    assert!(
        undone.status.success(),
        "{}",
        String::from_utf8_lossy(&undone.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

/// A server reached over streamable HTTP: the real server-everything listening on
/// 127.0.0.1, listed and called through `shortlist call`.
#[test]
fn a_server_over_streamable_http_is_listed_and_called() {
    let (mut everything, port) = everything_over_http("streamableHttp");
    let (ok, said, err) = call_with(
        &format!("[[api]]\nid = \"remote\"\nmcp = {{ url = \"http://127.0.0.1:{port}/mcp\" }}\n"),
        "remote__echo",
        r#"{"message": "over streamable HTTP"}"#,
    );
    let _ = everything.kill();
    let _ = everything.wait();
    assert!(ok, "{said}\n{err}");
    assert!(said.contains("Echo: over streamable HTTP"), "{said}");
}

/// With an egress proxy in `[upstream]`, an HTTP MCP server is reached through it, as
/// API calls are: the proxy receives the server's request (and here answers it itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_servers_are_reached_through_the_egress_proxy() {
    let proxy = support::proxy::Proxy::start(r#"{"not": "an MCP answer"}"#, false).await;
    let config = format!(
        "[upstream]\nproxy = \"http://127.0.0.1:{}\"\n\n[[api]]\nid = \"remote\"\n\
         mcp = {{ url = \"http://mcp.example.invalid/mcp\" }}\nproxy_resolves = true\n",
        proxy.port
    );
    let (ok, said, err) = tokio::task::spawn_blocking(move || {
        call_with(&config, "remote__echo", r#"{"message": "x"}"#)
    })
    .await
    .unwrap();
    assert!(!ok, "{said}");
    let seen = proxy.seen();
    assert!(
        seen.iter()
            .any(|s| s.line.starts_with("POST http://mcp.example.invalid/mcp ")),
        "the proxy saw {seen:?}; stderr: {err}"
    );
}

/// A client that asks for progress gets the upstream's progress notifications for its
/// call, in order, in both protocol eras: the real server-everything's long-running
/// operation reports each step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_an_upstream_call_reaches_the_client() {
    require_model();
    let dir = tempfile::tempdir().unwrap();
    let config = client_config(
        dir.path(),
        json!({"everything": {"command": node22(), "args": [npm_server("server-everything"), "stdio"]}}),
    );
    let serve = format!(
        "{} serve {} --data-dir {}",
        shortlist_bin(),
        config.display(),
        dir.path().join("index").display()
    );
    for mode in ["legacy", "auto"] {
        let doc = python_client(
            Target::Stdio(serve.clone()),
            mode,
            json!([
                {"op": "call", "tool": "call_tool", "progress": true, "args": {
                    "name": "everything__trigger-long-running-operation",
                    "arguments": {"duration": 1, "steps": 3}}},
                {"op": "call", "tool": "call_tool", "args": {
                    "name": "everything__trigger-long-running-operation",
                    "arguments": {"duration": 0.3, "steps": 2}}},
            ]),
        )
        .await;
        let called = step(&doc, 0);
        assert_eq!(called["isError"], false, "{mode}: {called:#}");
        assert_eq!(
            called["progress"],
            json!([[1.0, 3.0, null], [2.0, 3.0, null], [3.0, 3.0, null]]),
            "{mode}: {called:#}"
        );
        // Without a progress token, none is sent upstream and the call still completes.
        assert_eq!(step(&doc, 1)["isError"], false, "{mode}: {doc:#}");
    }
}

/// A running server follows its config file: a server added to a client's config is
/// started and its tools served, one removed is stopped and its tools gone, without a
/// restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_added_to_or_removed_from_the_config_follow_live() {
    require_model();
    let dir = tempfile::tempdir().unwrap();
    let time =
        json!({"command": pypi_server("mcp-server-time"), "args": ["--local-timezone", "UTC"]});
    let memory = json!({"command": node22(), "args": [npm_server("server-memory")],
        "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}});
    let config = client_config(dir.path(), json!({"time": time}));
    let mut cmd = tokio::process::Command::new(shortlist_bin());
    cmd.arg("serve")
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("index"))
        .args(["--http", "127.0.0.1:0"]);
    let srv = server_common::child_server::start(
        cmd,
        "http://127.0.0.1:",
        std::time::Duration::from_secs(120),
    )
    .await;
    let mcp = format!("http://127.0.0.1:{}/mcp", srv.port);
    let call = |tool: &str| {
        let arguments = if tool.starts_with("time__") {
            json!({"timezone": "UTC"})
        } else {
            json!({})
        };
        json!([{"op": "call", "tool": "call_tool", "expect_error": true,
                "args": {"name": tool, "arguments": arguments}}])
    };
    let doc = python_client(Target::Http(&mcp), "auto", call("time__get_current_time")).await;
    assert_eq!(step(&doc, 0)["isError"], false, "{doc:#}");
    let doc = python_client(Target::Http(&mcp), "auto", call("memory__read_graph")).await;
    assert_eq!(step(&doc, 0)["isError"], true, "{doc:#}");

    // The person edits their config: memory in, time out.
    std::fs::write(
        &config,
        json!({"mcpServers": {"memory": memory}}).to_string(),
    )
    .unwrap();
    let mut last = Value::Null;
    let mut served = false;
    for _ in 0..60 {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        last = python_client(Target::Http(&mcp), "auto", call("memory__read_graph")).await;
        if step(&last, 0)["isError"] == false {
            served = true;
            break;
        }
    }
    let log = srv.log.lock().unwrap().clone();
    assert!(
        served,
        "the added server's tool never answered: {last:#}\n{log}"
    );
    let doc = python_client(Target::Http(&mcp), "auto", call("time__get_current_time")).await;
    assert_eq!(step(&doc, 0)["isError"], true, "{doc:#}");
    assert!(text(step(&doc, 0)).contains("unknown tool"), "{doc:#}");
    let log = srv.log.lock().unwrap().clone();
    assert!(log.contains("no longer in the config"), "{log}");
}

/// An upstream's elicitation during a call reaches the person whose call it is, labelled
/// with the server, when their client can answer one (a session-era client that declared
/// elicitation); a client that cannot is never answered for: the upstream is declined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_elicitation_reaches_the_person_who_can_answer_it() {
    require_model();
    let dir = tempfile::tempdir().unwrap();
    let config = client_config(dir.path(), json!({"own": own_server("normal")}));
    let serve = format!(
        "{} serve {} --data-dir {}",
        shortlist_bin(),
        config.display(),
        dir.path().join("index").display()
    );
    let steps = json!([{"op": "call", "tool": "call_tool",
        "args": {"name": "own__ask_client", "arguments": {}}}]);
    let line = |doc: &Value| {
        text(step(doc, 0))
            .lines()
            .find(|l| l.starts_with("elicitation:"))
            .unwrap_or_default()
            .to_string()
    };
    let (doc, ok, err) = python_client_args(
        Target::Stdio(serve.clone()),
        "legacy",
        steps.clone(),
        &[],
        &[
            "--elicit-answer",
            r#"{"password": "hunter2"}"#,
            "--sample-answer",
            "a sampled reply",
        ],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    let answered = line(&doc);
    assert!(
        answered.contains(r#""action":"accept""#) && answered.contains("hunter2"),
        "{doc:#}"
    );
    // Sampling (older revisions) reaches the client that declared it; roots never do.
    let said = text(step(&doc, 0));
    assert!(
        said.contains("sampling: answered") && said.contains("a sampled reply"),
        "{said}"
    );
    assert_eq!(
        doc["samplings"].as_array().map(Vec::len),
        Some(1),
        "{doc:#}"
    );
    assert!(said.contains("roots: error"), "{said}");
    let asked = &doc["elicitations"][0];
    assert_eq!(
        asked["message"], "[MCP server 'own'] Your password?",
        "{doc:#}"
    );
    // The same call from a client that declared no elicitation: declined, nobody asked.
    let doc = python_client(Target::Stdio(serve.clone()), "legacy", steps.clone()).await;
    assert!(text(step(&doc, 0)).contains("sampling: error"), "{doc:#}");
    let declined = line(&doc);
    assert!(
        declined.contains(r#""action":"decline""#) || declined.starts_with("elicitation: error"),
        "{doc:#}"
    );
    assert!(!declined.contains("accept"), "{doc:#}");
    // A 2026-07-28 client is asked through the call's result (input_required): the call
    // waits, parked, for the retry that carries the answer.
    let (doc, ok, err) = python_client_args(
        Target::Stdio(serve.clone()),
        "auto",
        steps.clone(),
        &[],
        &["--elicit-answer", r#"{"password": "hunter2"}"#],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    assert_eq!(doc["protocolVersion"], "2026-07-28", "{doc:#}");
    let answered = line(&doc);
    assert!(
        answered.contains(r#""action":"accept""#) && answered.contains("hunter2"),
        "{doc:#}"
    );
    assert_eq!(
        doc["elicitations"][0]["message"], "[MCP server 'own'] Your password?",
        "{doc:#}"
    );
    // ... and one that declared no elicitation is not.
    let doc = python_client(Target::Stdio(serve), "auto", steps).await;
    assert!(!line(&doc).contains("accept"), "{doc:#}");
}

/// The real server-everything listening on 127.0.0.1 in `mode` (`sse`, `streamableHttp`):
/// the child and its port.
fn everything_over_http(mode: &str) -> (std::process::Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(node22())
        .arg(npm_server("server-everything"))
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start server-everything");
    let up = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            up.elapsed() < std::time::Duration::from_secs(30),
            "not listening"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (child, port)
}

/// `shortlist call TOOL ARGS -c` a catalog config holding `config`: status, stdout, stderr.
fn call_with(config: &str, tool: &str, args: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.toml");
    std::fs::write(&file, config).unwrap();
    let out = std::process::Command::new(shortlist_bin())
        .args(["call", tool, args, "-c"])
        .arg(&file)
        .output()
        .expect("run shortlist call");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A server reached over the HTTP+SSE transport of 2024-11-05: the real server-everything
/// in its `sse` mode, listed and called.
#[test]
fn a_server_over_http_sse_is_listed_and_called() {
    let (mut everything, port) = everything_over_http("sse");
    let (ok, said, err) = call_with(
        &format!(
            "[[api]]\nid = \"old\"\nmcp = {{ url = \"http://127.0.0.1:{port}/sse\", transport = \"sse\" }}\n"
        ),
        "old__echo",
        r#"{"message": "over HTTP+SSE"}"#,
    );
    let _ = everything.kill();
    let _ = everything.wait();
    assert!(ok, "{said}\n{err}");
    assert!(said.contains("Echo: over HTTP+SSE"), "{said}");
}

/// An HTTP MCP server is reached under the same address policy as an API: a metadata
/// address never (without `allow_link_local`), a loopback one from a team server only with
/// `allow_private`.
#[test]
fn http_servers_follow_the_address_policy() {
    let (mut everything, port) = everything_over_http("streamableHttp");
    let team = "[auth]\nissuer = \"https://idp.example.com\"\naudience = \"https://shortlist.example.com/mcp\"\n";
    let entry = |extra: &str| {
        format!(
            "[[api]]\nid = \"remote\"\n{extra}mcp = {{ url = \"http://127.0.0.1:{port}/mcp\" }}\n"
        )
    };
    let (ok, said, err) = call_with(
        &format!("{}{team}", entry("")),
        "remote__echo",
        r#"{"message": "x"}"#,
    );
    let (ok2, said2, err2) = call_with(
        &format!("{}{team}", entry("allow_private = true\n")),
        "remote__echo",
        r#"{"message": "allowed"}"#,
    );
    let _ = everything.kill();
    let _ = everything.wait();
    assert!(!ok, "{said}");
    assert!(
        err.contains("refusing to connect to 127.0.0.1") && err.contains("allow_private = true"),
        "{err}"
    );
    assert!(ok2, "{said2}\n{err2}");
    assert!(said2.contains("Echo: allowed"), "{said2}");
    let (ok, _, err) = call_with(
        "[[api]]\nid = \"meta\"\nmcp = { url = \"http://169.254.169.254/mcp\" }\n",
        "meta__anything",
        "{}",
    );
    assert!(!ok);
    assert!(
        err.contains("refusing to connect to 169.254.169.254"),
        "{err}"
    );
}

/// MCP Inspector's CLI, a second real client, calls a real server's tool through shortlist
/// (`call_tool`), and lists the server's tools as tools under the catalog exposure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_reaches_a_real_server_through_shortlist() {
    let fx = RealServers::new();
    let serve = |extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            "--".to_string(),
            shortlist_bin().to_string(),
            "serve".into(),
            fx.config.display().to_string(),
            "--data-dir".into(),
            fx.dir.path().join("index").display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let base = [
        "-q",
        "--format",
        "json",
        "--method",
        "tools/call",
        "--tool-name",
    ];
    let mut a: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    a.extend(["call_tool".into(), "--tool-args-json".into()]);
    a.push(
        r#"{"name": "time__get_current_time", "arguments": {"timezone": "America/New_York"}}"#
            .into(),
    );
    a.extend(serve(&[]));
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("America/New_York"), "{out}");

    let mut a: Vec<String> = ["-q", "--format", "json", "--method", "tools/list"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(serve(&["--expose", "catalog"]));
    let (code, out, err) = inspector(&a, None).await;
    assert_eq!(code, 0, "{out}\n{err}");
    for tool in [
        "time__convert_time",
        "memory__read_graph",
        "git__git_status",
        "files__read_text_file",
    ] {
        assert!(out.contains(tool), "{tool} not listed: {out}");
    }
}
