//! A team server for the trust tests: the test OpenID provider for a server about to
//! listen on a free port, a catalog config beside it, and the server itself
//! (`shortlist serve --http`) started on that port with its state store.
//!
//! Use with `#[path = "support/team.rs"] mod team;` beside `mod server_common;` and
//! `#[path = "support/oidc.rs"] mod oidc;`.
#![allow(dead_code)]

use crate::oidc;
use crate::server_common::{child_server, shortlist_bin, TOKEN, TOKEN_ENV};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The state key the trust tests seal with.
pub const STATE_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
/// Another key: a rotation's new key, or the key of a deployment that lost the old one.
pub const OTHER_KEY: &str = "Y2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2RjZGNkY2Q=";

/// A provider for a server on `port`, and where that server's files go.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// `http://127.0.0.1:PORT/mcp`.
    pub audience: String,
    pub idp: oidc::Provider,
}

impl Setup {
    /// A provider (with `provider_args` such as `--rotate`) for a server about to listen.
    pub async fn new(provider_args: &[&str]) -> Setup {
        crate::server_common::require_model();
        let port = oidc::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let audience = format!("{base}/mcp");
        let idp = oidc::Provider::start_args(&audience, provider_args).await;
        Setup {
            dir: tempfile::tempdir().expect("temp dir"),
            port,
            base,
            audience,
            idp,
        }
    }

    /// The `[auth]` table for this provider, with the sign-in client and `extra` lines.
    pub fn auth(&self, extra: &str) -> String {
        format!(
            "\n[auth]\nissuer = {:?}\naudience = {:?}\nrequired_scopes = [\"mcp\"]\n\
             signin = {{ client_id = \"shortlist-web\", client_secret_env = \"TEST_SIGNIN_SECRET\" }}\n{extra}\n",
            self.idp.issuer, self.audience
        )
    }

    /// An `[[api]]` entry on `spec` at `base_url` with `extra` lines.
    pub fn api(id: Option<&str>, spec: &Path, base_url: &str, extra: &str) -> String {
        let id = id.map(|i| format!("id = {i:?}\n")).unwrap_or_default();
        format!(
            "\n[[api]]\n{id}spec = {spec:?}\nbase_url = {base_url:?}\ntimeout_secs = 5\n{extra}\n"
        )
    }

    /// The `notes` API of the provider's `notes-app` (authorization code, PKCE).
    pub fn notes_auth(&self, extra: &str) -> String {
        let i = &self.idp.issuer;
        let extra = if extra.is_empty() {
            String::new()
        } else {
            format!(", {extra}")
        };
        format!(
            "auth = {{ kind = \"authorization_code\", authorize_url = \"{i}/auth\", \
             token_url = \"{i}/token\", client_id = \"notes-app\", \
             client_secret_env = \"TEST_NOTES_SECRET\", scope = \"notes\", \
             resource = \"https://notes.example/api\"{extra} }}"
        )
    }

    /// Writes the catalog config: `data_dir` in this setup's folder, then `body`.
    pub fn config(&self, body: &str) -> PathBuf {
        let toml = format!("data_dir = {:?}\n{body}", self.dir.path().join("index"));
        let p = self.dir.path().join("catalog.toml");
        std::fs::write(&p, toml).expect("write catalog config");
        p
    }

    /// The SQLite state file of this setup.
    pub fn state_file(&self) -> PathBuf {
        self.dir.path().join("state.sqlite3")
    }

