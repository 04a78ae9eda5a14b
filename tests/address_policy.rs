//! Link-local and cloud metadata addresses are refused unless the API's config allows
//! them: as IP literals in a spec's servers or a base URL, as names resolving to them, and
//! as redirect targets. Loopback stays callable, as before.

use axum::response::Redirect;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};
use shortlist::catalog::{Catalog, CatalogConfig};
use shortlist::invoke::{CallOutcome, Invoker};
use std::collections::HashMap;
use std::net::IpAddr;

const SPEC: &str = r#"{"openapi": "3.0.0", "info": {"title": "meta", "version": "1"},
  "servers": [{"url": "SERVER"}],
  "paths": {"/latest/meta-data": {"get": {"operationId": "metadata",
    "responses": {"200": {"description": "ok"}}}}}}"#;

/// A catalog of one API whose spec declares `server`, with `extra` config keys.
fn catalog(dir: &std::path::Path, server: &str, extra: Value) -> Catalog {
    let spec = dir.join("meta.json");
    std::fs::write(&spec, SPEC.replace("SERVER", server)).expect("write spec");
    let mut api = json!({"id": "meta", "spec": spec, "timeout_secs": 2});
    for (k, v) in extra.as_object().into_iter().flatten() {
        api[k] = v.clone();
    }
    let c = Catalog::load(&CatalogConfig {
        apis: vec![serde_json::from_value(api).expect("api config")],
        ..Default::default()
    });
    assert_eq!(c.errors().count(), 0, "{:?}", c.problems);
    c
}

fn invoker() -> Invoker {
    let fixed: HashMap<String, Vec<IpAddr>> = [
        (
            "metadata.test".to_string(),
            vec!["169.254.169.254".parse().unwrap()],
        ),
        (
            "linklocal.test".to_string(),
            vec!["fe80::1".parse().unwrap()],
        ),
        (
            "loopback.test".to_string(),
            vec!["127.0.0.1".parse().unwrap()],
        ),
    ]
    .into();
    Invoker::new()
        .expect("client")
        .with_fixed_addresses(fixed)
        .expect("client")
}

async fn call(c: &Catalog) -> CallOutcome {
    invoker()
        .call(&c.endpoints[0], c.api_config("meta"), &Map::new())
        .await
}

/// A local server answering `/latest/meta-data` with 200, and `/go` with a redirect to
/// the cloud metadata service.
async fn local() -> (u16, tokio::task::JoinHandle<()>) {
    let app = Router::new()
        .route("/latest/meta-data", get(|| async { "local answer" }))
        .route(
            "/go/latest/meta-data",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, task)
}

fn assert_refused(out: &CallOutcome, ip: &str) {
    assert!(out.is_error, "{out:?}");
    assert!(
        out.text.contains(&format!("refusing to connect to {ip}"))
            && out.text.contains("allow_link_local = true"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn metadata_and_link_local_literals_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    for (server, ip) in [
        ("http://169.254.169.254", "169.254.169.254"),
        ("http://169.254.170.2", "169.254.170.2"),
        ("http://[fe80::1]:8080", "fe80::1"),
        ("http://[::ffff:169.254.169.254]", "::ffff:169.254.169.254"),
        ("http://100.100.100.200", "100.100.100.200"),
    ] {
        let out = call(&catalog(dir.path(), server, json!({}))).await;
        assert_refused(&out, ip);
        assert!(out.status.is_none(), "{out:?}");
    }
}

#[tokio::test]
async fn names_resolving_to_refused_addresses_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = call(&catalog(dir.path(), "http://metadata.test", json!({}))).await;
    assert_refused(&out, "169.254.169.254 (which metadata.test resolves to)");
    let out = call(&catalog(dir.path(), "http://linklocal.test:81", json!({}))).await;
    assert_refused(&out, "fe80::1");
}

#[tokio::test]
async fn a_base_url_override_is_checked_too() {
    let dir = tempfile::tempdir().expect("tmp");
    let c = catalog(
        dir.path(),
        "http://127.0.0.1:1",
        json!({"base_url": "http://169.254.169.254"}),
    );
    assert_refused(&call(&c).await, "169.254.169.254");
}

#[tokio::test]
async fn redirects_to_metadata_are_refused() {
    let (port, _task) = local().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = catalog(
        dir.path(),
        &format!("http://127.0.0.1:{port}/go"),
        json!({}),
    );
    let out = call(&c).await;
    assert_refused(&out, "169.254.169.254");
}

#[tokio::test]
async fn loopback_is_called_as_before() {
    let (port, _task) = local().await;
    let dir = tempfile::tempdir().expect("tmp");
    for host in ["127.0.0.1", "loopback.test"] {
        let c = catalog(dir.path(), &format!("http://{host}:{port}"), json!({}));
        let out = call(&c).await;
        assert!(!out.is_error, "{host}: {out:?}");
        assert_eq!(out.text, "local answer");
    }
}

#[tokio::test]
async fn allow_link_local_lets_the_call_through() {
    let dir = tempfile::tempdir().expect("tmp");
    for server in ["http://metadata.test", "http://169.254.169.254"] {
        let c = catalog(dir.path(), server, json!({"allow_link_local": true}));
        let out = call(&c).await;
        // Nothing listens there in a test environment: the call fails, but by trying.
        assert!(out.is_error, "{out:?}");
        assert!(!out.text.contains("refusing to connect"), "{}", out.text);
        assert!(
            out.text.contains("169.254.169.254") || out.text.contains("metadata.test"),
            "{}",
            out.text
        );
    }
}
