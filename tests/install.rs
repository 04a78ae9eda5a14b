//! `shortlist install CLIENT`: the entry written for each client parses as that client's
//! configuration, keeps what the file already held, names the catalog's credential
//! variables without their values, and starts a working server for a real MCP client (the
//! Python SDK, launching it exactly as the entry says).

mod server_common;
mod support;

use serde_json::{json, Value};
use server_common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::upstream;

/// A value that must never be written into a client configuration.
const SECRET: &str = "secret-value-5e1f";

fn install(args: &[&str], cwd: &Path) -> Output {
    Command::new(shortlist_bin())
        .arg("install")
        .args(args)
        .current_dir(cwd)
        .env(TOKEN_ENV, SECRET)
        .output()
        .expect("run shortlist install")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        !text.contains(SECRET),
        "a credential value was written: {text}"
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// Each client's file, what it held before, and how the entry names the credential.
fn clients() -> Vec<(&'static str, &'static str, Value, String)> {
    vec![
        (
            "claude-desktop",
            "claude_desktop_config.json",
            json!({"globalShortcut": "Ctrl+Space", "mcpServers": {"filesystem": {
                "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}),
            String::new(),
        ),
        (
            "claude-code",
            ".mcp.json",
            json!({"mcpServers": {"github": {"type": "http", "url": "https://example.invalid/mcp"}}}),
            format!("${{{TOKEN_ENV}}}"),
        ),
        (
            "cursor",
            "mcp.json",
            json!({"mcpServers": {"db": {"command": "db-mcp", "env": {"DB_URL": "${env:DB_URL}"}}}}),
            format!("${{env:{TOKEN_ENV}}}"),
        ),
        (
            "mcp-json",
            "mcp.json",
            json!({"mcpServers": {"other": {"command": "other-mcp", "args": []}}}),
            format!("${{{TOKEN_ENV}}}"),
        ),
    ]
}

/// Writes the entry into a copy of each client's file and checks it there.
fn install_all(fx: &Fixture, work: &Path) -> Vec<(&'static str, PathBuf)> {
    let config = std::fs::canonicalize(&fx.config).unwrap();
    let mut written = Vec::new();
    for (client, file, before, env_value) in clients() {
        let dir = work.join(client);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(file);
        std::fs::write(&path, serde_json::to_string_pretty(&before).unwrap()).unwrap();
        let out = install(
            &[
                client,
                "--config",
                &config.display().to_string(),
                "--file",
                &path.display().to_string(),
            ],
            work,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{client}: {err}");
        assert!(err.contains("1 other server(s) kept"), "{client}: {err}");

        let after = read_json(&path);
        // Everything that was there is still there, unchanged.
        for (k, v) in before.as_object().unwrap() {
            if k != "mcpServers" {
                assert_eq!(&after[k], v, "{client}: {k}");
            }
        }
        for (name, server) in before["mcpServers"].as_object().unwrap() {
            assert_eq!(&after["mcpServers"][name], server, "{client}: {name}");
        }
        let e = &after["mcpServers"]["shortlist"];
        let command = PathBuf::from(e["command"].as_str().unwrap_or_default());
        assert!(command.is_absolute() && command.is_file(), "{client}: {e}");
        assert_eq!(
            e["args"].as_array().unwrap()[..3],
            [
                json!("serve"),
                json!("--config"),
                json!(config.display().to_string())
            ],
            "{client}: {e}"
        );
        for a in e["args"].as_array().unwrap() {
            let a = a.as_str().unwrap();
            assert!(!a.starts_with('.'), "{client}: relative argument {a}");
        }
        assert_eq!(e["env"], json!({ TOKEN_ENV: env_value }), "{client}");
        assert_eq!(
            e.get("type").is_some(),
            client == "claude-code",
            "{client}: {e}"
        );
        if client == "claude-code" {
            assert_eq!(e["type"], "stdio");
        }
        written.push((client, path));
    }
    written
}

/// Every written entry starts the server for the Python MCP client, launched as the client
/// would launch it (only the SDK's default environment plus the entry's env block), and a
/// call through it reaches the upstream with the credential the entry passes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn written_entries_start_a_working_server() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let work = tempfile::tempdir().unwrap();
    for (client, path) in install_all(&fx, work.path()) {
        let expand = match client {
            "claude-code" | "mcp-json" => "claude-code",
            "cursor" => "cursor",
            _ => "none",
        };
        if client == "claude-desktop" {
            // Claude Desktop expands nothing: the user fills the named value in.
            let mut doc = read_json(&path);
            doc["mcpServers"]["shortlist"]["env"][TOKEN_ENV] = json!(TOKEN);
            std::fs::write(&path, doc.to_string()).unwrap();
        }
        let before = up.received().len();
        let doc = python_client(
            Target::ConfigEntry {
                file: &path,
                name: "shortlist",
                expand,
            },
            "legacy",
            json!([
                {"op": "call", "tool": "find_tools", "args": {"query": "cast and crew of a movie"}},
                {"op": "call", "tool": "call_tool", "args": {"name": "getMovieCredits", "arguments": {"movie_id": 550}}},
            ]),
        )
        .await;
        assert_eq!(step(&doc, 0)["isError"], false, "{client}: {doc:#}");
        assert!(
            text(step(&doc, 0)).contains("getMovieCredits"),
            "{client}: {doc:#}"
        );
        assert_eq!(step(&doc, 1)["isError"], false, "{client}: {doc:#}");
        let got = up.received();
        assert_eq!(got.len(), before + 1, "{client}");
        let last = got.last().unwrap();
        assert_eq!(last.path, "/3/movie/550/credits");
        assert_eq!(
            last.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str()),
            "{client}"
        );
    }
}

/// An entry whose credential was never filled in starts all the same, and the call says
/// which variable to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfilled_credentials_are_named_in_the_tool_error() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("claude_desktop_config.json");
    let out = install(
        &[
            "claude-desktop",
            "--config",
            &fx.config.display().to_string(),
            "--file",
            &path.display().to_string(),
        ],
        work.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("fill in {TOKEN_ENV}")), "{err}");
    let doc = python_client(
        Target::ConfigEntry {
            file: &path,
            name: "shortlist",
            expand: "none",
        },
        "legacy",
        json!([{"op": "call", "tool": "call_tool", "args": {"name": "getMovieCredits", "arguments": {"movie_id": 550}}}]),
    )
    .await;
    assert_eq!(step(&doc, 0)["isError"], true, "{doc:#}");
    assert!(
        text(step(&doc, 0)).contains(&format!("environment variable {TOKEN_ENV} is not set")),
        "{doc:#}"
    );
    assert!(up.received().is_empty());
}

/// Without --file, each client's own file, relative to the home folder or the current one.
#[test]
fn each_client_has_its_own_file() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let catalog = repo().join("catalogs/catalog.toml");
    let mut cases = vec![
        (vec!["claude-code"], project.join(".mcp.json")),
        (
            vec!["claude-code", "--scope", "user"],
            home.join(".claude.json"),
        ),
        (vec!["cursor"], home.join(".cursor/mcp.json")),
        (
            vec!["cursor", "--scope", "project"],
            project.join(".cursor/mcp.json"),
        ),
        (vec!["mcp-json"], project.join("mcp.json")),
    ];
    if cfg!(target_os = "linux") {
        cases.push((
            vec!["claude-desktop"],
            home.join(".config/Claude/claude_desktop_config.json"),
        ));
    }
    for (args, file) in cases {
        let mut args: Vec<String> = args.into_iter().map(String::from).collect();
        args.extend(["--config".into(), catalog.display().to_string()]);
        let out = Command::new(shortlist_bin())
            .arg("install")
            .args(&args)
            .current_dir(&project)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(err.contains(&file.display().to_string()), "{args:?}: {err}");
        let v = read_json(&file);
        assert!(
            v["mcpServers"]["shortlist"]["command"].is_string(),
            "{args:?}: {v}"
        );
        // The example catalog's credentials, by name only.
        let env = v["mcpServers"]["shortlist"]["env"].as_object().unwrap();
        assert!(env.contains_key("TMDB_API_KEY") && env.contains_key("SPOTIFY_TOKEN"));
    }
}

/// `--print` writes nothing; a file that is not JSON is reported and left as it was.
#[test]
fn print_writes_nothing_and_broken_files_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = repo().join("catalogs/catalog.toml").display().to_string();
    let out = install(&["cursor", "--print", "--config", &catalog], tmp.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed["mcpServers"]["shortlist"]["env"]["TMDB_API_KEY"],
        "${env:TMDB_API_KEY}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);

    let file = tmp.path().join("mcp.json");
    let broken = "{\"mcpServers\": {\"a\": {\"command\": \"x\"},}";
    std::fs::write(&file, broken).unwrap();
    let out = install(
        &[
            "mcp-json",
            "--config",
            &catalog,
            "--file",
            &file.display().to_string(),
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not valid JSON") && err.contains("mcp.json"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}

/// The repository's `mcp.json` is what `install mcp-json` writes for the example catalog,
/// with the paths a checkout can use as they are: the same credential variables.
#[test]
fn repository_mcp_json_names_the_example_catalogs_credentials() {
    let repo_file = read_json(&repo().join("mcp.json"));
    let e = &repo_file["mcpServers"]["shortlist"];
    assert_eq!(
        e["args"],
        json!(["serve", "--config", "catalogs/catalog.toml"])
    );
    let out = install(
        &["mcp-json", "--print", "--config", "catalogs/catalog.toml"],
        &repo(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["env"], printed["mcpServers"]["shortlist"]["env"]);
}
