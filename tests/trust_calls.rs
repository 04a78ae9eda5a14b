//! What a call may reach and what it leaves behind, on a team server:
//!
//! - loopback and private addresses a spec names are refused unless the API's entry says
//!   `allow_private = true`, and the refusal is in the audit log;
//! - a token exchange sends the person's MCP access token only to the `[auth]` issuer's
//!   own token endpoint: a `token_url` elsewhere is refused (unless trusted), and a token
//!   that cannot be had is in the audit log;
//! - with `audit = "required"`, a call whose record cannot be written is not made.
//!
//! Real parts: the test OpenID provider (its token exchange), the server binary, a
//! recording upstream, a recording "token endpoint" of an attacker, PostgreSQL that goes
//! away.

mod server_common;
mod support;

#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/team.rs"]
mod team;

use serde_json::json;
use std::sync::{Arc, Mutex};
use support::upstream;
use team::{audit_rows, call, result_text, Setup};

const HR: &str = "https://hr.example/api";

fn bearer() -> String {
    format!(
        "auth = {{ kind = \"bearer\", token_env = {:?} }}",
        server_common::TOKEN_ENV
    )
}

/// A "token endpoint" that records every body posted to it.
async fn recorder() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/token",
        axum::routing::post(move |body: String| {
            s.lock().unwrap().push(body);
            async {
                (
                    axum::http::StatusCode::BAD_REQUEST,
                    "{\"error\":\"invalid_grant\"}",
                )
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_and_foreign_token_urls_are_refused_and_audited() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let spec = server_common::repo().join("tests/fixtures/upstream_tmdb.json");
    let (attacker, posted) = recorder().await;
    let i = s.idp.issuer.clone();
    let exchange = |extra: &str| {
        format!(
            "allow_private = true\nauth = {{ kind = \"token_exchange\", client_id = \"shortlist-server\", \
             client_secret_env = \"TEST_IDP_SECRET\", audience = {HR:?}, scope = \"mcp\"{extra} }}"
        )
    };
    let config = s.config(&format!(
        "{}{}{}{}{}{}",
        // A spec's server on loopback, the entry not saying it may be called.
        Setup::api(Some("intranet"), &spec, &up.base_url(), &bearer()),
        Setup::api(
            Some("allowed"),
            &spec,
            &up.base_url(),
            &format!("allow_private = true\n{}", bearer())
        ),
        // Exchanges: at the issuer's own endpoint (found by discovery), at a URL elsewhere,
        // and with a secret the provider refuses.
        Setup::api(Some("hr"), &spec, &up.base_url(), &exchange("")),
        Setup::api(
            Some("elsewhere"),
            &spec,
            &up.base_url(),
            &exchange(&format!(", token_url = {attacker:?}"))
        ),
        Setup::api(
            Some("wrongsecret"),
            &spec,
            &up.base_url(),
            &exchange(&format!(", token_url = \"{i}/token\""))
                .replace("TEST_IDP_SECRET", "TEST_WRONG_SECRET")
        ),
        s.auth("")
    ));
    let _srv = s
        .serve(
            &config,
            None,
            &[],
            &[("TEST_WRONG_SECRET", "not-the-secret")],
        )
        .await;
    let mcp = format!("{}/mcp", s.base);
    let alice = s.token("alice").await;
    let credits = json!({"movie_id": 550});

    let r = call(&mcp, &alice, "intranet__getMovieCredits", credits.clone()).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(result_text(&r).contains("allow_private = true"), "{r}");
    assert!(up.received().is_empty(), "a loopback address was called");
    let r = call(&mcp, &alice, "allowed__getMovieCredits", credits.clone()).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(up.received().len(), 1);

    // The issuer's own endpoint: alice's own token reaches the API.
    let r = call(&mcp, &alice, "hr__getMovieCredits", credits.clone()).await;
    assert_ne!(r["isError"], true, "{r}");
    let got = up.received().last().cloned().unwrap();
    let token = got
        .header("authorization")
        .unwrap()
        .trim_start_matches("Bearer ");
    assert_eq!(
        s.idp.api_verifier(HR, &[]).verify(token).await.unwrap().sub,
        "alice"
    );
    // Elsewhere: refused before anything is sent there.
    let r = call(&mcp, &alice, "elsewhere__getMovieCredits", credits.clone()).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        result_text(&r).contains("not the [auth] issuer's token endpoint"),
        "{r}"
    );
    assert!(
        posted.lock().unwrap().is_empty(),
        "alice's token was sent to {attacker}"
    );
    let r = call(&mcp, &alice, "wrongsecret__getMovieCredits", credits).await;
    assert_eq!(r["isError"], true, "{r}");

    let rows = audit_rows(&s.state_file());
    let has = |event: &str, api: &str, reason: &str| {
        rows.iter().any(|(e, sub, a, d)| {
            e == event && sub == "alice" && a == api && d.as_deref().unwrap_or("").contains(reason)
        })
    };
    assert!(has("refused", "intranet", "address"), "{rows:?}");
    assert!(has("token_failed", "elsewhere", "token"), "{rows:?}");
    assert!(has("token_failed", "wrongsecret", "token"), "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r.0 == "call").count(), 2, "{rows:?}");
    // Each with the OAuth client the person came through (the test provider issues each
    // person's token to a client of the same name).
    let clients = team::audit_clients(&s.state_file());
    assert!(
        clients
            .iter()
            .all(|(_, sub, client)| sub == "alice" && client.as_deref() == Some("alice")),
        "{clients:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_audit_refuses_a_call_it_cannot_record() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let mut pg = tokio::task::block_in_place(postgres::Postgres::start);
    let url = tokio::task::block_in_place(|| pg.database("required"));
    let spec = server_common::repo().join("tests/fixtures/upstream_tmdb.json");
    let config = s.config(&format!(
        "{}{}",
        Setup::api(
            Some("tmdb"),
            &spec,
            &up.base_url(),
            &format!("allow_private = true\n{}", bearer())
        ),
        s.auth("audit = \"required\"")
    ));
    let _srv = s.serve(&config, Some(&url), &[], &[]).await;
    let mcp = format!("{}/mcp", s.base);
    let alice = s.token("alice").await;
    let credits = json!({"movie_id": 550});
    let r = call(&mcp, &alice, "getMovieCredits", credits.clone()).await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(up.received().len(), 1, "{r}");

    tokio::task::block_in_place(|| pg.kill());
    let r = call(&mcp, &alice, "getMovieCredits", credits.clone()).await;
    assert_eq!(r["isError"], true, "{r}");
    assert!(result_text(&r).contains("audit = \"required\""), "{r}");
    assert_eq!(
        up.received().len(),
        1,
        "a call was made that the log does not hold"
    );

    tokio::task::block_in_place(|| pg.resume());
    let mut ok = false;
    for _ in 0..20 {
        let r = call(&mcp, &alice, "getMovieCredits", credits.clone()).await;
        if r["isError"] != true {
            ok = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    assert!(ok, "calls go again once the store is back");
    let store = shortlist::store::Store::open(&shortlist::store::Location::Postgres(url), None)
        .await
        .unwrap();
    let calls: Vec<_> = store
        .audit(Some("alice"), 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event == "call")
        .collect();
    assert_eq!(
        calls.len(),
        up.received().len(),
        "every call made is recorded: {calls:?}"
    );
    assert!(calls.iter().all(|e| e.status == 200), "{calls:?}");
}
