//! Upstream credentials by the client credentials grant, against a real OpenID provider
//! (`oidc-provider`, tests/oidc/provider.mjs): the token is for the API's audience and is
//! accepted by a resource server that checks it, reused until invalidated, shared by
//! concurrent callers; a wrong secret and an unreachable endpoint fail readably. Token
//! exchange (RFC 8693) at the same provider: each person's MCP token becomes their own API
//! token, cached per person (and client and scopes), and a forged subject token is refused.

#[path = "support/oidc.rs"]
mod oidc;

use shortlist::credentials::{ClientCredentials, CredentialError, Person, TokenExchange};
use std::sync::Arc;

const API: &str = "http://127.0.0.1:9/billing";

/// `sub`, whose MCP access token `token` (issued to the client `sub`, as the test
/// provider's people are clients) expires at `expires_at`.
fn person(sub: &str, token: &str, expires_at: u64) -> Person {
    Person {
        sub: sub.into(),
        subject_token: token.into(),
        expires_at,
        client_id: Some(sub.into()),
        scopes: ["mcp".to_string()].into(),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_exchange_on_behalf_of_each_person() {
    let idp = oidc::Provider::start("http://127.0.0.1:9/mcp").await;
    let api = idp.api_verifier(API, &["mcp"]);
    let tx = TokenExchange::new(
        &format!("{}/token", idp.issuer),
        "shortlist-server",
        "shortlist-server-secret",
        API,
        Some("mcp"),
    )
    .unwrap();
    let (alice_mcp, bob_mcp) = (
        idp.token("alice", "mcp", None).await,
        idp.token("bob", "mcp", None).await,
    );
    let later = now() + 600;
    let alice = tx
        .token_for(&person("alice", &alice_mcp, later))
        .await
        .unwrap()
        .value;
    let bob = tx
        .token_for(&person("bob", &bob_mcp, later))
        .await
        .unwrap()
        .value;
    assert_ne!(alice, bob);
    assert_eq!(
        api.verify(&alice).await.unwrap().sub,
        "alice",
        "the API sees alice"
    );
    assert_eq!(
        api.verify(&bob).await.unwrap().sub,
        "bob",
        "the API sees bob"
    );
    assert_eq!(
        tx.token_for(&person("alice", &alice_mcp, later))
            .await
            .unwrap()
            .value,
        alice,
        "cached per person"
    );
    assert_eq!(
        tx.token_for(&person("bob", &bob_mcp, later))
            .await
            .unwrap()
            .value,
        bob
    );
    tx.invalidate(&person("alice", &alice_mcp, later)).await;
    assert_ne!(
        tx.token_for(&person("alice", &alice_mcp, later))
            .await
            .unwrap()
            .value,
        alice
    );

    // Never kept beyond the subject token's own expiry.
    let carol_mcp = idp.token("carol", "mcp", None).await;
    let c1 = tx
        .token_for(&person("carol", &carol_mcp, now() + 10))
        .await
        .unwrap()
        .value;
    assert_ne!(
        tx.token_for(&person("carol", &carol_mcp, now() + 10))
            .await
            .unwrap()
            .value,
        c1
    );

    // A subject token the provider did not sign is refused.
    let forged = idp
        .sign(
            serde_json::json!({"sub": "alice", "aud": "x", "exp": now() + 600}),
            true,
        )
        .await;
    let e = tx
        .token_for(&person("mallory", &forged, later))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("invalid_grant"), "{e}");
    assert!(!e.to_string().contains("shortlist-server-secret"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_from_a_real_provider() {
    let idp = oidc::Provider::start("http://127.0.0.1:9/mcp").await;
    let token_url = format!("{}/token", idp.issuer);
    let cc = Arc::new(
        ClientCredentials::new(&token_url, "carol", "carol-secret", Some("mcp"), Some(API))
            .unwrap(),
    );

    // The token is the API's: a resource server with that audience accepts it as carol's.
    let t1 = cc.token().await.unwrap().value;
    let api = idp.api_verifier(API, &["mcp"]);
    assert_eq!(api.verify(&t1).await.unwrap().sub, "carol");

    // Reused (the provider mints a new jti per grant, so equal means cached), shared by
    // concurrent callers, fetched again once invalidated.
    assert_eq!(cc.token().await.unwrap().value, t1);
    cc.invalidate().await;
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let cc = Arc::clone(&cc);
            tokio::spawn(async move { cc.token().await.unwrap().value })
        })
        .collect();
    let mut got = Vec::new();
    for c in calls {
        got.push(c.await.unwrap());
    }
    assert!(
        got.iter().all(|t| *t == got[0]),
        "one fetch for concurrent callers"
    );
    assert_ne!(got[0], t1, "a fresh token after invalidate");

    // A wrong secret: refused, with the provider's reason and without the secret.
    let bad = ClientCredentials::new(&token_url, "carol", "not-carols-secret", None, None).unwrap();
    let e = bad.token().await.unwrap_err();
    assert!(matches!(e, CredentialError::Refused { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("invalid_client") && msg.contains("'carol'"),
        "{msg}"
    );
    assert!(!msg.contains("not-carols-secret"), "{msg}");

    // Nobody there.
    let gone =
        ClientCredentials::new("http://127.0.0.1:9/token", "carol", "s", None, None).unwrap();
    let e = gone.token().await.unwrap_err();
    assert!(matches!(e, CredentialError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("127.0.0.1:9/token"), "{e}");
}
