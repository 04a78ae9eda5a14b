//! An MCP server that is itself an OAuth resource server, behind a team server: each
//! person's calls reach it with their own token, over their own connection, with what the
//! entry left out read from the server's protected-resource metadata (RFC 9728).
//!
//! Real parts: the test OpenID provider (tests/oidc/provider.mjs), our protected MCP server
//! (tests/fixtures/mcp_upstreams/protected_server.py: the Python SDK's resource server,
//! checking every token's signature, issuer and audience), the server binary over HTTP,
//! the Python SDK as the client, and a browser-like consent (tests/clients/browser_consent.py).
//!
//! - token exchange: alice's and bob's calls arrive as alice and bob (`act` shortlist), the
//!   audience read from the server's metadata; a token the server stops accepting is
//!   replaced and the call made again;
//! - authorization code: the endpoints and `resource` read from the metadata of the
//!   authorization server it names; the first call asks carol to consent, then arrives as
//!   carol;
//! - a server whose metadata names another authorization server than the `[auth]` issuer
//!   gets nobody's token;
//! - client credentials: the server is listed and called with one machine token;
//! - a consent started before a restart completes after it;
//! - a server whose calls carry people's tokens and that has no listing token says how to
//!   give it one.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/team.rs"]
mod team;

use serde_json::{json, Value};
use server_common::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use team::{call, result_text, Setup};

