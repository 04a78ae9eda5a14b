//! Invoking endpoints against a real HTTP upstream (tests/support/upstream.rs), asserting
//! what actually reached it: method, raw path and query, headers, credentials, body. And
//! what never should: secrets in outcome text, requests to other hosts or paths.

mod support;

use serde_json::{json, Map, Value};
use shortlist::catalog::{ApiConfig, Catalog, CatalogConfig, Endpoint};
use shortlist::invoke::{input_schema, CallOutcome, Invoker};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::upstream::{self, HUGE_BYTES};

const TOKEN: &str = "tok-bearer-5f2e9c";
const API_KEY: &str = "key-q-8d71ab3";

/// The fixture catalog pointed at `base_url`, with this API config.
fn catalog(base_url: &str, auth: Value, read_only: bool, timeout_secs: Option<u64>) -> Catalog {
    let spec = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream_tmdb.json");
    // Built through serde, like a config file, so fields added later with defaults
    // need no change here.
    let api: ApiConfig = serde_json::from_value(json!({
        "id": "tmdb",
        "spec": spec,
        "base_url": base_url,
        "read_only": read_only,
        "auth": auth,
        "timeout_secs": timeout_secs,
    }))
    .expect("api config");
    let cfg = CatalogConfig {
        apis: vec![api],
        ..Default::default()
    };
    let c = Catalog::load(&cfg);
    assert_eq!(c.errors().count(), 0, "fixture must load: {:?}", c.problems);
    c
}

/// `auth` entries as a config file writes them.
fn bearer() -> Value {
    json!({"kind": "bearer", "token_env": "TEST_TMDB_TOKEN"})
}

fn query_key() -> Value {
    json!({"kind": "api_key", "name": "api_key", "in": "query", "value_env": "TEST_TMDB_KEY"})
}

/// An invoker whose "environment" holds the test secrets.
fn invoker() -> Invoker {
    Invoker::new()
        .expect("http client")
        .with_env(|name| match name {
            "TEST_TMDB_TOKEN" => Some(TOKEN.to_string()),
            "TEST_TMDB_KEY" => Some(API_KEY.to_string()),
            "TEST_USER" => Some("aladdin".to_string()),
            "TEST_PASS" => Some("open-sesame-42".to_string()),
            _ => None,
        })
}

fn endpoint<'a>(c: &'a Catalog, key: &str) -> &'a Endpoint {
    c.endpoints
        .iter()
        .find(|e| e.key() == key)
        .unwrap_or_else(|| panic!("no endpoint {key}"))
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("arguments object")
}

async fn call(c: &Catalog, key: &str, a: Value) -> CallOutcome {
    invoker()
        .call(endpoint(c, key), c.api_config("tmdb"), &args(a))
        .await
}

#[tokio::test]
async fn bearer_search_reaches_upstream_exactly() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), bearer(), true, None);
    let out = call(
        &c,
        "GET /search/movie",
        json!({"query": "Fight Club", "page": "2", "include_adult": false}),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.status, Some(200));
    let r = up.only();
    assert_eq!(r.method, "GET");
    assert_eq!(r.path, "/3/search/movie");
    assert_eq!(
        r.query.as_deref(),
        Some("query=Fight%20Club&page=2&include_adult=false")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(r.header("host"), Some(up.addr.to_string().as_str()));
    assert!(r
        .header("accept")
        .is_some_and(|a| a.starts_with("application/json")));
    assert!(r.body.is_empty());
    let s = out.structured.expect("structured JSON");
    assert_eq!(s["page"], 2);
    assert_eq!(s["results"][0]["title"], "Fight Club");
    assert_eq!(serde_json::from_str::<Value>(&out.text).ok(), Some(s));
    assert!(!out.text.contains(TOKEN));
}

