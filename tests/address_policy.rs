//! Link-local and cloud metadata addresses are refused unless the API's config allows
//! them: as IP literals in a spec's servers or a base URL, as names resolving to them, and
//! as redirect targets. Loopback stays callable, as before. Through a configured proxy,
//! which resolves names itself, every address a name has here is checked first.

mod support;

use axum::response::Redirect;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};
use shortlist::catalog::config::UpstreamConfig;
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

/// An invoker that hands calls to the proxy at `proxy`, with these fixed answers.
fn proxied(proxy: &str, fixed: &[(&str, &[&str])]) -> Result<Invoker, String> {
    let fixed: HashMap<String, Vec<IpAddr>> = fixed
        .iter()
        .map(|(name, ips)| {
            let ips = ips.iter().map(|ip| ip.parse().expect("ip")).collect();
            (name.to_string(), ips)
        })
        .collect();
    Invoker::new()
        .expect("client")
        .with_fixed_addresses(fixed)
        .expect("client")
        .with_upstream(&UpstreamConfig {
            proxy: Some(proxy.to_string()),
            ..Default::default()
        })
        .map_err(|e| e.to_string())
}

/// A proxy resolves the names it is given: a name with one refused address among good
/// ones would be the proxy's to pick, so one refused address refuses the call, and
/// nothing reaches the proxy.
#[tokio::test]
async fn through_a_proxy_every_address_of_a_name_is_checked_first() {
    let proxy = support::proxy::Proxy::start(r#"{"via": "proxy"}"#, false).await;
    let inv = proxied(
        &proxy.url(),
        &[
            ("mixed.test", &["93.184.216.34", "169.254.169.254"]),
            ("public.test", &["93.184.216.34"]),
            ("intranet.test", &["93.184.216.34", "10.1.2.3"]),
        ],
    )
    .expect("proxied invoker");
    let dir = tempfile::tempdir().expect("tmp");
    let run = |inv: Invoker, server: &'static str| {
        let c = catalog(dir.path(), server, json!({}));
        async move {
            inv.call(&c.endpoints[0], c.api_config("meta"), &Map::new())
                .await
        }
    };
    let out = run(inv.clone(), "http://mixed.test").await;
    assert_refused(&out, "169.254.169.254 (which mixed.test resolves to)");
    assert!(out.status.is_none(), "{out:?}");
    // A team server refuses a private address among a name's addresses too.
    let out = run(inv.clone().refusing_private(), "http://intranet.test").await;
    assert!(
        out.is_error && out.text.contains("10.1.2.3") && out.text.contains("allow_private"),
        "{out:?}"
    );
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());

    // Checked names go to the proxy unresolved, and its answer is the result.
    let out = run(inv.clone(), "http://public.test").await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.text, r#"{"via":"proxy"}"#);
    let out = run(inv, "http://intranet.test").await;
    assert!(!out.is_error, "{out:?}");
    let lines: Vec<String> = proxy.seen().into_iter().map(|s| s.line).collect();
    assert_eq!(
        lines,
        [
            "GET http://public.test/latest/meta-data HTTP/1.1",
            "GET http://intranet.test/latest/meta-data HTTP/1.1",
        ]
    );
}

/// A proxy on a cloud metadata address would hand every call to the metadata service:
/// refused when configured as a literal, and when its name resolves to one.
#[tokio::test]
async fn a_proxy_on_a_metadata_address_is_refused() {
    for url in [
        "http://169.254.169.254:3128",
        "http://[fd00:ec2::254]:3128",
        "http://100.100.100.200",
        "http://[::ffff:169.254.169.254]:8080",
    ] {
        let err = proxied(url, &[])
            .err()
            .unwrap_or_else(|| panic!("{url} accepted"));
        assert!(err.contains("metadata") && err.contains("proxy"), "{err}");
    }
    let inv = proxied(
        "http://proxy.test:3128",
        &[
            ("proxy.test", &["169.254.169.254"]),
            ("public.test", &["93.184.216.34"]),
        ],
    )
    .expect("a proxy named by a host");
    let dir = tempfile::tempdir().expect("tmp");
    let c = catalog(dir.path(), "http://public.test", json!({}));
    let out = inv
        .call(&c.endpoints[0], c.api_config("meta"), &Map::new())
        .await;
    assert!(out.is_error && out.status.is_none(), "{out:?}");
    assert!(
        out.text.contains(
            "refusing to connect to the proxy at 169.254.169.254 (which proxy.test resolves to)"
        ),
        "{}",
        out.text
    );
}
