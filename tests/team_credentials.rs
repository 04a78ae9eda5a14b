//! Each person's own upstream credentials, end to end through the real server, a real MCP
//! client (the Python SDK), a real OpenID provider (`oidc-provider`, tests/oidc/provider.mjs)
//! and a real upstream that records every request:
//!
//! - token exchange: alice's and bob's calls reach the API with their own exchanged tokens;
//! - client credentials: one machine token for everyone;
//! - authorization code with PKCE: the first call asks for consent (an `input_required`
//!   URL elicitation for a 2026-07-28 client, `elicitation/create` for a 2025-11-25
//!   session, a tool error carrying the link for a client with neither); the person signs
//!   in and allows access in a browser; the token is kept sealed, refreshed, and withdrawn
//!   by the person (revoked at the provider), after which the next call asks again.
//!
//! The upstream checks every token as the API would (signature, issuer, audience) and
//! never sees an MCP access token.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/postgres.rs"]
mod postgres;

use serde_json::{json, Value};
use server_common::*;
use std::time::Duration;
use support::upstream;

const HR: &str = "http://127.0.0.1:9/hr";
const BATCH: &str = "http://127.0.0.1:9/batch";
const NOTES: &str = "http://127.0.0.1:9/notes";
const STATE_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// A spec with one `GET /echo` whose operation id is `id` (the upstream echoes headers).
fn echo_spec(dir: &std::path::Path, id: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{id}.json"));
    let spec = json!({
        "openapi": "3.0.3",
        "info": {"title": id, "version": "1"},
        "paths": {
            "/echo": {"get": {
                "operationId": id,
                "summary": format!("Who the {id} API thinks is calling"),
                "responses": {"200": {"description": "the request as received"}}
            }},
            "/account": {"get": {
                "operationId": format!("{id}Account"),
                "summary": "Always refuses the token (401)",
                "responses": {"401": {"description": "refused"}}
            }}
        }
    });
    std::fs::write(&path, spec.to_string()).unwrap();
    path
}

/// Who an API verifying tokens of `issuer` for `audience` sees in an `Authorization` header.
async fn seen_as(idp: &oidc::Provider, audience: &str, header: Option<&str>) -> String {
    let token = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .expect("a bearer token reached the upstream");
    let api = idp.api_verifier(audience, &[]);
    api.verify(token)
        .await
        .unwrap_or_else(|e| panic!("the API refuses the token: {e:?}"))
        .sub
}