/// Our protected MCP server on a free port: its process, URL and stderr so far.
struct Protected {
    _child: tokio::process::Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Protected {
    /// The server trusting `issuer`'s tokens; its metadata names `names` instead when
    /// given.
    async fn start(issuer: &str, names: Option<&str>) -> Protected {
        use tokio::io::AsyncBufReadExt;
        let port = oidc::free_port();
        let mut cmd = tokio::process::Command::new(python());
        cmd.arg(repo().join("tests/fixtures/mcp_upstreams/protected_server.py"))
            .args(["--port", &port.to_string(), "--issuer", issuer]);
        if let Some(n) = names {
            cmd.args(["--names-issuer", n]);
        }
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start protected_server.py");
        let log = Arc::new(Mutex::new(String::new()));
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        let up = std::time::Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                up.elapsed() < Duration::from_secs(30),
                "protected_server.py is not listening: {}",
                log.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Protected {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

/// An `[[api]]` entry for the MCP server at `url` with `auth`, listed with the token in
/// `list_env` when given.
fn entry(id: &str, url: &str, list_env: Option<&str>, auth: &str) -> String {
    let list = list_env
        .map(|v| format!(", list_token_env = {v:?}"))
        .unwrap_or_default();
    format!(
        "\n[[api]]\nid = {id:?}\nallow_private = true\ntimeout_secs = 20\n\
         mcp = {{ url = {url:?}, review = \"first_use\", start_timeout_secs = 20{list} }}\n\
         auth = {auth}\n"
    )
}

const EXCHANGE: &str = "{ kind = \"token_exchange\", client_id = \"shortlist-server\", \
                        client_secret_env = \"TEST_IDP_SECRET\", scope = \"mcp\" }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_calls_an_mcp_server_with_their_own_token() {
    let s = Setup::new(&["--users", "alice=eng,admins;bob=sales;carol=;dave="]).await;
    let issuer = s.idp.issuer.clone();
    let prot = Protected::start(&issuer, None).await;
    let liar = Protected::start(&issuer, Some("http://127.0.0.1:9")).await;
    let bare = Protected::start(&issuer, None).await;
    // The service account's token each server is listed with.
    let listing = s
        .idp
        .token("shortlist-server", "mcp", Some(&prot.url))
        .await;
    let liar_listing = s
        .idp
        .token("shortlist-server", "mcp", Some(&liar.url))
        .await;
    let consent = format!(
        "{{ kind = \"authorization_code\", client_id = \"notes-app\", \
         client_secret_env = \"TEST_NOTES_SECRET\", scope = \"notes\", issuer = {issuer:?} }}"
    );
    let machine = format!(
        "{{ kind = \"client_credentials\", token_url = \"{issuer}/token\", \
         client_id = \"shortlist-server\", client_secret_env = \"TEST_IDP_SECRET\", \
         scope = \"mcp\", resource = {:?} }}",
        prot.url
    );
    let body = [
        entry("prot", &prot.url, Some("PROT_LIST"), EXCHANGE),
        entry("notes", &prot.url, Some("PROT_LIST"), &consent),
        entry("liar", &liar.url, Some("LIAR_LIST"), EXCHANGE),
        entry("bare", &bare.url, None, EXCHANGE),
        entry("machine", &prot.url, None, &machine),
        s.auth("admins = { groups = [\"admins\"] }"),
    ]
    .concat();
    let config = s.config(&body);
    let env = [
        ("PROT_LIST", listing.as_str()),
        ("LIAR_LIST", liar_listing.as_str()),
    ];
    let srv = serve(&s, &config, &env).await;
    let mcp = s.audience.clone();

    // Token exchange, the audience read from the server's metadata: each person arrives
    // as themselves, the exchange made by shortlist.
    for person in ["alice", "bob"] {
        let token = s.token(person).await;
        let r = call_tool(&mcp, &token, "prot__whoami", json!({})).await;
        assert_eq!(
            result_text(&r),
            format!("sub={person} act=shortlist-server"),
            "{r}\n{}",
            srv.log.lock().unwrap()
        );
    }
    // A token the server stops accepting (revoked, say) is replaced once and the call made
    // again.
    let alice = s.token("alice").await;
    let r = call_tool(&mcp, &alice, "prot__reject_my_token", json!({})).await;
    assert_eq!(result_text(&r), "rejected", "{r}");
    let r = call_tool(&mcp, &alice, "prot__note", json!({"text": "hi"})).await;
    assert_eq!(result_text(&r), "alice noted hi", "{r}\n{}", prot.log());
    assert!(
        prot.log().contains("refused a rejected token"),
        "{}",
        prot.log()
    );
    // The MCP access token itself never reached the server (it would be refused for its
    // audience, and logged as refused).
    assert!(!prot.log().contains("Invalid audience"), "{}", prot.log());

    // Authorization code: endpoints and resource from the metadata of the authorization
    // server the server names; carol consents once, in a browser, then arrives as carol.
    let carol = s.token("carol").await;
    let (doc, ok, err) = python_client_args(
        Target::Http(&mcp),
        "auto",
        json!([{"op": "call", "tool": "call_tool", "args": {"name": "notes__whoami", "arguments": {}}}]),
        &[&format!("Authorization: Bearer {carol}")],
        &["--consent-as", "carol"],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    let answer = text(step(&doc, 0));
    assert_eq!(
        answer,
        "sub=carol act=-",
        "{doc:#}\n{}",
        srv.log.lock().unwrap()
    );
    assert_eq!(
        doc["elicitations"].as_array().map(Vec::len),
        Some(1),
        "{doc:#}"
    );

    // A server pointing at another authorization server gets nobody's token.
    let r = call_tool(&mcp, &alice, "liar__whoami", json!({})).await;
    let said = result_text(&r);
    assert!(r["isError"] == json!(true), "{r}");
    assert!(
        said.contains("accepts tokens of http://127.0.0.1:9 only"),
        "{said}"
    );
    assert!(!liar.log().contains("sub=alice"), "{}", liar.log());

    // Client credentials: one machine token, for listing and for everyone's calls.
    let r = call_tool(&mcp, &alice, "machine__whoami", json!({})).await;
    assert_eq!(result_text(&r), "sub=shortlist-server act=-", "{r}");

    // Without a listing token, its tools are not listed, and the log says what to set.
    let log = srv.log.lock().unwrap().clone();
    assert!(log.contains("list_token_env"), "{log}");
    let r = call(
        &mcp,
        &alice,
        "find_tools",
        json!({"query": "who is calling"}),
    )
    .await;
    let found = result_text(&r);
    assert!(found.contains("prot__whoami"), "{found}");
    assert!(!found.contains("bare__"), "{found}");

    // One connection per server and person: alice's and bob's to `prot`, carol's to `notes`.
    let metrics = s.page("/metrics", &alice).await;
    assert!(
        metrics.contains("shortlist_mcp_personal_connections 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("shortlist_mcp_parked_calls 0"),
        "{metrics}"
    );

    // A consent started before a restart completes after it: the new process reads the
    // server's metadata again before it sends dave on and before it redeems the code.
    let dave = s.token("dave").await;
    let r = call_tool(&mcp, &dave, "notes__whoami", json!({})).await;
    let said = result_text(&r);
    let link = said[said.find("http://").expect("a consent link")..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    drop(srv);
    let _srv = serve(&s, &config, &env).await;
    let page = browser(&link, "dave").await;
    assert!(
        page["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Access allowed"),
        "{page}"
    );
    let r = call_tool(&mcp, &dave, "notes__whoami", json!({})).await;
    assert_eq!(result_text(&r), "sub=dave act=-", "{r}");
}

/// `call_tool` of `name` with `arguments` as the bearer of `token`: the result object.
async fn call_tool(mcp: &str, token: &str, name: &str, arguments: Value) -> Value {
    call(
        mcp,
        token,
        "call_tool",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

/// The team server on `config` with `env`, once it listens.
async fn serve(
    s: &Setup,
    config: &std::path::Path,
    env: &[(&str, &str)],
) -> server_common::child_server::Started {
    let srv = s.serve(config, None, &[], env).await;
    // Warnings naming the upstreams' URLs come before the listening line: wait for it.
    let up = std::time::Instant::now();
    while !srv.log.lock().unwrap().contains("serving MCP on")
        && !srv.startup.contains("serving MCP on")
    {
        assert!(up.elapsed() < Duration::from_secs(120), "{}", srv.startup);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    srv
}

/// Opens a consent link in the test browser as `login`: the page it ends on.
async fn browser(link: &str, login: &str) -> Value {
    let out = tokio::process::Command::new(python())
        .arg(repo().join("tests/clients/browser_consent.py"))
        .args([link, login])
        .output()
        .await
        .expect("run browser_consent.py");
    assert!(
        out.status.success(),
        "browser_consent.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("browser_consent.py JSON")
}

/// The answer text of a Python client step.
fn text(step: &Value) -> String {
    step["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
