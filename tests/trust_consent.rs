//! A consent link connects only the person it was made for. The link an agent is given
//! is a page of the server that signs the browser in at the organisation's provider
//! first; a link opened by anyone else is refused and nothing is stored (in Chromium, as a
//! person does it); the callback redeems a code only for the browser that signed in for
//! that consent, checks the authorization server's `iss` where the API names its issuer,
//! shows fixed text (nothing the provider says, no person's name), and is rate-limited; a
//! token issued but not stored is revoked; a stored token that no longer opens (a lost
//! key) asks for consent again and can be withdrawn, and a rotated key keeps tokens.
//!
//! The consent pages' limit is per client address (the forwarded one only from a trusted
//! balancer), so one client cannot lock everyone out; callbacks naming no pending consent
//! leave no audit row; a withdrawal names only an API the person sees.
//!
//! Real parts: the test OpenID provider (its own login and consent pages), Debian's
//! Chromium driven by playwright-core, the Python "browser" of the other consent tests,
//! Debian's HAProxy, the server binary and its SQLite state file, a recording upstream.

mod server_common;
mod support;

#[path = "support/haproxy.rs"]
mod haproxy;
#[path = "support/oidc.rs"]
mod oidc;
#[path = "support/team.rs"]
mod team;

use serde_json::{json, Value};
use server_common::{python, repo, TOKEN, TOKEN_ENV};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use support::upstream;
use team::{audit_rows, call, result_text, stored_tokens, Setup, OTHER_KEY, STATE_KEY};

const CHROMIUM: &str = "/usr/bin/chromium";
const NOTES: &str = "https://notes.example/api";

/// A spec with one `GET /echo` (the upstream echoes what it received).
fn echo_spec(dir: &Path, id: &str) -> PathBuf {
    let path = dir.join(format!("{id}.json"));
    let spec = json!({
        "openapi": "3.0.3",
        "info": {"title": id, "version": "1"},
        "paths": {"/echo": {"get": {
            "operationId": id,
            "summary": format!("Who the {id} API thinks is calling"),
            "responses": {"200": {"description": "the request as received"}}
        }}}
    });
    std::fs::write(&path, spec.to_string()).unwrap();
    path
}

/// The catalog: `notes` (consent per person, revocable) and, when `issuer` is given, its
/// authorization server's issuer named for RFC 9207; `memo`, the same without a
/// revocation endpoint.
fn config(s: &Setup, up: &upstream::Upstream, issuer: Option<&str>) -> PathBuf {
    let i = &s.idp.issuer;
    let iss = issuer
        .map(|x| format!(", issuer = {x:?}"))
        .unwrap_or_default();
    let notes = s.notes_auth(&format!("revocation_url = \"{i}/token/revocation\"{iss}"));
    let memo = s.notes_auth("");
    s.config(&format!(
        "{}{}{}",
        Setup::api(
            Some("notes"),
            &echo_spec(s.dir.path(), "notesEcho"),
            &up.base_url(),
            &format!("allow_private = true\n{notes}")
        ),
        Setup::api(
            Some("memo"),
            &echo_spec(s.dir.path(), "memoEcho"),
            &up.base_url(),
            &format!("allow_private = true\n{memo}")
        ),
        s.auth("")
    ))
}

/// The consent link a call of `tool` as `token` answers with (the client declares no
/// elicitation, so the link comes in the tool error).
async fn link_for(s: &Setup, token: &str, tool: &str) -> String {
    let r = call(&format!("{}/mcp", s.base), token, tool, json!({})).await;
    assert_eq!(r["isError"], true, "{r}");
    let text = result_text(&r);
    let start = text
        .find("http://")
        .unwrap_or_else(|| panic!("no link: {text}"));
    let link = text[start..].split_whitespace().next().unwrap().to_string();
    assert!(
        link.starts_with(&format!("{}/oauth/consent?state=", s.base)),
        "the link is the server's own page: {link}"
    );
    link
}