    /// `shortlist serve -c CONFIG --http 127.0.0.1:PORT --state STATE EXTRA...` with the
    /// test secrets and `env` in its environment.
    pub async fn serve(
        &self,
        config: &Path,
        state: Option<&str>,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> child_server::Started {
        let state = state
            .map(str::to_string)
            .unwrap_or_else(|| format!("sqlite:{}", self.state_file().display()));
        serve_at(self.port, config, &state, extra, env).await
    }

    /// How many revocations the provider has seen.
    pub async fn idp_revoked(&self) -> usize {
        let v: Value = reqwest::get(format!("{}/test/revoked", self.idp.issuer))
            .await
            .expect("GET /test/revoked")
            .json()
            .await
            .expect("JSON");
        v["revoked"].as_array().map_or(0, Vec::len)
    }

    /// The text of `GET {base}{path}` as the bearer of `token` (a console page, the
    /// metrics).
    pub async fn page(&self, path: &str, token: &str) -> String {
        reqwest::Client::new()
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .expect("GET a page")
            .text()
            .await
            .expect("its text")
    }

    /// An MCP access token for `person`.
    pub async fn token(&self, person: &str) -> String {
        self.idp.token(person, "mcp", None).await
    }
}

/// `shortlist serve` on `port`: the test secrets set, `SHORTLIST_STATE_KEY` the test key
/// unless `env` names another.
pub async fn serve_at(
    port: u16,
    config: &Path,
    state: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> child_server::Started {
    let mut cmd = tokio::process::Command::new(shortlist_bin());
    cmd.args([
        "serve",
        "-c",
        &config.display().to_string(),
        "--http",
        &format!("127.0.0.1:{port}"),
        "--state",
        state,
    ])
    .args(extra)
    .env(TOKEN_ENV, TOKEN)
    .env("TEST_IDP_SECRET", "shortlist-server-secret")
    .env("TEST_NOTES_SECRET", "notes-app-secret")
    .env("TEST_SIGNIN_SECRET", "shortlist-web-secret")
    .env("SHORTLIST_STATE_KEY", STATE_KEY)
    .env_remove("SHORTLIST_STATE_PREVIOUS_KEYS")
    .env_remove("SHORTLIST_DATA_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(180)).await
}

/// A JSON-RPC request to `/mcp` as `token` (2026-07-28 unless `session` names a
/// 2025-11-25 session): the HTTP status and the JSON answer (SSE framing removed).
pub async fn rpc(
    mcp: &str,
    token: &str,
    session: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let mut params = params;
    let mut req = reqwest::Client::new()
        .post(mcp)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream");
    match session {
        Some(s) => {
            req = req
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-11-25");
        }
        None => {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "trust-test", "version": "1"}
            });
            req = req
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", method);
            if let Some(n) = params["name"].as_str() {
                req = req.header("mcp-name", n);
            }
        }
    }
    let res = req
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("POST /mcp");
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    (status, sse_json(&body))
}

/// The JSON of an answer that may be an SSE stream (its last `data:` line) or plain JSON.
pub fn sse_json(body: &str) -> Value {
    let data = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|l| !l.is_empty());
    let text = data.unwrap_or(body);
    serde_json::from_str(text).unwrap_or(Value::String(body.to_string()))
}

/// A 2026-07-28 `tools/call` of `name` with `arguments` as `token`: the result object.
pub async fn call(mcp: &str, token: &str, name: &str, arguments: Value) -> Value {
    let (status, v) = rpc(
        mcp,
        token,
        None,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    v.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: no result: {v}"))
}

/// The text of a tool result.
pub fn result_text(r: &Value) -> String {
    r["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The audit log rows of a SQLite state file, oldest first: `(event, sub, api, detail)`.
pub fn audit_rows(state: &Path) -> Vec<(String, String, String, Option<String>)> {
    let c = rusqlite::Connection::open(state).expect("open the state file");
    let mut st = c
        .prepare("SELECT event, sub, api, detail FROM audit_log ORDER BY id")
        .expect("audit query");
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("audit rows")
        .map(|r| r.expect("row"))
        .collect()
}

/// The audit log rows of a SQLite state file, oldest first: `(event, sub, client_id)`.
pub fn audit_clients(state: &Path) -> Vec<(String, String, Option<String>)> {
    let c = rusqlite::Connection::open(state).expect("open the state file");
    let mut st = c
        .prepare("SELECT event, sub, client_id FROM audit_log ORDER BY id")
        .expect("audit query");
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("audit rows")
        .map(|r| r.expect("row"))
        .collect()
}

/// How many upstream tokens a SQLite state file holds for `sub`.
pub fn stored_tokens(state: &Path, sub: &str) -> i64 {
    let c = rusqlite::Connection::open(state).expect("open the state file");
    c.query_row(
        "SELECT COUNT(*) FROM upstream_tokens WHERE sub = ?1",
        [sub],
        |r| r.get(0),
    )
    .expect("count")
}
