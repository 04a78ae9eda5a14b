//! Token exchanges under load, through the real invoker against a token endpoint and an
//! upstream on 127.0.0.1:
//!
//! - 10,000 exchanges (each call's token expires at once, as a provider's short-lived
//!   tokens do) leave the logs' list of secrets and the process's memory flat: a token is
//!   masked while its call runs and forgotten once it is no longer good;
//! - one person's exchange that hangs at the provider holds up nobody else's.

mod support;

use futures::StreamExt;
use shortlist::catalog::{ApiConfig, AuthConfig, Catalog};
use shortlist::credentials::Person;
use shortlist::invoke::{CallFor, Called, Invoker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::upstream;

/// A token endpoint answering every exchange with a fresh token that lives `ttl` seconds
/// (30: used for its one call and no longer, as the 30 s renewal margin leaves nothing),
/// slowly for the subject token `slow`. The number of exchanges it answered.
async fn token_endpoint(ttl: u64) -> (String, Arc<AtomicUsize>) {
    let served = Arc::new(AtomicUsize::new(0));
    let n = Arc::clone(&served);
    let app = axum::Router::new().route(
        "/token",
        axum::routing::post(move |body: String| {
            let n = Arc::clone(&n);
            async move {
                if body.contains("subject_token=slow") {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                }
                n.fetch_add(1, Ordering::SeqCst);
                let token = format!(
                    "{}{}",
                    uuid::Uuid::new_v4().simple(),
                    uuid::Uuid::new_v4().simple()
                );
                axum::Json(serde_json::json!({
                    "access_token": token, "token_type": "Bearer", "expires_in": ttl,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"
                }))
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    (url, served)
}

/// The fixture's `echo` endpoint and its API entry, exchanged at `token_url`.
fn api(token_url: &str, base: &str) -> (Catalog, ApiConfig) {
    let spec = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream_tmdb.json");
    let catalog = Catalog::load_paths(&[spec]);
    let mut cfg = catalog.config.apis[0].clone();
    cfg.base_url = Some(base.to_string());
    cfg.auth = Some(AuthConfig::TokenExchange {
        token_url: Some(token_url.to_string()),
        client_id: "shortlist".into(),
        client_secret_env: "EXCHANGE_SECRET".into(),
        audience: "https://echo.example".into(),
        scope: None,
        trust_token_url: true,
    });
    (catalog, cfg)
}

fn person(i: usize) -> Person {
    Person {
        sub: format!("person-{i}"),
        subject_token: format!("subject-of-{i}"),
        expires_at: u64::MAX / 2,
        client_id: Some("ide".into()),
        scopes: ["mcp".to_string()].into(),
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_exchanges_leave_memory_flat() {
    let up = upstream::start().await;
    let (token_url, served) = token_endpoint(30).await;
    let (catalog, cfg) = api(&token_url, &up.base_url());
    let ep = catalog.endpoint("echo").expect("the echo endpoint").clone();
    let invoker = Invoker::new()
        .unwrap()
        .with_env(|v| (v == "EXCHANGE_SECRET").then(|| "exchange-secret-1".to_string()));
    let run = |from: usize, to: usize| {
        let (invoker, ep, cfg) = (invoker.clone(), ep.clone(), cfg.clone());
        async move {
            futures::stream::iter(from..to)
                .map(|i| {
                    let (invoker, ep, cfg) = (invoker.clone(), ep.clone(), cfg.clone());
                    async move {
                        let who = person(i % 100);
                        let args = serde_json::Map::new();
                        let got = invoker
                            .call_for(
                                &ep,
                                Some(&cfg),
                                &args,
                                CallFor {
                                    person: Some(&who),
                                    ..Default::default()
                                },
                            )
                            .await;
                        match got {
                            Called::Done(o) => assert!(!o.is_error, "{}", o.text),
                            Called::Consent { .. } => panic!("no consent for an exchange"),
                        }
                    }
                })
                .buffer_unordered(8)
                .collect::<Vec<()>>()
                .await;
        }
    };
    run(0, 1_000).await;
    let (secrets_at_1k, rss_at_1k) = (shortlist::invoke::redact::log_secret_count(), rss_kib());
    let first = up.received()[0]
        .header("authorization")
        .unwrap()
        .trim_start_matches("Bearer ")
        .to_string();
    let mut most = 0;
    let mut rss_at_5k = 0;
    for k in 1..10 {
        run(k * 1_000, (k + 1) * 1_000).await;
        most = most.max(shortlist::invoke::redact::log_secret_count());
        if k == 4 {
            rss_at_5k = rss_kib();
        }
    }
    let (secrets, rss) = (shortlist::invoke::redact::log_secret_count(), rss_kib());
    assert_eq!(
        served.load(Ordering::SeqCst),
        10_000,
        "one exchange per call"
    );
    println!(
        "10,000 exchanges: secrets on the logs' list {secrets_at_1k} after 1,000, at most {most}, \
         {secrets} after; RSS {rss_at_1k} KiB after 1,000, {rss_at_5k} KiB after 5,000, \
         {rss} KiB after 10,000"
    );
    // Each token has 7 forms; at most 8 calls of this test run at once, and the other test
    // of this file (same process) holds two tokens of its own at most.
    let bound = secrets_at_1k + 2 * 8 * 7;
    assert!(
        most <= bound,
        "the list grows: {most} after {secrets_at_1k}"
    );
    assert!(secrets <= bound, "{secrets} after {secrets_at_1k}");
    assert!(
        rss < rss_at_5k + 8 * 1024,
        "memory grew from {rss_at_5k} KiB to {rss} KiB over the last 5,000 exchanges"
    );
    assert_eq!(
        shortlist::invoke::redact::redact_for_logs(&first),
        first,
        "an expired token of an ended call is forgotten"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_exchange_holds_up_nobody_else() {
    let up = upstream::start().await;
    let (token_url, _) = token_endpoint(300).await;
    let (catalog, cfg) = api(&token_url, &up.base_url());
    let ep = catalog.endpoint("echo").expect("the echo endpoint").clone();
    let invoker = Invoker::new()
        .unwrap()
        .with_env(|v| (v == "EXCHANGE_SECRET").then(|| "exchange-secret-1".to_string()));
    let slow = Person {
        subject_token: "slow".into(),
        ..person(1)
    };
    let quick = person(2);
    let args = serde_json::Map::new();
    let call = |who: Person| {
        let (invoker, ep, cfg, args) = (invoker.clone(), ep.clone(), cfg.clone(), args.clone());
        async move {
            let started = Instant::now();
            let _ = invoker
                .call_for(
                    &ep,
                    Some(&cfg),
                    &args,
                    CallFor {
                        person: Some(&who),
                        ..Default::default()
                    },
                )
                .await;
            started.elapsed()
        }
    };
    let slow_call = tokio::spawn(call(slow));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let quick_took = call(quick).await;
    assert!(
        quick_took < Duration::from_millis(1500),
        "another person's slow exchange held this one for {quick_took:?}"
    );
    assert!(slow_call.await.unwrap() >= Duration::from_secs(3));
}

/// A token exchanged from a person's access token is for what that token allowed: the
/// OAuth client it was issued to and its scopes. The same person calling through another
/// client, or with other scopes, gets an exchange of their own, never the first client's
/// token; the same client with the same scopes reuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_and_scope_set_gets_its_own_exchange() {
    let up = upstream::start().await;
    let (token_url, served) = token_endpoint(300).await;
    let (catalog, cfg) = api(&token_url, &up.base_url());
    let ep = catalog.endpoint("echo").expect("the echo endpoint").clone();
    let invoker = Invoker::new()
        .unwrap()
        .with_env(|v| (v == "EXCHANGE_SECRET").then(|| "exchange-secret-1".to_string()));
    let args = serde_json::Map::new();
    let call = |who: Person| {
        let (invoker, ep, cfg, args) = (invoker.clone(), ep.clone(), cfg.clone(), args.clone());
        async move {
            let got = invoker
                .call_for(
                    &ep,
                    Some(&cfg),
                    &args,
                    CallFor {
                        person: Some(&who),
                        client_id: who.client_id.as_deref(),
                        ..Default::default()
                    },
                )
                .await;
            match got {
                Called::Done(o) => assert!(!o.is_error, "{}", o.text),
                Called::Consent { .. } => panic!("no consent for an exchange"),
            }
        }
    };
    let sent = || {
        up.received()
            .last()
            .and_then(|r| r.header("authorization"))
            .expect("a token sent")
            .to_string()
    };
    let ide = person(7);
    call(ide.clone()).await;
    let ide_token = sent();
    call(ide.clone()).await;
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "reused for the same client"
    );
    assert_eq!(sent(), ide_token);

    let other_client = Person {
        subject_token: "subject-of-7-through-another-app".into(),
        client_id: Some("another-app".into()),
        ..ide.clone()
    };
    call(other_client).await;
    assert_eq!(
        served.load(Ordering::SeqCst),
        2,
        "another client's call got the first client's exchanged token"
    );
    assert_ne!(sent(), ide_token);

    let more_scopes = Person {
        subject_token: "subject-of-7-with-admin".into(),
        scopes: ["mcp".to_string(), "admin".to_string()].into(),
        ..ide.clone()
    };
    call(more_scopes).await;
    assert_eq!(
        served.load(Ordering::SeqCst),
        3,
        "a token with other scopes got the first token's exchanged token"
    );
    assert_ne!(sent(), ide_token);
    call(ide).await;
    assert_eq!(served.load(Ordering::SeqCst), 3);
    assert_eq!(sent(), ide_token);
}