/// The text of a `call` step's result.
fn text(step: &Value) -> String {
    step["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn is_error(step: &Value) -> bool {
    step["isError"].as_bool().unwrap_or(false)
}

/// The consent link in a tool error's text.
fn link_in(text: &str) -> String {
    let start = text.find("http://").expect("a link in the answer");
    text[start..].split_whitespace().next().unwrap().to_string()
}

struct Team {
    up: upstream::Upstream,
    idp: oidc::Provider,
    base: String,
    audience: String,
    state_file: std::path::PathBuf,
    /// Every MCP access token the test used.
    issued: std::sync::Mutex<Vec<String>>,
    _srv: server_common::child_server::Started,
    _dir: tempfile::TempDir,
}

impl Team {
    /// The team server with its state in a SQLite file.
    async fn start() -> Team {
        Team::start_on(None).await
    }

    /// The team server with its state at `state` (`--state`), else in a SQLite file.
    async fn start_on(state: Option<String>) -> Team {
        require_model();
        let up = upstream::start().await;
        let port = oidc::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let audience = format!("{base}/mcp");
        let idp = oidc::Provider::start(&audience).await;
        let issuer = &idp.issuer;
        let dir = tempfile::tempdir().unwrap();
        let api = |id: &str, spec_id: &str, auth: String| {
            format!(
                "\n[[api]]\nid = {id:?}\nspec = {:?}\nbase_url = \"{}\"\ntimeout_secs = 5\nallow_private = true\nauth = {auth}\n",
                echo_spec(dir.path(), spec_id),
                up.base_url()
            )
        };
        let mut toml = format!("data_dir = {:?}\n", dir.path().join("index"));
        toml += &api(
            "hr",
            "hrEcho",
            format!(
                "{{ kind = \"token_exchange\", token_url = \"{issuer}/token\", client_id = \"shortlist-server\", client_secret_env = \"TEST_IDP_SECRET\", audience = {HR:?}, scope = \"mcp\" }}"
            ),
        );
        toml += &api(
            "batch",
            "batchEcho",
            format!(
                "{{ kind = \"client_credentials\", token_url = \"{issuer}/token\", client_id = \"shortlist-server\", client_secret_env = \"TEST_IDP_SECRET\", scope = \"mcp\", resource = {BATCH:?} }}"
            ),
        );
        toml += &api(
            "notes",
            "notesEcho",
            format!(
                "{{ kind = \"authorization_code\", authorize_url = \"{issuer}/auth\", token_url = \"{issuer}/token\", client_id = \"notes-app\", client_secret_env = \"TEST_NOTES_SECRET\", scope = \"notes\", resource = {NOTES:?}, revocation_url = \"{issuer}/token/revocation\" }}"
            ),
        );
        toml += &format!(
            "\n[[api]]\nid = \"tmdb\"\nspec = {:?}\nbase_url = \"{}\"\ntimeout_secs = 2\n\
             allow_private = true\nauth = {{ kind = \"bearer\", token_env = {TOKEN_ENV:?} }}\n",
            repo().join("tests/fixtures/upstream_tmdb.json"),
            up.base_url()
        );
        toml += &format!(
            "\n[auth]\nissuer = {issuer:?}\naudience = {audience:?}\nrequired_scopes = [\"mcp\"]\n\
             signin = {{ client_id = \"shortlist-web\", client_secret_env = \"TEST_SIGNIN_SECRET\" }}\n"
        );
        let config = dir.path().join("catalog.toml");
        std::fs::write(&config, toml).unwrap();
        let state_file = dir.path().join("state.sqlite3");
        let mut cmd = tokio::process::Command::new(shortlist_bin());
        cmd.args([
            "serve",
            "-c",
            &config.display().to_string(),
            "--http",
            &format!("127.0.0.1:{port}"),
            "--state",
            &state.unwrap_or_else(|| format!("sqlite:{}", state_file.display())),
        ])
        .env(TOKEN_ENV, TOKEN)
        .env("TEST_IDP_SECRET", "shortlist-server-secret")
        .env("TEST_NOTES_SECRET", "notes-app-secret")
        .env("TEST_SIGNIN_SECRET", "shortlist-web-secret")
        .env("SHORTLIST_STATE_KEY", STATE_KEY);
        let srv =
            server_common::child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(120))
                .await;
        Team {
            up,
            idp,
            base,
            audience,
            state_file,
            issued: Default::default(),
            _srv: srv,
            _dir: dir,
        }
    }

    /// One call of `tool` as `person` with the Python SDK in `mode`, with `extra` client
    /// arguments; the call step.
    async fn call(&self, person: &str, mode: &str, tool: &str, extra: &[&str]) -> (Value, Value) {
        self.call_with(person, mode, tool, json!({}), extra).await
    }

    /// [`Team::call`] with arguments.
    async fn call_with(
        &self,
        person: &str,
        mode: &str,
        tool: &str,
        arguments: Value,
        extra: &[&str],
    ) -> (Value, Value) {
        let token = self.idp.token(person, "mcp", None).await;
        self.issued.lock().unwrap().push(token.clone());
        let (doc, ok, err) = python_client_args(
            Target::Http(&self.audience),
            mode,
            json!([{"op": "call", "tool": "call_tool", "args": {"name": tool, "arguments": arguments}}]),
            &[&format!("Authorization: Bearer {token}")],
            extra,
        )
        .await;
        assert!(ok, "{err}\n{doc:#}\nprovider: {}", self.idp.log());
        (step(&doc, 0).clone(), doc)
    }

    /// What the server printed on stderr so far.
    fn log(&self) -> String {
        self._srv.log.lock().unwrap().clone()
    }

    /// The `Authorization` header of the upstream's latest request.
    fn last_authorization(&self) -> Option<String> {
        self.up
            .received()
            .last()
            .and_then(|r| r.header("authorization").map(str::to_string))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_calls_with_their_own_credentials() {
    let team = Team::start().await;
    let issuer = team.idp.issuer.clone();

    // Token exchange: each person's own token, for the API's audience.
    let mut exchanged = vec![];
    for person in ["alice", "bob"] {
        let (call, doc) = team.call(person, "auto", "hr__hrEcho", &[]).await;
        assert!(!is_error(&call), "{doc:#}");
        let auth = team.last_authorization();
        assert_eq!(seen_as(&team.idp, HR, auth.as_deref()).await, person);
        exchanged.push(auth);
    }
    assert_ne!(exchanged[0], exchanged[1]);

    // Client credentials: one machine token for everyone.
    let mut machine = vec![];
    for person in ["alice", "bob"] {
        let (call, doc) = team.call(person, "auto", "batch__batchEcho", &[]).await;
        assert!(!is_error(&call), "{doc:#}");
        let auth = team.last_authorization();
        assert_eq!(
            seen_as(&team.idp, BATCH, auth.as_deref()).await,
            "shortlist-server"
        );
        machine.push(auth);
    }
    assert_eq!(machine[0], machine[1], "the machine token is reused");

    // A token the API refuses is forgotten: the call is made once more with a fresh one.
    let before = team.up.received().len();
    let (call, doc) = team
        .call("alice", "auto", "batch__batchEchoAccount", &[])
        .await;
    assert!(is_error(&call), "{doc:#}");
    let tries: Vec<_> = team.up.received()[before..]
        .iter()
        .map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert_eq!(tries.len(), 2, "one retry: {tries:?}");
    assert_eq!(tries[0], machine[0]);
    assert_ne!(tries[1], tries[0], "a fresh token for the retry");
    let (_, _) = team.call("bob", "auto", "batch__batchEcho", &[]).await;
    assert_eq!(
        team.last_authorization(),
        tries[1],
        "the fresh token is kept"
    );

    // Authorization code, 2026-07-28 with URL elicitation: input_required, consent in the
    // browser, and the retried call goes through with alice's own token.
    let before = team.up.received().len();
    let (call, doc) = team
        .call(
            "alice",
            "auto",
            "notes__notesEcho",
            &["--consent-as", "alice"],
        )
        .await;
    assert_eq!(doc["protocolVersion"], "2026-07-28", "{doc:#}");
    assert!(!is_error(&call), "{doc:#}");
    let asked = doc["elicitations"].as_array().expect("elicitations");
    assert_eq!(asked.len(), 1, "{doc:#}");
    assert_eq!(asked[0]["mode"], "url");
    assert!(
        asked[0]["page"]["text"]
            .as_str()
            .unwrap()
            .contains("Access allowed"),
        "{doc:#}"
    );
    assert_eq!(
        team.up.received().len(),
        before + 1,
        "called once, after consent"
    );
    let first = team.last_authorization();
    assert_eq!(seen_as(&team.idp, NOTES, first.as_deref()).await, "alice");

    // The next call needs no consent; the 20 s token is refreshed (renewed 30 s ahead).
    let (call, doc) = team.call("alice", "auto", "notes__notesEcho", &[]).await;
    assert!(!is_error(&call), "{doc:#}");
    let second = team.last_authorization();
    assert_eq!(seen_as(&team.idp, NOTES, second.as_deref()).await, "alice");
    assert_ne!(first, second, "refreshed");

    // Tokens rest sealed: the store file holds neither in clear.
    let stored = std::fs::read(&team.state_file).unwrap();
    for t in [&first, &second] {
        let t = t.as_deref().unwrap().trim_start_matches("Bearer ");
        assert!(
            !stored.windows(t.len()).any(|w| w == t.as_bytes()),
            "a token in clear in the store"
        );
    }

    // A client without elicitation gets the link in a tool error; bob opens it himself.
    let (call, doc) = team.call("bob", "auto", "notes__notesEcho", &[]).await;
    assert!(is_error(&call), "{doc:#}");
    let link = link_in(&text(&call));
    assert!(
        link.starts_with(&format!("{}/oauth/consent?state=", team.base)),
        "a page of the server's, which signs the browser in first: {link}"
    );
    let page = browser(&link, "bob", false).await;
    assert!(
        page["text"].as_str().unwrap().contains("Access allowed"),
        "{page}"
    );
    let (call, doc) = team.call("bob", "auto", "notes__notesEcho", &[]).await;
    assert!(!is_error(&call), "{doc:#}");
    assert_eq!(
        seen_as(&team.idp, NOTES, team.last_authorization().as_deref()).await,
        "bob"
    );
    // The link is spent.
    let again = browser(&link, "bob", false).await;
    assert!(
        again["text"]
            .as_str()
            .unwrap()
            .contains("expired or was already used")
            || again["status"] != 200,
        "{again}"
    );

    // A 2025-11-25 session: elicitation/create in URL mode, then the call goes on.
    let (call, doc) = team
        .call(
            "carol",
            "legacy",
            "notes__notesEcho",
            &["--consent-as", "carol"],
        )
        .await;
    assert_eq!(doc["protocolVersion"], "2025-11-25", "{doc:#}");
    assert!(!is_error(&call), "{doc:#}");
    assert_eq!(doc["elicitations"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(
        seen_as(&team.idp, NOTES, team.last_authorization().as_deref()).await,
        "carol"
    );

    // Declining: nothing is called.
    let before = team.up.received().len();
    let (call, doc) = team
        .call(
            "es256-client",
            "auto",
            "notes__notesEcho",
            &["--consent-deny"],
        )
        .await;
    assert!(is_error(&call), "{doc:#}");
    assert!(text(&call).contains("declined"), "{doc:#}");
    assert_eq!(team.up.received().len(), before);

    // alice withdraws her consent: revoked at the provider, forgotten here, asked again.
    let http = reqwest::Client::new();
    let alice = team.idp.token("alice", "mcp", None).await;
    team.issued.lock().unwrap().push(alice.clone());
    let list = json_of(
        http.get(format!("{}/oauth/connections", team.base))
            .bearer_auth(&alice),
    )
    .await;
    assert_eq!(list["sub"], "alice");
    assert_eq!(list["connections"][0]["api"], "notes", "{list}");
    let gone = json_of(
        http.delete(format!("{}/oauth/connections/notes", team.base))
            .bearer_auth(&alice),
    )
    .await;
    assert_eq!(gone["disconnected"], true, "{gone}");
    let revoked = json_of(http.get(format!("{}/test/revoked", issuer))).await;
    assert!(
        !revoked["revoked"].as_array().unwrap().is_empty(),
        "the provider saw the revocation: {revoked}"
    );
    let (call, doc) = team.call("alice", "auto", "notes__notesEcho", &[]).await;
    assert!(is_error(&call), "asked again: {doc:#}");
    assert!(text(&call).contains("open this link"), "{doc:#}");
    // bob's consent stands.
    let (call, doc) = team.call("bob", "auto", "notes__notesEcho", &[]).await;
    assert!(!is_error(&call), "{doc:#}");

    // Without a token, connections are not listed.
    let status = http
        .get(format!("{}/oauth/connections", team.base))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 401);

    // A made-up callback, from a browser that signed in for no consent, is refused.
    let res = http
        .get(format!("{}/oauth/callback?state=made-up&code=x", team.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    assert!(res.text().await.unwrap().contains("nothing was stored"));

    // No MCP access token ever reached the upstream.
    let issued = team.issued.lock().unwrap().clone();
    assert!(issued.len() > 10);
    for r in team.up.received() {
        assert!(
            !r.headers
                .iter()
                .any(|(_, v)| issued.iter().any(|t| v.contains(t.as_str()))),
            "an MCP access token reached the upstream: {r:?}"
        );
    }
}

/// The JSON a request answers with.
async fn json_of(req: reqwest::RequestBuilder) -> Value {
    req.send()
        .await
        .expect("request")
        .json()
        .await
        .expect("a JSON answer")
}

/// Opens a consent link in the test browser as `login`.
async fn browser(link: &str, login: &str, deny: bool) -> Value {
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(repo().join("tests/clients/browser_consent.py"))
        .arg(link)
        .arg(login);
    if deny {
        cmd.arg("--deny");
    }
    let out = cmd.output().await.expect("run browser_consent.py");
    assert!(
        out.status.success(),
        "browser_consent.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("browser_consent.py JSON")
}

/// The state store goes away in the middle of a call and while calls keep coming: a call
/// that needs no stored state still succeeds (its audit record is lost and logged), one
/// that needs a person's stored token fails readably, nothing is half-written, and once
/// the store is back the same person's stored consent works again and calls are recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_goes_away_mid_call() {
    let mut pg = tokio::task::block_in_place(postgres::Postgres::start);
    let url = tokio::task::block_in_place(|| pg.database("team"));
    let team = Team::start_on(Some(url.clone())).await;
    let store = shortlist::store::Store::open(&shortlist::store::Location::Postgres(url), None)
        .await
        .unwrap();
    let credits = json!({"movie_id": 550});

    // alice consents to the notes API (the link from the tool error, in the browser).
    let (call, doc) = team.call("alice", "auto", "notes__notesEcho", &[]).await;
    assert!(is_error(&call), "{doc:#}");
    let page = browser(&link_in(&text(&call)), "alice", false).await;
    assert!(
        page["text"].as_str().unwrap().contains("Access allowed"),
        "{page}"
    );
    let (call, doc) = team.call("alice", "auto", "notes__notesEcho", &[]).await;
    assert!(!is_error(&call), "{doc:#}");
    let calls_of = |entries: Vec<shortlist::store::AuditEntry>| {
        entries.into_iter().filter(|e| e.event == "call").count()
    };
    let recorded = calls_of(store.audit(Some("alice"), 100).await.unwrap());
    assert_eq!(recorded, 1, "the consented call is recorded");

    // A slow call (the upstream answers after 10 s, the API's timeout is 2 s) is under
    // way when the store goes away: its result stands, its record is lost and logged.
    let slow = team.call_with("alice", "auto", "tmdb__slow", json!({}), &[]);
    let kill = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        tokio::task::block_in_place(|| pg.kill());
    };
    let ((call, doc), ()) = tokio::join!(slow, kill);
    assert!(is_error(&call), "{doc:#}");
    assert!(text(&call).contains("timed out"), "{doc:#}");

    // While it is away: a call with the catalog's own credential goes through; one that
    // needs alice's stored token fails readably; listing still works.
    let (call, doc) = team
        .call_with("bob", "auto", "tmdb__getMovieCredits", credits.clone(), &[])
        .await;
    assert!(!is_error(&call), "{doc:#}");
    let (call, doc) = team.call("alice", "auto", "notes__notesEcho", &[]).await;
    assert!(is_error(&call), "{doc:#}");
    assert!(
        text(&call).contains("the state store is unavailable"),
        "{doc:#}"
    );
    let log = team.log();
    assert!(
        log.contains("audit: the event could not be recorded")
            || log.contains("audit: the state store did not answer"),
        "{log}"
    );

    // Back: alice's consent is intact, and calls are recorded again.
    tokio::task::block_in_place(|| pg.resume());
    let mut ok = false;
    for _ in 0..20 {
        let (call, _) = team.call("alice", "auto", "notes__notesEcho", &[]).await;
        if !is_error(&call) {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(ok, "alice's stored consent works once the store is back");
    let (call, doc) = team
        .call_with("bob", "auto", "tmdb__getMovieCredits", credits, &[])
        .await;
    assert!(!is_error(&call), "{doc:#}");
    let alice = store.audit(Some("alice"), 100).await.unwrap();
    let bob = store.audit(Some("bob"), 100).await.unwrap();
    assert_eq!(
        alice
            .iter()
            .filter(|e| e.api == "notes" && e.event == "call")
            .count(),
        2,
        "the calls made while the store was up: {alice:?}"
    );
    assert_eq!(
        bob.iter().filter(|e| e.event == "call").count(),
        1,
        "bob's call while the store was away is not recorded: {bob:?}"
    );
    assert!(alice.iter().all(|e| e.sub == "alice") && bob[0].sub == "bob");
}