#[tokio::test]
async fn query_api_key_is_sent_but_never_shown() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), query_key(), false, Some(1));
    // The upstream echoes the URI (with the key) in a 200 body...
    let out = call(&c, "GET /echo", json!({"q": "x"})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        up.only().query.as_deref(),
        Some(format!("q=x&api_key={API_KEY}").as_str())
    );
    assert!(
        !out.text.contains(API_KEY) && out.text.contains("[REDACTED]"),
        "{}",
        out.text
    );
    assert!(!out
        .structured
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default()
        .contains(API_KEY));
    // ...and in a 401 error body.
    let out = call(&c, "GET /account", json!({})).await;
    assert!(out.is_error && out.status == Some(401), "{out:?}");
    assert!(
        !out.text.contains(API_KEY) && out.text.contains("api_key=[REDACTED]"),
        "{}",
        out.text
    );
    // A timeout names the URL, without its query.
    let out = call(&c, "GET /slow", json!({})).await;
    assert!(
        out.is_error && !out.text.contains(API_KEY) && !out.text.contains("api_key"),
        "{}",
        out.text
    );
    // The credential is not an argument the model can see or set.
    let ep = endpoint(&c, "GET /echo");
    assert!(input_schema(ep)["properties"].get("api_key").is_none());
    let out = call(&c, "GET /echo", json!({"api_key": "other"})).await;
    assert!(
        out.is_error && out.text.contains("unknown argument 'api_key'"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn connection_errors_are_readable_and_redacted() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let c = catalog(
        &format!("http://127.0.0.1:{port}/3"),
        query_key(),
        false,
        None,
    );
    let out = call(&c, "GET /movie/top_rated", json!({})).await;
    assert!(out.is_error && out.status.is_none(), "{out:?}");
    assert!(
        out.text.starts_with(&format!("could not connect to 127.0.0.1:{port} calling GET http://127.0.0.1:{port}/3/movie/top_rated")),
        "{}",
        out.text
    );
    assert!(!out.text.contains(API_KEY));
}

#[tokio::test]
async fn basic_and_header_api_key_auth() {
    let up = upstream::start().await;
    let basic = json!({"kind": "basic", "username_env": "TEST_USER", "password_env": "TEST_PASS"});
    let c = catalog(&up.base_url(), basic, false, None);
    let out = call(&c, "GET /movie/top_rated", json!({})).await;
    assert!(!out.is_error, "{out:?}");
    // base64("aladdin:open-sesame-42")
    assert_eq!(
        up.only().header("authorization"),
        Some("Basic YWxhZGRpbjpvcGVuLXNlc2FtZS00Mg==")
    );

    let up = upstream::start().await;
    let key = json!({"kind": "api_key", "name": "X-Api-Key", "in": "header", "value_env": "TEST_TMDB_KEY"});
    let c = catalog(&up.base_url(), key, false, None);
    let out = call(&c, "GET /echo", json!({})).await;
    let r = up.only();
    assert_eq!(r.header("x-api-key"), Some(API_KEY));
    assert_eq!(r.query, None);
    assert!(!out.text.contains(API_KEY), "{}", out.text);
}

#[tokio::test]
async fn missing_credentials_name_the_variable_and_send_nothing() {
    let up = upstream::start().await;
    let c = catalog(
        &up.base_url(),
        json!({"kind": "bearer", "token_env": "TEST_UNSET_TOKEN"}),
        false,
        None,
    );
    let out = call(&c, "GET /movie/top_rated", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("environment variable TEST_UNSET_TOKEN is not set"),
        "{}",
        out.text
    );
    assert!(up.received().is_empty());
    // Without any auth config, a 401 says what to configure.
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let out = call(&c, "GET /account", json!({})).await;
    assert!(
        out.text.contains("no `auth` is configured for API 'tmdb'"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn read_only_refuses_unsafe_methods() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), bearer(), true, None);
    let out = call(&c, "POST /list", json!({"body": {"name": "x"}})).await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("refused: API 'tmdb' is configured read_only, so POST /list is not called"),
        "{}",
        out.text
    );
    let out = call(&c, "DELETE /list/{list_id}", json!({"list_id": "1"})).await;
    assert!(out.is_error && out.text.starts_with("refused"));
    assert!(up.received().is_empty(), "nothing may reach the upstream");
}

