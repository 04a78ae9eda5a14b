//! Fixtures for tests of MCP servers as catalog sources (`mod mcp_common;`, beside
//! `mod server_common;`).
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::server_common::{node22, repo, require_model, shortlist_bin};

const HINT: &str = "run ./scripts/setup-test-tools.sh";

fn installed(path: PathBuf) -> PathBuf {
    assert!(path.exists(), "{} not found: {HINT}", path.display());
    path
}

/// A server from the npm registry: `node .../dist/index.js`.
pub fn npm_server(name: &str) -> PathBuf {
    installed(repo().join(format!(
        ".vendor/node/node_modules/@modelcontextprotocol/{name}/dist/index.js"
    )))
}

/// A server from PyPI, in the servers' own venv.
pub fn pypi_server(name: &str) -> PathBuf {
    installed(repo().join(".vendor/mcp-servers-venv/bin").join(name))
}

/// The Python of the client venv (which has the `mcp` SDK our own servers are written with).
pub fn sdk_python() -> PathBuf {
    installed(repo().join(".venv/bin/python"))
}

/// Our own small MCP server (`tests/fixtures/mcp_upstreams/own_server.py`) in `mode`.
pub fn own_server(mode: &str) -> Value {
    json!({
        "command": sdk_python(),
        "args": [repo().join("tests/fixtures/mcp_upstreams/own_server.py"), "--mode", mode],
    })
}

/// A client config file (Claude Desktop's shape) naming the five real servers, with the
/// folders they work on.
pub struct RealServers {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    /// The filesystem server's allowed folder.
    pub files: PathBuf,
    /// A git repository with two commits.
    pub repo: PathBuf,
}

impl RealServers {
    pub fn new() -> RealServers {
        RealServers::with(json!({}))
    }

    /// The five real servers plus `extra` servers (name -> entry).
    pub fn with(extra: Value) -> RealServers {
        require_model();
        let dir = tempfile::tempdir().expect("temp dir");
        let files = dir.path().join("files");
        std::fs::create_dir_all(&files).unwrap();
        let repo = dir.path().join("repo");
        git_repo(&repo);
        let node = node22();
        let mut servers = json!({
            "time": {"command": pypi_server("mcp-server-time"), "args": ["--local-timezone", "UTC"]},
            "git": {"command": pypi_server("mcp-server-git"), "args": ["--repository", repo]},
            "memory": {"command": node, "args": [npm_server("server-memory")],
                       "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
            "files": {"command": node, "args": [npm_server("server-filesystem"), files]},
            "everything": {"command": node, "args": [npm_server("server-everything"), "stdio"]},
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            servers[k] = v.clone();
        }
        let config = dir.path().join("claude_desktop_config.json");
        std::fs::write(
            &config,
            serde_json::to_string_pretty(&json!({"mcpServers": servers})).unwrap(),
        )
        .unwrap();
        RealServers {
            dir,
            config,
            files,
            repo,
        }
    }

    /// `shortlist serve FILE --data-dir ...` as one command line.
    pub fn serve_command(&self, extra: &[&str]) -> String {
        let mut parts = vec![
            shortlist_bin().to_string(),
            "serve".into(),
            self.config.display().to_string(),
            "--data-dir".into(),
            self.dir.path().join("index").display().to_string(),
        ];
        parts.extend(extra.iter().map(|s| s.to_string()));
        parts.join(" ")
    }
}

/// A config file naming only `servers` (name -> entry), beside nothing else.
pub fn client_config(dir: &Path, servers: Value) -> PathBuf {
    let file = dir.join("mcp.json");
    std::fs::write(&file, json!({"mcpServers": servers}).to_string()).unwrap();
    file
}

fn git_repo(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(path)
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    for (file, message) in [("a.txt", "first commit"), ("b.txt", "second commit")] {
        std::fs::write(path.join(file), message).unwrap();
        git(&["add", file]);
        git(&["commit", "-q", "-m", message]);
    }
}

/// The tool names of a `find_tools` answer, best first (a hit is an object with `name`,
/// or in the compact form a line `name(args) ...`).
pub fn hit_names(found: &Value) -> Vec<String> {
    found["structuredContent"]["tools"]
        .as_array()
        .map(|h| {
            h.iter()
                .filter_map(|t| match t {
                    Value::String(line) => line.split('(').next().map(String::from),
                    other => other["name"].as_str().map(String::from),
                })
                .collect()
        })
        .unwrap_or_default()
}
