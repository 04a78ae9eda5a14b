//! Secrets never come back, whatever spelling the upstream echoes them in.
//!
//! A real HTTP upstream on 127.0.0.1 echoes the credential it received inside error and
//! success bodies, encoded the way real server stacks encode JSON: PHP's `json_encode`
//! (slashes as `\/`, non-ASCII as `\uXXXX`), PHP with `JSON_HEX_*` flags, Go's
//! `encoding/json` (`<`, `>`, `&` as `\u003c`...), JSON inside a JSON string, a form
//! echo (percent-encoding, `+` for spaces) and the raw `Authorization: Basic` header.
//! Every outcome the model could see is checked, and so is `describe_tool` for a base URL
//! carrying user info.

use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Map, Value};
use shortlist::catalog::{Catalog, CatalogConfig};
use shortlist::invoke::{CallOutcome, Invoker};
use std::collections::HashMap;

/// A token with every character class an encoder treats specially: `/` (PHP), `+` and
/// `=` (base64, forms), `&` and `<` (Go, PHP's HEX flags), a space and a non-ASCII letter.
const TOKEN: &str = "sekrit/123+456=&<x> é-tail";
const PASSWORD: &str = "open/sesame+42";

/// PHP's `json_encode` with default flags: `/` as `\/`, non-ASCII as lower-case `\uXXXX`.
fn php_json(v: &Value) -> String {
    let ascii = serde_json::to_string(v).expect("json");
    let mut out = String::new();
    for c in ascii.chars() {
        match c {
            '/' => out.push_str("\\/"),
            c if !c.is_ascii() => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units).iter() {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// PHP with `JSON_HEX_TAG | JSON_HEX_AMP | JSON_HEX_APOS | JSON_HEX_QUOT`: upper-case hex.
fn php_hex_json(v: &Value) -> String {
    php_json(v)
        .replace('<', "\\u003C")
        .replace('>', "\\u003E")
        .replace('&', "\\u0026")
        .replace('\'', "\\u0027")
}

/// Go's `encoding/json`: `<`, `>`, `&` escaped (HTML safety), slashes left alone.
fn go_json(v: &Value) -> String {
    serde_json::to_string(v)
        .expect("json")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The upstream: `/leak/{style}` answers 500 (or 200 with `?ok=1`) with a body that
/// repeats the request's credential (bearer token, or the whole Basic header) in `style`.
async fn upstream() -> (String, tokio::task::JoinHandle<()>) {
    async fn leak(
        Path(style): Path<String>,
        Query(q): Query<HashMap<String, String>>,
        headers: HeaderMap,
    ) -> axum::response::Response {
        let auth = headers
            .get("authorization")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let secret = auth.strip_prefix("Bearer ").unwrap_or(&auth).to_string();
        let doc = json!({"error": "token rejected", "token": secret});
        let (ct, body) = match style.as_str() {
            "php" => ("application/json", php_json(&doc)),
            "php-hex" => ("application/json", php_hex_json(&doc)),
            "go" => ("application/json", go_json(&doc)),
            "nested" => (
                "application/json",
                php_json(&json!({"log": php_json(&doc)})),
            ),
            "form" => (
                "application/x-www-form-urlencoded",
                url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("token", &secret)
                    .finish(),
            ),
            "percent" => (
                "text/plain",
                format!(
                    "bad token {}",
                    percent_encoding::utf8_percent_encode(
                        &secret,
                        percent_encoding::NON_ALPHANUMERIC
                    )
                ),
            ),
            "html" => (
                "text/html",
                format!(
                    "<html><body><p>Bad token {}</p></body></html>",
                    secret
                        .chars()
                        .map(|c| format!("&#{};", c as u32))
                        .collect::<String>()
                ),
            ),
            _ => ("text/plain", format!("Authorization: {auth}")),
        };
        let status = if q.contains_key("ok") {
            StatusCode::OK
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        (status, [("content-type", ct)], body).into_response()
    }
    let app = Router::new().route("/leak/{style}", get(leak));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), task)
}

const SPEC: &str = r#"{"openapi": "3.0.0", "info": {"title": "leaky", "version": "1"},
  "paths": {"/leak/{style}": {"get": {"operationId": "leak",
    "parameters": [{"name": "style", "in": "path", "required": true, "schema": {"type": "string"}},
                   {"name": "ok", "in": "query", "schema": {"type": "string"}}],
    "responses": {"200": {"description": "ok"}}}}}}"#;

fn catalog(dir: &std::path::Path, base_url: &str, auth: Value) -> Catalog {
    let spec = dir.join("leaky.json");
    std::fs::write(&spec, SPEC).expect("write spec");
    let api = serde_json::from_value(json!({
        "id": "leaky", "spec": spec, "base_url": base_url, "auth": auth,
    }))
    .expect("api config");
    let c = Catalog::load(&CatalogConfig {
        apis: vec![api],
        ..Default::default()
    });
    assert_eq!(c.errors().count(), 0, "{:?}", c.problems);
    c
}

fn invoker() -> Invoker {
    Invoker::new().expect("client").with_env(|n| match n {
        "LEAK_TOKEN" => Some(TOKEN.into()),
        "LEAK_USER" => Some("aladdin".into()),
        "LEAK_PASS" => Some(PASSWORD.into()),
        _ => None,
    })
}

async fn call(c: &Catalog, args: Value) -> CallOutcome {
    let ep = &c.endpoints[0];
    let args: Map<String, Value> = args.as_object().cloned().expect("object");
    invoker().call(ep, c.api_config("leaky"), &args).await
}

/// Everything of an outcome the model sees, as one text.
fn seen(o: &CallOutcome) -> String {
    format!(
        "{}\n{}",
        o.text,
        o.structured
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default()
    )
}

/// Pieces of the token that must not survive in any text: its distinctive halves, raw
/// and as the encoders spell them.
fn leaks(text: &str) -> Vec<&'static str> {
    [
        "sekrit",
        "123+456",
        "123%2B456",
        "123+456=",
        "tail",
        "open\\/sesame",
        "open/sesame",
        "sesame+42",
    ]
    .into_iter()
    .filter(|p| text.contains(p))
    .collect()
}

#[tokio::test]
async fn bearer_token_is_masked_in_every_encoding_of_an_error_body() {
    let (base, _task) = upstream().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = catalog(
        dir.path(),
        &base,
        json!({"kind": "bearer", "token_env": "LEAK_TOKEN"}),
    );
    for style in [
        "php", "php-hex", "go", "nested", "form", "percent", "html", "raw",
    ] {
        for ok in [false, true] {
            let mut args = json!({"style": style});
            if ok {
                args["ok"] = json!("1");
            }
            let out = call(&c, args).await;
            assert_eq!(out.is_error, !ok, "{style}: {out:?}");
            let text = seen(&out);
            assert!(
                leaks(&text).is_empty(),
                "{style} (ok={ok}) leaked {:?}: {text}",
                leaks(&text)
            );
            // (HTML is reduced to its text, which drops numeric entities altogether.)
            assert!(
                text.contains("[REDACTED]") || style == "html",
                "{style}: {text}"
            );
        }
    }
}

#[tokio::test]
async fn basic_auth_is_masked_raw_and_in_base64_escaped_by_php() {
    let (base, _task) = upstream().await;
    let dir = tempfile::tempdir().expect("tmp");
    let c = catalog(
        dir.path(),
        &base,
        json!({"kind": "basic", "username_env": "LEAK_USER", "password_env": "LEAK_PASS"}),
    );
    // base64("aladdin:open/sesame+42") holds a `/`, which PHP escapes.
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("aladdin:{PASSWORD}"));
    for style in ["raw", "php", "nested", "percent"] {
        let out = call(&c, json!({"style": style})).await;
        let text = seen(&out);
        let escaped = token.replace('/', "\\/");
        assert!(
            !text.contains(&token) && !text.contains(&escaped) && !text.contains(&token[4..16]),
            "{style}: {text}"
        );
        assert!(leaks(&text).is_empty(), "{style}: {text}");
    }
}