#[tokio::test]
async fn json_body_post_and_delete() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), bearer(), false, None);
    let out = call(
        &c,
        "POST /list",
        json!({"body": {"name": "Noir", "items": ["550", 278]}}),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.status, Some(201));
    let r = up.only();
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/3/list"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    // "550" was coerced to the integer the schema asks for.
    assert_eq!(r.json(), Some(json!({"name": "Noir", "items": [550, 278]})));
    assert_eq!(out.structured.expect("json")["list_id"], 8245);

    let out = call(&c, "DELETE /list/{list_id}", json!({"list_id": 8245})).await;
    assert!(!out.is_error, "{out:?}");
    let r = up.received().pop().expect("delete");
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("DELETE", "/3/list/8245")
    );
}

#[tokio::test]
async fn query_styles_headers_and_cookies_reach_upstream() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let out = call(&c,
        "GET /movie/top_rated",
        json!({"page": 3, "region": "GB", "with_genres": [28, "12"], "X-Trace-Id": "trace-1", "session_id": "s 1"}),
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    let r = up.only();
    assert_eq!(
        r.query.as_deref(),
        Some("page=3&region=GB&with_genres=28,12")
    );
    assert_eq!(r.header("x-trace-id"), Some("trace-1"));
    assert_eq!(r.header("cookie"), Some("session_id=s%201"));
}

#[tokio::test]
async fn header_line_breaks_are_refused() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let out = call(
        &c,
        "GET /movie/top_rated",
        json!({"X-Trace-Id": "a\r\nX-Evil: 1"}),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "argument 'X-Trace-Id': header values cannot contain line breaks"
    );
    assert!(up.received().is_empty());
}

#[tokio::test]
async fn path_values_never_reach_another_path() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let del = "DELETE /list/{list_id}";
    for (value, raw_path) in [
        ("../account", "/3/list/..%2Faccount"),
        (
            "../../3/movie/top_rated",
            "/3/list/..%2F..%2F3%2Fmovie%2Ftop_rated",
        ),
        ("%2e%2e", "/3/list/%252e%252e"),
        ("@evil.example", "/3/list/%40evil.example"),
        (
            "http://evil.example/x?y=1#z",
            "/3/list/http%3A%2F%2Fevil.example%2Fx%3Fy%3D1%23z",
        ),
    ] {
        let before = up.received().len();
        let out = call(&c, del, json!({ "list_id": value })).await;
        assert!(!out.is_error, "{value}: {out:?}");
        let r = up.received().pop().expect("request");
        assert_eq!(up.received().len(), before + 1);
        assert_eq!(r.path, raw_path, "{value}");
        assert_eq!(r.header("host"), Some(up.addr.to_string().as_str()));
        // The upstream routed it to the delete handler, with the value intact.
        assert_eq!(out.structured.expect("json")["list_id"], value);
    }
    let before = up.received().len();
    for value in ["..", "."] {
        let out = call(&c, del, json!({ "list_id": value })).await;
        assert!(
            out.is_error && out.text.contains("is not allowed in a URL path"),
            "{}",
            out.text
        );
    }
    assert_eq!(up.received().len(), before, "dot segments must not be sent");
}

#[tokio::test]
async fn unknown_arguments_get_suggestions_and_nothing_is_sent() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let out = call(
        &c,
        "GET /movie/{movie_id}/credits",
        json!({"movie_di": 550}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("- unknown argument 'movie_di'; did you mean 'movie_id'?"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("- missing required argument 'movie_id'"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .ends_with("expected arguments: movie_id (integer, required), language (string)"),
        "{}",
        out.text
    );
    assert!(up.received().is_empty());
}

#[tokio::test]
async fn wrong_types_are_all_listed() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let out = call(
        &c,
        "GET /search/movie",
        json!({"query": "", "page": "abc", "include_adult": "maybe", "language": "english"}),
    )
    .await;
    assert!(out.is_error);
    for want in [
        "argument 'query': must be at least 1 characters long (got 0)",
        "argument 'page': expected integer, got string \"abc\"",
        "argument 'include_adult': expected boolean, got string \"maybe\"",
        "argument 'language': \"english\" does not match the pattern ^[a-z]{2}-[A-Z]{2}$",
    ] {
        assert!(
            out.text.contains(want),
            "missing {want:?} in:\n{}",
            out.text
        );
    }
    let out = call(
        &c,
        "GET /movie/top_rated",
        json!({"region": "XX", "page": 501}),
    )
    .await;
    assert!(
        out.text
            .contains("argument 'region': must be one of \"US\", \"GB\", \"FR\" (got \"XX\")"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("argument 'page': must be at most 500 (got 501)"),
        "{}",
        out.text
    );
    assert!(up.received().is_empty());
}

#[tokio::test]
async fn timeouts_are_reported_with_method_and_url() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, Some(1));
    let t = Instant::now();
    let out = call(&c, "GET /slow", json!({})).await;
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(out.is_error && out.status.is_none());
    assert_eq!(
        out.text,
        format!(
            "upstream timed out after 1 s calling GET http://{}/3/slow",
            up.addr
        )
    );
}

