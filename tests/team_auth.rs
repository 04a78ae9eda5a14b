//! The HTTP server as an OAuth 2.1 resource server, against a real OpenID provider
//! (`oidc-provider` on Node, tests/oidc/provider.mjs) and a real MCP client: tokens the
//! provider issues are accepted (RS256 and ES256); forged, expired, not-yet-valid,
//! wrong-issuer, wrong-audience and missing tokens get `401` with the challenge that names
//! the Protected Resource Metadata; a token without the required scope gets `403`; a key
//! rotation at the provider is picked up through the unknown `kid`; and the MCP access
//! token never reaches the upstream API.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;

use serde_json::{json, Value};
use server_common::*;
use std::time::Duration;
use support::upstream;

use oidc::free_port;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// POSTs an MCP `initialize` with `token`; the status and the `WWW-Authenticate` header.
async fn initialize(url: &str, token: Option<&str>) -> (u16, String, Value) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "team-auth-test", "version": "1"}}
        }));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.expect("POST /mcp");
    let status = res.status().as_u16();
    let challenge = res
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = res.text().await.unwrap_or_default();
    (
        status,
        challenge,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// A provider whose tokens are for a server about to listen on a free port: the port,
/// the server's base URL, its `/mcp` URL (the audience) and the provider.
async fn provider_for_a_server() -> (u16, String, String, oidc::Provider) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let audience = format!("{base}/mcp");
    let idp = oidc::Provider::start(&audience).await;
    (port, base, audience, idp)
}

/// `shortlist serve --http 127.0.0.1:port` on `fx`, with `extra` arguments.
async fn serve_on(fx: &Fixture, port: u16, extra: &[&str]) -> server_common::child_server::Started {
    let addr = format!("127.0.0.1:{port}");
    let mut args = vec!["--http", addr.as_str()];
    args.extend_from_slice(extra);
    let mut cmd = tokio::process::Command::new(shortlist_bin());
    cmd.args(fx.serve_args(&args)).env(TOKEN_ENV, TOKEN);
    server_common::child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(120)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_resource_server_with_a_real_provider() {
    let up = upstream::start().await;
    let (port, base, audience, idp) = provider_for_a_server().await;
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url())],
        &format!(
            "\n[auth]\nissuer = {:?}\naudience = {audience:?}\nrequired_scopes = [\"mcp\"]\n\
             jwks_min_refetch_secs = 1\n",
            idp.issuer
        ),
    );
    let state = fx.dir.path().join("audit.sqlite3");
    let state_arg = format!("sqlite:{}", state.display());
    let _srv = serve_on(&fx, port, &["--state", &state_arg]).await;
    let meta_url = format!("{base}/.well-known/oauth-protected-resource/mcp");

    // Protected Resource Metadata, at both well-known paths, naming the issuer.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let doc: Value = reqwest::get(format!("{base}{path}"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["resource"], audience.as_str(), "{doc}");
        assert_eq!(doc["authorization_servers"], json!([idp.issuer]), "{doc}");
        assert_eq!(doc["scopes_supported"], json!(["mcp"]), "{doc}");
    }

    // No token: 401 and the challenge that names the metadata.
    let (status, challenge, _) = initialize(&audience, None).await;
    assert_eq!(status, 401);
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{meta_url}\"")),
        "{challenge}"
    );
    assert!(
        !challenge.contains("error="),
        "no error code without a token: {challenge}"
    );

    // Tokens the provider issues: RS256 and ES256.
    let alice = idp.token("alice", "mcp", None).await;
    let (status, _, body) = initialize(&audience, Some(&alice)).await;
    assert_eq!(status, 200, "{body}");
    let es = idp.token("es256-client", "mcp", None).await;
    assert_eq!(initialize(&audience, Some(&es)).await.0, 200);

    // Bad tokens: each refused with invalid_token and a reason.
    let t = now();
    let claims = |extra: Value| {
        let mut c =
            json!({"sub": "mallory", "aud": audience, "scope": "mcp", "iat": t, "exp": t + 600});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    let cases = [
        (
            "forged",
            idp.sign(claims(json!({})), true).await,
            "signature",
        ),
        (
            "expired",
            idp.sign(claims(json!({"exp": t - 120, "iat": t - 720})), false)
                .await,
            "expired",
        ),
        (
            "not yet valid",
            idp.sign(claims(json!({"nbf": t + 600})), false).await,
            "not valid yet",
        ),
        (
            "wrong issuer",
            idp.sign(claims(json!({"iss": "http://127.0.0.1:9"})), false)
                .await,
            "issuer",
        ),
        (
            "wrong audience",
            idp.token("alice", "mcp", Some("http://127.0.0.1:9/mcp"))
                .await,
            "aud",
        ),
        ("garbage", "not.a.token".to_string(), "not a JWT"),
    ];
    for (what, token, reason) in &cases {
        let (status, challenge, body) = initialize(&audience, Some(token)).await;
        assert_eq!(status, 401, "{what}: {body}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains(&format!("resource_metadata=\"{meta_url}\"")),
            "{what}: {challenge}"
        );
        assert!(
            body["error_description"]
                .as_str()
                .unwrap_or("")
                .contains(reason),
            "{what}: {body}"
        );
    }
    // A token the provider signed within the leeway is still fine.
    let skewed = idp.sign(claims(json!({"exp": t - 5})), false).await;
    assert_eq!(initialize(&audience, Some(&skewed)).await.0, 200);

    // A valid token without the required scope: 403 insufficient_scope.
    let no_scope = idp.token("bob", "openid", None).await;
    let (status, challenge, body) = initialize(&audience, Some(&no_scope)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"mcp\""), "{challenge}");

    // A real MCP client with a real token lists tools and calls an API; the upstream sees
    // the catalog's credential, never the MCP access token.
    let (doc, ok, err) = python_client_raw(
        Target::Http(&audience),
        "auto",
        json!([
            {"op": "list_tools"},
            {"op": "call", "tool": "call_tool", "args": {"name": "getMovieCredits", "arguments": {"movie_id": 550}}}
        ]),
        &[&format!("Authorization: Bearer {alice}")],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    assert!(
        names(step(&doc, 0)).contains(&"find_tools".to_string()),
        "{doc:#}"
    );
    let got = up.received();
    assert!(!got.is_empty(), "the call reached the upstream: {doc:#}");
    for r in &got {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert!(
            !r.headers.iter().any(|(_, v)| v.contains(&alice)),
            "the MCP access token reached the upstream: {r:?}"
        );
    }

    // The audit log names the person, the API, the endpoint, the status and the latency,
    // and nothing of the request.
    let store = shortlist::store::Store::open(&shortlist::store::Location::Sqlite(state), None)
        .await
        .expect("open the audit store");
    let audit = store.audit(Some("alice"), 10).await.expect("audit");
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(
        (
            audit[0].api.as_str(),
            audit[0].endpoint.as_str(),
            audit[0].status
        ),
        ("tmdb", "getMovieCredits", 200)
    );
    assert!(store
        .audit(Some("bob"), 10)
        .await
        .expect("audit")
        .is_empty());

    // Key rotation: the provider restarts with new keys; a token under the new kid makes
    // the server fetch the keys again, after which the old key is gone.
    let idp = idp.rotate_keys().await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // the refetch rate limit
    let fresh = idp.token("alice", "mcp", None).await;
    let (status, _, body) = initialize(&audience, Some(&fresh)).await;
    assert_eq!(status, 200, "a new kid is fetched: {body}\n{}", idp.log());
    let (status, _, body) = initialize(&audience, Some(&alice)).await;
    assert_eq!(
        status, 401,
        "the rotated-out key no longer verifies: {body}"
    );
}