#[tokio::test]
async fn base_url_user_info_is_used_but_never_shown() {
    let (base, _task) = upstream().await;
    let dir = tempfile::tempdir().expect("tmp");
    let with_user = base.replacen("http://", "http://deploy:pw-9f8e7d%2Fx@", 1);
    let c = catalog(dir.path(), &with_user, Value::Null);
    // The endpoint (and so the index and every tool listing) carries no credentials.
    let ep = &c.endpoints[0];
    assert_eq!(ep.servers, std::slice::from_ref(&base));
    // describe_tool shows the base URL without them, even for a spec-declared server.
    let mut declared = ep.clone();
    declared.servers = vec![with_user.clone()];
    let described =
        shortlist::server::discovery::describe(&declared, c.api_config("leaky"), false).to_string();
    assert!(
        !described.contains("pw-9f8e7d") && !described.contains("deploy"),
        "{described}"
    );
    assert!(described.contains(&base), "{described}");
    // The call still authenticates with them (as basic auth), and the echo is masked.
    let out = call(&c, json!({"style": "raw"})).await;
    let text = seen(&out);
    assert!(text.contains("Authorization: Basic [REDACTED]"), "{text}");
    assert!(!text.contains("pw-9f8e7d"), "{text}");
    use base64::Engine;
    let sent = base64::engine::general_purpose::STANDARD.encode("deploy:pw-9f8e7d/x");
    assert!(!text.contains(&sent), "{text}");
}