/// Opens `link` in Chromium as `login`; the last page the server answered.
async fn chromium(s: &Setup, link: &str, login: &str) -> Value {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "Chromium not found at {CHROMIUM}: run scripts/setup-test-tools.sh"
    );
    let shot = repo().join(format!("target/consent-screenshots/{login}.png"));
    std::fs::create_dir_all(shot.parent().unwrap()).unwrap();
    let out = tokio::process::Command::new(server_common::node22())
        .arg(repo().join("tests/browser/consent.mjs"))
        .current_dir(repo().join("tests/browser"))
        .env("LINK", link)
        .env("LOGIN", login)
        .env("SERVER", &s.base)
        .env("CHROMIUM", CHROMIUM)
        .env("SHOT", &shot)
        .output()
        .await
        .expect("run consent.mjs");
    assert!(
        out.status.success(),
        "consent.mjs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("consent.mjs JSON")
}

/// Opens `link` in the Python test browser as `login` (`deny`: refuse at the consent page).
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

fn events(state: &Path) -> Vec<(String, String)> {
    audit_rows(state)
        .into_iter()
        .map(|(e, sub, ..)| (e, sub))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consent_link_opened_by_another_person_is_refused() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let cfg = config(&s, &up, None);
    let _srv = s.serve(&cfg, None, &[], &[]).await;
    let alice = s.token("alice").await;
    let link = link_for(&s, &alice, "notes__notesEcho").await;

    // bob opens the link alice's agent was given (forwarded, or found in a log): he signs
    // in as himself, and is refused; nothing is stored for anyone.
    let page = chromium(&s, &link, "bob").await;
    assert_eq!(page["status"], 403, "{page}");
    assert_eq!(page["title"], "This link is not yours", "{page}");
    assert!(
        page["text"]
            .as_str()
            .unwrap()
            .contains("nothing was stored"),
        "{page}"
    );
    assert!(!page["text"].as_str().unwrap().contains("alice"), "{page}");
    assert_eq!(
        stored_tokens(&s.state_file(), "alice"),
        0,
        "bob's account stored as alice's"
    );
    assert_eq!(stored_tokens(&s.state_file(), "bob"), 0);
    assert!(
        events(&s.state_file()).contains(&("consent_refused".into(), "bob".into())),
        "{:?}",
        events(&s.state_file())
    );

    // A callback from a browser that did not sign in for this consent is refused too.
    let state = link.split("state=").nth(1).unwrap();
    let res = reqwest::get(format!(
        "{}/oauth/callback?state={state}&code=stolen",
        s.base
    ))
    .await
    .unwrap();
    assert_eq!(res.status(), 403);
    assert!(res.text().await.unwrap().contains("nothing was stored"));

    // alice opens her own link: signed in as herself, she allows access, and her calls
    // now carry her own token.
    let page = chromium(&s, &link, "alice").await;
    assert_eq!(page["title"], "Access allowed", "{page}");
    assert!(
        !page["text"].as_str().unwrap().contains("alice"),
        "no person is named: {page}"
    );
    assert_eq!(stored_tokens(&s.state_file(), "alice"), 1);
    let before = up.received().len();
    let r = call(
        &format!("{}/mcp", s.base),
        &alice,
        "notes__notesEcho",
        json!({}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    let got = &up.received()[before];
    let token = got
        .header("authorization")
        .unwrap()
        .trim_start_matches("Bearer ");
    let sub = s
        .idp
        .api_verifier(NOTES, &[])
        .verify(token)
        .await
        .unwrap()
        .sub;
    assert_eq!(sub, "alice");
    let ev = events(&s.state_file());
    for e in [("consent_asked", "alice"), ("consent_given", "alice")] {
        assert!(ev.contains(&(e.0.into(), e.1.into())), "{e:?} in {ev:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_checks_the_issuer_shows_fixed_text_and_is_rate_limited() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    // `notes` names an authorization server that is not the one answering (RFC 9207).
    let cfg = config(&s, &up, Some("https://another-as.example"));
    let _srv = s.serve(&cfg, None, &[], &[]).await;
    let alice = s.token("alice").await;
    let link = link_for(&s, &alice, "notes__notesEcho").await;
    let page = browser(&link, "alice", false).await;
    assert_eq!(page["status"], 400, "{page}");
    assert!(
        page["text"]
            .as_str()
            .unwrap()
            .contains("nothing was stored"),
        "{page}"
    );
    assert_eq!(
        stored_tokens(&s.state_file(), "alice"),
        0,
        "a mixed-up answer was stored"
    );

    // A person who declines: the page says so in its own words, never the provider's.
    let link = link_for(&s, &alice, "memo__memoEcho").await;
    let page = browser(&link, "alice", true).await;
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("Access not given"), "{page}");
    assert!(
        !text.to_lowercase().contains("aborted"),
        "the provider's text echoed: {page}"
    );

    // The consent pages are rate-limited.
    let mut limited = 0;
    for _ in 0..60 {
        let res = reqwest::get(format!("{}/oauth/callback?state=x&code=y", s.base))
            .await
            .unwrap();
        if res.status() == 429 {
            limited += 1;
        }
    }
    assert!(limited > 0, "60 callbacks at once were all served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_issued_but_not_stored_is_revoked_or_audited() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let cfg = config(&s, &up, None);
    let _srv = s.serve(&cfg, None, &[], &[]).await;
    let alice = s.token("alice").await;
    let notes = link_for(&s, &alice, "notes__notesEcho").await;
    let memo = link_for(&s, &alice, "memo__memoEcho").await;
    // The store fails to write tokens from now on (a full disk, a failed write).
    let c = rusqlite::Connection::open(s.state_file()).unwrap();
    c.execute_batch(
        "CREATE TRIGGER fail_token BEFORE INSERT ON upstream_tokens
         BEGIN SELECT RAISE(ABORT, 'disk I/O error (simulated)'); END;",
    )
    .unwrap();
    let revoked_before = s.idp_revoked().await;
    let page = browser(&notes, "alice", false).await;
    assert_eq!(page["status"], 503, "{page}");
    assert!(
        s.idp_revoked().await > revoked_before,
        "the issued token was not revoked"
    );
    let page = browser(&memo, "alice", false).await;
    assert_eq!(page["status"], 503, "{page}");
    c.execute_batch("DROP TRIGGER fail_token").unwrap();
    let rows = audit_rows(&s.state_file());
    let orphaned: Vec<_> = rows.iter().filter(|r| r.0 == "token_orphaned").collect();
    assert_eq!(
        orphaned.len(),
        1,
        "memo has no revocation endpoint: {rows:?}"
    );
    assert_eq!(orphaned[0].2, "memo");
    assert!(
        rows.iter().any(|r| r.0 == "consent_refused"
            && r.2 == "notes"
            && r.3
                .as_deref()
                .is_some_and(|d| d.contains("\"revoked\":true"))),
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_no_longer_opens_asks_again_and_a_rotated_key_keeps_it() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let cfg = config(&s, &up, None);
    let mcp = format!("{}/mcp", s.base);
    let alice = s.token("alice").await;
    {
        let _srv = s.serve(&cfg, None, &[], &[]).await;
        let link = link_for(&s, &alice, "notes__notesEcho").await;
        assert_eq!(browser(&link, "alice", false).await["status"], 200);
        let r = call(&mcp, &alice, "notes__notesEcho", json!({})).await;
        assert_ne!(r["isError"], true, "{r}");
    }
    // The key is lost (a new one configured, the old one not listed): alice is asked to
    // consent again instead of being locked out, and may withdraw the stale row.
    {
        let _srv = s
            .serve(&cfg, None, &[], &[("SHORTLIST_STATE_KEY", OTHER_KEY)])
            .await;
        let link = link_for(&s, &alice, "notes__notesEcho").await;
        let res = reqwest::Client::new()
            .delete(format!("{}/oauth/connections/notes", s.base))
            .bearer_auth(&alice)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
        assert_eq!(stored_tokens(&s.state_file(), "alice"), 0);
        assert!(
            team::audit_clients(&s.state_file()).contains(&(
                "withdrawn".into(),
                "alice".into(),
                Some("alice".into())
            )),
            "the withdrawal is audited with its client"
        );
        assert_eq!(browser(&link, "alice", false).await["status"], 200);
        assert_eq!(stored_tokens(&s.state_file(), "alice"), 1);
    }
    // A rotation back: the old key current, the one that sealed the row listed as
    // previous. The token opens, and is sealed again under the current key.
    let sealed = |f: &Path| -> Vec<u8> {
        let c = rusqlite::Connection::open(f).unwrap();
        c.query_row(
            "SELECT sealed FROM upstream_tokens WHERE sub = 'alice'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let before = sealed(&s.state_file());
    {
        let _srv = s
            .serve(
                &cfg,
                None,
                &[],
                &[
                    ("SHORTLIST_STATE_KEY", STATE_KEY),
                    ("SHORTLIST_STATE_PREVIOUS_KEYS", OTHER_KEY),
                ],
            )
            .await;
        let r = call(&mcp, &alice, "notes__notesEcho", json!({})).await;
        assert_ne!(r["isError"], true, "no consent asked after a rotation: {r}");
    }
    assert_ne!(
        sealed(&s.state_file()),
        before,
        "sealed again under the current key"
    );
}

/// A client whose connections leave from `source` (any 127/8 address reaches loopback).
fn client_from(source: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(source.parse::<IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The statuses of `n` callbacks naming no consent, sent by `client` to `base` with `headers`.
async fn flood(
    client: &reqwest::Client,
    base: &str,
    n: usize,
    headers: &[(&str, &str)],
) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        let mut req = client.get(format!("{base}/oauth/callback?state=x&code=y"));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        out.push(req.send().await.unwrap().status().as_u16());
    }
    out
}

/// The server's metrics, read with the operator's token.
async fn metrics(base: &str) -> String {
    let res = reqwest::Client::new()
        .get(format!("{base}/metrics"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_lock_others_out_of_the_consent_pages() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let cfg = config(&s, &up, None);
    let _srv = s
        .serve(&cfg, None, &["--auth-token-env", TOKEN_ENV], &[])
        .await;
    let alice = s.token("alice").await;
    let link = link_for(&s, &alice, "notes__notesEcho").await;

    // A script on 127.0.0.2 loops on the callback: it is limited...
    let statuses = flood(&client_from("127.0.0.2"), &s.base, 80, &[]).await;
    assert!(
        statuses.contains(&429),
        "80 callbacks at once were all served"
    );
    // ...and alice, on 127.0.0.3, still opens her link and comes back from the provider.
    let other = client_from("127.0.0.3");
    let res = other.get(&link).send().await.unwrap();
    assert_eq!(res.status(), 303, "alice locked out of her consent link");
    let res = other
        .get(format!("{}/oauth/callback?state=x&code=y", s.base))
        .send()
        .await
        .unwrap();
    assert_ne!(res.status(), 429, "alice locked out of the callback");
    let m = metrics(&s.base).await;
    assert!(
        m.contains("shortlist_consent_pages_limited_total{scope=\"client\"}"),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_states_leave_no_audit_row_and_are_counted() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let cfg = config(&s, &up, None);
    let _srv = s
        .serve(&cfg, None, &["--auth-token-env", TOKEN_ENV], &[])
        .await;
    for i in 0..5 {
        let res = reqwest::get(format!(
            "{}/oauth/callback?state=made-up-{i}&code=y",
            s.base
        ))
        .await
        .unwrap();
        assert_eq!(res.status(), 403);
    }
    let rows = audit_rows(&s.state_file());
    assert!(
        rows.iter().all(|r| r.0 != "consent_refused"),
        "outsiders wrote the audit log: {rows:?}"
    );
    let m = metrics(&s.base).await;
    assert!(
        m.contains("shortlist_oauth_callbacks_total{result=\"unknown_state\"} 5"),
        "{m}"
    );

    // A callback for a consent that is pending, from another browser, is still audited.
    let alice = s.token("alice").await;
    let link = link_for(&s, &alice, "notes__notesEcho").await;
    let state = link.split("state=").nth(1).unwrap();
    let res = reqwest::get(format!("{}/oauth/callback?state={state}&code=y", s.base))
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let rows = audit_rows(&s.state_file());
    assert!(
        rows.iter()
            .any(|r| r.0 == "consent_refused" && r.2 == "notes"),
        "{rows:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_balancer_each_forwarded_client_has_its_own_limit() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    let cfg = config(&s, &up, None);
    // HAProxy reaches the server from 127.0.0.1 and appends the client to X-Forwarded-For.
    let _srv = s
        .serve(&cfg, None, &["--trusted-proxy", "127.0.0.1/32"], &[])
        .await;
    let (lb, stats) = (oidc::free_port(), oidc::free_port());
    let _proxy = haproxy::Haproxy::start(
        &format!(
            "defaults\n    mode http\n    timeout connect 2s\n    timeout client 30s\n    \
             timeout server 30s\n    option forwardfor\n\n\
             frontend consent\n    bind 127.0.0.1:{lb}\n    default_backend shortlist\n\n\
             backend shortlist\n    server s1 127.0.0.1:{}\n\n\
             listen stats\n    bind 127.0.0.1:{stats}\n    stats enable\n    stats uri /stats\n",
            s.port
        ),
        stats,
    )
    .await;
    let lb = format!("http://127.0.0.1:{lb}");

    // One client behind the balancer is limited; another one is not.
    let statuses = flood(&client_from("127.0.0.2"), &lb, 60, &[]).await;
    assert!(statuses.contains(&429), "60 callbacks were all served");
    let others = flood(&client_from("127.0.0.3"), &lb, 5, &[]).await;
    assert!(
        !others.contains(&429),
        "another client behind the balancer was limited: {others:?}"
    );
    // A client that writes its own X-Forwarded-For is still itself: the balancer's hop,
    // the right-most one, counts.
    let spoofed = flood(
        &client_from("127.0.0.2"),
        &lb,
        1,
        &[("x-forwarded-for", "203.0.113.9")],
    )
    .await;
    assert_eq!(
        spoofed,
        [429],
        "a client escaped its limit with a forwarded header"
    );

    // Straight to the server from an address that is no trusted balancer: the header
    // counts for nothing.
    let direct = client_from("127.0.0.5");
    let statuses = flood(&direct, &s.base, 60, &[("x-forwarded-for", "203.0.113.10")]).await;
    assert!(statuses.contains(&429));
    let again = flood(&direct, &s.base, 1, &[("x-forwarded-for", "203.0.113.11")]).await;
    assert_eq!(again, [429], "an untrusted peer chose its own address");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_names_only_an_api_the_person_sees() {
    let up = upstream::start().await;
    let s = Setup::new(&[]).await;
    // `memo` is for the `eng` group (alice), not for bob.
    let cfg = s.config(&format!(
        "{}{}{}",
        Setup::api(
            Some("notes"),
            &echo_spec(s.dir.path(), "notesEcho"),
            &up.base_url(),
            &format!("allow_private = true\n{}", s.notes_auth(""))
        ),
        Setup::api(
            Some("memo"),
            &echo_spec(s.dir.path(), "memoEcho"),
            &up.base_url(),
            &format!(
                "allow_private = true\nvisible_to = {{ groups = [\"eng\"] }}\n{}",
                s.notes_auth("")
            )
        ),
        s.auth("")
    ));
    let _srv = s.serve(&cfg, None, &[], &[]).await;
    let (alice, bob) = (s.token("alice").await, s.token("bob").await);
    let withdraw = |token: String, api: &str| {
        let url = format!("{}/oauth/connections/{api}", s.base);
        async move {
            let res = reqwest::Client::new()
                .delete(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.text().await.unwrap())
        }
    };
    for api in ["no-such-api", "memo"] {
        let (status, body) = withdraw(bob.clone(), api).await;
        assert_eq!(status, 404, "{api}: {body}");
        assert!(!body.contains("memo"), "a hidden API named: {body}");
    }
    assert!(
        audit_rows(&s.state_file())
            .iter()
            .all(|r| r.0 != "withdrawn"),
        "{:?}",
        audit_rows(&s.state_file())
    );
    assert_eq!(withdraw(bob.clone(), "notes").await.0, 200);
    assert_eq!(withdraw(alice.clone(), "memo").await.0, 200);
    let withdrawn: Vec<_> = audit_rows(&s.state_file())
        .into_iter()
        .filter(|r| r.0 == "withdrawn")
        .map(|r| (r.1, r.2))
        .collect();
    assert_eq!(
        withdrawn,
        [
            ("bob".into(), "notes".into()),
            ("alice".into(), "memo".into())
        ]
    );
}