/// `visible_to`: an API limited to a group is listed, ranked, described and callable for a
/// person in that group only; for anyone else it does not exist (no hint names it), in the
/// meta-tools and in the catalog exposure alike; and lists that depend on the caller are
/// not for shared caches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apis_limited_to_a_group_are_seen_by_that_group_only() {
    let up = upstream::start().await;
    let (port, _, audience, idp) = provider_for_a_server().await;
    // `visible_to` belongs to the last [[api]] table, `archive`.
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url()), ("archive", &up.base_url())],
        &format!(
            "visible_to = {{ groups = [\"admins\"] }}\n\n[auth]\nissuer = {:?}\naudience = {audience:?}\n",
            idp.issuer
        ),
    );
    let _srv = serve_on(&fx, port, &["--expose", "catalog"]).await;
    // alice is in `admins`, bob is not.
    let alice = idp.token("alice", "mcp", None).await;
    let bob = idp.token("bob", "mcp", None).await;
    let steps = json!([
        {"op": "list_tools", "cache_mode": "bypass"},
        {"op": "call", "tool": "find_tools", "args": {}},
        {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "api": "archive", "k": 3}},
        {"op": "call", "tool": "find_tools", "args": {"query": "movie credits", "k": 10}},
    ]);
    let run = |token: String| {
        let (url, steps) = (audience.clone(), steps.clone());
        async move {
            let (doc, ok, err) = python_client_raw(
                Target::Http(&url),
                "auto",
                steps,
                &[&format!("Authorization: Bearer {token}")],
            )
            .await;
            assert!(ok, "{err}\n{doc:#}");
            doc
        }
    };
    let a = run(alice).await;
    let b = run(bob.clone()).await;

    let listed = |doc: &Value| names(step(doc, 0));
    let archived = |names: &[String]| names.iter().filter(|n| n.starts_with("archive")).count();
    assert!(
        archived(&listed(&a)) > 0,
        "alice sees the archive: {:?}",
        listed(&a)
    );
    assert_eq!(archived(&listed(&b)), 0, "bob must not: {:?}", listed(&b));
    assert!(listed(&b)
        .iter()
        .any(|n| n == "searchMovie" || n.starts_with("tmdb")));
    for doc in [&a, &b] {
        assert_eq!(step(doc, 0)["hints"][0]["cacheScope"], "private", "{doc:#}");
    }
    let apis = |doc: &Value| step(doc, 1)["structuredContent"]["apis"].to_string();
    assert!(apis(&a).contains("\"archive\"") && !apis(&b).contains("archive"));
    let archive_hits = &step(&a, 2)["structuredContent"]["tools"];
    let tool = archive_hits[0]["name"]
        .as_str()
        .expect("an archive hit")
        .to_string();
    assert_eq!(step(&b, 2)["isError"], true, "{b:#}");
    assert!(!text(step(&b, 2)).contains("closest"), "{b:#}");
    assert!(
        !step(&b, 3).to_string().contains(&tool),
        "bob ranked {tool}: {b:#}"
    );

    // The archive's tools do not exist for bob: not described, not called, not hinted at.
    let before = up.received().len();
    let (doc, ok, err) = python_client_raw(
        Target::Http(&audience),
        "auto",
        json!([
            {"op": "call", "tool": "describe_tool", "args": {"name": tool}},
            {"op": "call", "tool": "call_tool", "args": {"name": tool, "arguments": {"movie_id": 550}}},
            {"op": "call", "tool": tool, "args": {"movie_id": 550}, "expect_error": true},
        ]),
        &[&format!("Authorization: Bearer {bob}")],
    )
    .await;
    assert!(ok, "{err}\n{doc:#}");
    assert_eq!(step(&doc, 0)["isError"], true, "{doc:#}");
    assert_eq!(step(&doc, 1)["isError"], true, "{doc:#}");
    assert!(text(step(&doc, 1)).contains("unknown tool"), "{doc:#}");
    assert!(!text(step(&doc, 1)).contains("did you mean"), "{doc:#}");
    assert_eq!(step(&doc, 2)["error"]["code"], -32602, "{doc:#}");
    assert_eq!(
        up.received().len(),
        before,
        "bob reached the archive's upstream"
    );
}