#[tokio::test]
async fn html_500_is_an_error_with_a_clean_excerpt() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let out = call(&c, "GET /html500", json!({})).await;
    assert!(out.is_error);
    assert_eq!(out.status, Some(500));
    assert_eq!(
        out.text,
        format!(
            "HTTP 500 Internal Server Error from GET http://{}/3/html500\nOops Internal Server Error Something broke while rendering movie 550.",
            up.addr
        )
    );
}

#[tokio::test]
async fn huge_responses_are_cut_at_the_cap_quickly() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    let t = Instant::now();
    let out = call(&c, "GET /huge", json!({})).await;
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    assert!(!out.is_error, "{}", &out.text[..200.min(out.text.len())]);
    let note = format!("\n[truncated: showed first 100 KB of {HUGE_BYTES} bytes]");
    assert!(
        out.text.ends_with(&note),
        "{}",
        &out.text[out.text.len().saturating_sub(100)..]
    );
    assert_eq!(out.text.len(), 100 * 1024 + note.len());
    assert!(out.structured.is_none());
}

#[tokio::test]
async fn redirects_stay_on_the_catalog_host() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), bearer(), false, None);

    let out = call(&c, "GET /redirect-other-host", json!({})).await;
    assert!(out.is_error);
    assert_eq!(out.status, Some(302));
    assert!(
        out.text
            .contains("not following the redirect to http://other.invalid/"),
        "{}",
        out.text
    );
    assert_eq!(up.only().path, "/3/redirect-other-host");

    let out = call(&c, "GET /redirect-same", json!({})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.structured.expect("json")["results"][0]["id"], 278);
    let r = up.received();
    assert_eq!(r[1].path, "/3/redirect-same");
    assert_eq!(r[2].path, "/3/movie/top_rated");
    assert_eq!(
        r[2].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    let before = up.received().len();
    let out = call(&c, "GET /redirect-loop", json!({})).await;
    assert!(
        out.is_error && out.text.contains("stopped after 5 redirects"),
        "{}",
        out.text
    );
    assert_eq!(
        up.received().len() - before,
        6,
        "the first request and 5 redirects"
    );
}

#[tokio::test]
async fn catalog_schemas_are_strict() {
    let up = upstream::start().await;
    let c = catalog(&up.base_url(), Value::Null, false, None);
    for ep in &c.endpoints {
        let s = input_schema(ep);
        assert_eq!(s["type"], "object", "{}", ep.key());
        let text = s.to_string();
        assert!(!text.contains("$ref"), "{}: {text}", ep.key());
        assert_arrays_have_items(&s, &ep.key());
    }
    let list = input_schema(endpoint(&c, "POST /list"));
    assert_eq!(list["required"], json!(["body"]));
    assert_eq!(
        list["properties"]["body"]["properties"]["name"]["description"],
        "Name of the list."
    );
    let search = input_schema(endpoint(&c, "GET /search/movie"));
    assert_eq!(search["required"], json!(["query"]));
    assert_eq!(
        search["properties"]["query"]["examples"],
        json!(["Fight Club"])
    );
    assert_eq!(search["properties"]["page"]["maximum"], 500);
}

fn assert_arrays_have_items(v: &Value, at: &str) {
    match v {
        Value::Object(o) => {
            if o.get("type") == Some(&json!("array")) {
                assert!(o.contains_key("items"), "{at}: array without items: {v}");
            }
            o.values().for_each(|x| assert_arrays_have_items(x, at));
        }
        Value::Array(a) => a.iter().for_each(|x| assert_arrays_have_items(x, at)),
        _ => {}
    }
}