/// A token's header is the caller's text, read before any signature is checked: a `kid`
/// holding a line break, a carriage return, a Unicode line separator or a terminal escape
/// shows up in the text log escaped, on the refusal's own line, never as a line of its own
/// that reads like the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kid_cannot_forge_text_log_lines() {
    use base64::Engine;
    let up = upstream::start().await;
    let (port, _base, audience, idp) = provider_for_a_server().await;
    let fx = Fixture::with_apis_and(
        &[("tmdb", &up.base_url())],
        &format!(
            "\n[auth]\nissuer = {:?}\naudience = {audience:?}\nrequired_scopes = [\"mcp\"]\n",
            idp.issuer
        ),
    );
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = tokio::process::Command::new(shortlist_bin());
    cmd.args(fx.serve_args(&["--http", &addr, "--log-format", "text"]))
        .env(TOKEN_ENV, TOKEN)
        .env("RUST_LOG", "shortlist=info");
    let srv =
        server_common::child_server::start(cmd, "http://127.0.0.1:", Duration::from_secs(120))
            .await;

    let b64 = |v: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let kid = "k1\nFORGED line\rFORGED cr\u{2028}FORGED ls\u{1b}[2K\u{202e}FORGED bidi";
    let token = format!(
        "{}.{}.{}",
        b64(json!({"alg": "RS256", "typ": "JWT", "kid": kid})),
        b64(json!({"sub": "mallory", "aud": audience, "scope": "mcp"})),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b"not a signature")
    );
    let (status, _, body) = initialize(&audience, Some(&token)).await;
    assert_eq!(status, 401, "{body}");

    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let log = loop {
        let log = srv.log.lock().unwrap().clone();
        if log.contains("request refused") || std::time::Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(log.contains("request refused"), "no refusal logged: {log}");
    for line in log.split(['\n', '\r', '\u{2028}', '\u{2029}']) {
        assert!(
            !line.contains("FORGED") || line.contains("request refused"),
            "a line of its own from the token's kid: {line:?}\nin: {log:?}"
        );
    }
    assert!(
        !log.contains('\u{1b}') && !log.contains('\u{202e}'),
        "a raw control character from the kid: {log:?}"
    );
    assert!(
        log.contains(r"k1\nFORGED line\rFORGED cr\u{2028}FORGED ls\u{1b}[2K\u{202e}FORGED bidi"),
        "the kid, escaped: {log:?}"
    );
}
