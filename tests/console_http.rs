//! The catalog console over HTTP, against the real `shortlist console` (and `serve --http`)
//! on 127.0.0.1 with a catalog of real specs enriched by the real `shortlist enrich`: every
//! page and JSON endpoint, the guards (Host, Origin, bearer token), bad input, reviews
//! written into the enriched specs (and surviving a re-run of the enricher), concurrent
//! saves, and the "try a request" shortlist compared with what an MCP client receives.

mod console_common;
mod server_common;
mod support;

use console_common::{read_spec, Catalog, Server, BROKEN};
use reqwest::StatusCode;
use serde_json::{json, Value};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("HTTP client")
}

async fn get_json(url: &str) -> (StatusCode, Value) {
    let res = client().get(url).send().await.expect("GET");
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn post_json(url: &str, body: &Value) -> (StatusCode, Value) {
    let res = client().post(url).json(body).send().await.expect("POST");
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn get_text(url: &str) -> (StatusCode, String) {
    let res = client().get(url).send().await.expect("GET");
    let status = res.status();
    (status, res.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_lists_apis_problems_and_filters_endpoints() {
    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;

    let (status, h) = get_json(&srv.url("/console/api/health")).await;
    assert_eq!(status, StatusCode::OK, "{h}");
    let ids: Vec<&str> = h["apis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "1forge.com_0.0.1",
            "quarantine.country_1.0",
            "tmdb",
            "xkcd.com_1.0.0"
        ]
    );
    let api = |id: &str| {
        h["apis"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(api("xkcd.com_1.0.0")["endpoints"], 2);
    assert_eq!(api("xkcd.com_1.0.0")["spec_version"], "3.0.0");
    assert_eq!(api("1forge.com_0.0.1")["spec_version"], "2.0");
    assert!(api("tmdb")["file"]
        .as_str()
        .unwrap()
        .ends_with("tmdb.enriched.json"));
    // TMDB's operations have a summary and no description: generated ones await review.
    let tmdb = api("tmdb");
    assert_eq!(tmdb["missing"], 13, "{tmdb}");
    assert_eq!(tmdb["generated"], 13, "{tmdb}");
    assert_eq!(tmdb["poorly_described"], 1.0);
    // 1Forge's "Get quotes" and "Symbol List" say no more than the path.
    let forge = api("1forge.com_0.0.1");
    assert_eq!(
        (forge["weak"].as_u64(), forge["missing"].as_u64()),
        (Some(2), Some(0)),
        "{forge}"
    );
    let xkcd = api("xkcd.com_1.0.0");
    assert_eq!(
        (xkcd["weak"].as_u64(), xkcd["missing"].as_u64()),
        (Some(0), Some(0)),
        "{xkcd}"
    );
    let share = h["poorly_described"].as_f64().unwrap();
    assert!((share - 21.0 / 23.0).abs() < 1e-9, "{share}");
    assert_eq!(h["total_endpoints"], 23);
    assert_eq!(h["skipped"], 1);
    let problem = &h["problems"][0];
    assert_eq!(problem["severity"], "error");
    assert!(problem["file"].as_str().unwrap().ends_with(BROKEN));
    assert!(problem["message"]
        .as_str()
        .unwrap()
        .contains("invalid JSON"));

    // Filters: API, method, path text, description state.
    let (_, f) = get_json(&srv.url("/console/api/health?method=delete")).await;
    assert_eq!(f["matching"], 1);
    assert_eq!(f["endpoints"][0]["path"], "/list/{list_id}");
    assert_eq!(f["endpoints"][0]["description"], "missing");
    assert_eq!(f["endpoints"][0]["generated"], true);
    let (_, f) = get_json(&srv.url("/console/api/health?api=xkcd.com_1.0.0&q=comicid")).await;
    assert_eq!(f["matching"], 1, "{f}");
    assert_eq!(f["endpoints"][0]["path"], "/{comicId}/info.0.json");
    let (_, f) = get_json(&srv.url("/console/api/health?description=generated&api=tmdb")).await;
    assert_eq!(f["matching"], 13);
    let (_, f) = get_json(&srv.url("/console/api/health?description=weak")).await;
    assert!(f["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["description"] == "weak"));

    // Bad filters name the argument.
    for (q, arg) in [
        ("method=FETCH", "method:"),
        ("description=great", "description:"),
    ] {
        let (status, e) = get_json(&srv.url(&format!("/console/api/health?{q}"))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{q}");
        assert!(e["error"].as_str().unwrap().starts_with(arg), "{e}");
    }

    // The page shows the same, filtered on the server too.
    let (status, page) = get_text(&srv.url("/console/health?method=DELETE")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Catalog health") && page.contains("quarantine.country_1.0"));
    assert!(page.contains(BROKEN) && page.contains("invalid JSON"));
    assert!(page.contains("/list/{list_id}") && !page.contains("/movie/top_rated</code>"));
    let (status, _) = get_text(&srv.url("/console/health?method=FETCH")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // `/` and `/console` lead to the health page; assets are served with a strict policy.
    for p in ["/", "/console"] {
        let res = client().get(srv.url(p)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{p}");
        assert_eq!(res.headers()["location"], "/console/health");
    }
    for (p, ty) in [
        ("/console/assets/console.js", "text/javascript"),
        ("/console/assets/console.css", "text/css"),
    ] {
        let res = client().get(srv.url(p)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with(ty));
        let csp = res.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'"), "{csp}");
    }
    let (status, _) = get_text(&srv.url("/console/nothing-here")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guards_refuse_foreign_hosts_origins_and_missing_tokens() {
    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;
    let url = srv.url("/console/api/health");
    let res = client()
        .get(&url)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "DNS rebinding");
    let res = client()
        .post(srv.url("/console/api/review"))
        .header("origin", "http://evil.example")
        .json(&json!({"api": "tmdb", "method": "GET", "path": "/echo", "field": "description", "action": "accept"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "cross-site write");
    let res = client()
        .get(&url)
        .header("origin", format!("http://127.0.0.1:{}", srv.port))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK, "the console's own pages");
    drop(srv);

    // With a token, every console route wants it; the token never shows in answers.
    let token = "console-token-93a1";
    let srv = Server::console(
        &cat,
        &["--auth-token-env", "CONSOLE_TEST_TOKEN"],
        &[("CONSOLE_TEST_TOKEN", token)],
    )
    .await;
    for p in ["/console/health", "/console/api/health", "/console/try?q=x"] {
        let res = client().get(srv.url(p)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{p}");
    }
    let res = client()
        .post(srv.url("/console/api/try"))
        .json(&json!({"query": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = client()
        .get(srv.url("/console/api/health"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = client()
        .get(srv.url("/console/api/health"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(!res.text().await.unwrap().contains(token));

    // A browser is sent to the login page, signs in once, and carries a cookie after.
    let cookie = sign_in(&srv, token).await;
    let res = client()
        .get(srv.url("/console/api/health"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(!srv.log().contains(token));
}

/// Signs in at `/console/login` as a browser would; returns the `Cookie` header to send.
async fn sign_in(srv: &Server, token: &str) -> String {
    let res = client()
        .get(srv.url("/console/health"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/console/login");
    let (status, form) = get_text(&srv.url("/console/login")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(form.contains("name=\"token\""));
    let post = |t: &str, origin: &str| {
        client()
            .post(srv.url("/console/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", origin.to_string())
            .body(format!("token={t}"))
            .send()
    };
    let own = format!("http://127.0.0.1:{}", srv.port);
    let res = post("wrong", &own).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(res.headers().get("set-cookie").is_none());
    let res = post(token, "http://evil.example").await.unwrap();
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "no sign-in from another site"
    );
    let res = post(token, &own).await.unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age="] {
        assert!(set.contains(part), "{set}");
    }
    // A session that ends, not the token: a cookie copied from a browser opens nothing
    // once it expires, and never gives away the server's token.
    assert!(
        !set.contains(token),
        "the console cookie is the token itself: {set}"
    );
    let forged = format!("shortlist_console={token}");
    let res = client()
        .get(srv.url("/console/api/health"))
        .header("cookie", &forged)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status(),
        StatusCode::UNAUTHORIZED,
        "the token as a cookie"
    );
    set.split(';').next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_http_has_the_console_behind_the_same_guards() {
    let cat = Catalog::enriched();
    let token = "serve-token-4f2e";
    let srv = Server::serve(
        &cat,
        &["--auth-token-env", "CONSOLE_TEST_TOKEN"],
        &[("CONSOLE_TEST_TOKEN", token)],
    )
    .await;
    let res = client()
        .get(srv.url("/console/api/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let res = client()
        .get(srv.url("/console/health"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.text().await.unwrap().contains("tmdb"));
    let res = client()
        .get(srv.url("/console/health"))
        .bearer_auth(token)
        .header("host", "evil.example:80")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = client()
        .post(srv.url("/console/api/try"))
        .bearer_auth(token)
        .json(&json!({"query": "search for a movie by its title"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let tried: Value = res.json().await.unwrap();
    assert_eq!(tried["tools"][0]["name"], "tmdb__searchMovie", "{tried:#}");

    // The console's cookie opens the console, not MCP.
    let cookie = sign_in(&srv, token).await;
    let res = client()
        .get(srv.url("/console/review"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    for p in ["/mcp", "/sse"] {
        let res = client()
            .get(srv.url(p))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{p}");
    }
}

/// The review item for (api, path, param, field) from the JSON listing.
async fn item(srv: &Server, api: &str, path: &str, param: Option<&str>, field: &str) -> Value {
    let (status, list) =
        get_json(&srv.url(&format!("/console/api/review?api={api}&status=all"))).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["path"] == path && i["field"] == field && i["param"]["name"].as_str() == param)
        .cloned()
        .unwrap_or_else(|| panic!("no item {api} {path} {param:?} {field}: {list:#}"))
}

/// A review request for `it`.
fn review_of(it: &Value, action: &str, value: Option<Value>) -> Value {
    let mut r = json!({
        "api": it["api"], "method": it["method"], "path": it["path"],
        "field": it["field"], "action": action, "expected": it["value"],
    });
    if !it["param"].is_null() {
        r["param"] = it["param"].clone();
    }
    if let Some(v) = value {
        r["value"] = v;
    }
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_are_written_like_a_person_would_and_survive_re_runs() {
    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;
    let save = srv.url("/console/api/review");

    // Accept: a generated parameter description in a YAML spec.
    let comic = item(
        &srv,
        "xkcd.com_1.0.0",
        "/{comicId}/info.0.json",
        Some("comicId"),
        "description",
    )
    .await;
    assert_eq!(comic["status"], "pending");
    assert_eq!(comic["placement"], "in_place");
    assert_eq!(comic["provenance"]["generator"], "heuristic");
    assert!(comic["check"].is_null(), "no retrieval check ran: {comic}");
    assert!(comic["pointer"]
        .as_str()
        .unwrap()
        .ends_with("/parameters/0/description"));
    let (status, saved) = post_json(&save, &review_of(&comic, "accept", None)).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    let xkcd_file = cat.spec("xkcd.com_1.0.0.enriched.yaml");
    let text = std::fs::read_to_string(&xkcd_file).unwrap();
    assert!(text.starts_with("openapi:"), "still YAML: {text}");
    let doc = read_spec(&xkcd_file);
    let p = &doc["paths"]["/{comicId}/info.0.json"]["get"]["parameters"][0];
    assert_eq!(p["description"], comic["value"]);
    assert!(
        p.get("x-shortlist-generated")
            .is_none_or(|m| m.get("description").is_none()),
        "{p}"
    );
    // The same value again: no longer pending.
    let (status, e) = post_json(&save, &review_of(&comic, "accept", None)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{e}");

    // Edit: an endpoint description filled in place in a JSON spec.
    let top = item(&srv, "tmdb", "/movie/top_rated", None, "description").await;
    let edited = "The best-rated movies on TMDB, best first, a page at a time.";
    let (status, saved) = post_json(&save, &review_of(&top, "edit", Some(json!(edited)))).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    assert_eq!(saved["saved"]["value"], edited);
    let tmdb_file = cat.spec("tmdb.enriched.json");
    let doc = read_spec(&tmdb_file);
    let op = &doc["paths"]["/movie/top_rated"]["get"];
    assert_eq!(op["description"], edited);
    assert!(op["x-shortlist-generated"].get("description").is_none());
    assert!(std::fs::read_to_string(&tmdb_file)
        .unwrap()
        .starts_with('{'));

    // Reject: an alternative written beside the author's weak text; that text stays.
    let quotes = item(&srv, "1forge.com_0.0.1", "/quotes", None, "description").await;
    assert_eq!(quotes["placement"], "beside");
    assert_eq!(quotes["spec"]["description"], "Get quotes");
    let (status, _) = post_json(&save, &review_of(&quotes, "reject", None)).await;
    assert_eq!(status, StatusCode::OK);
    let doc = read_spec(&cat.spec("1forge.com_0.0.1.enriched.yaml"));
    let op = &doc["paths"]["/quotes"]["get"];
    assert!(op.get("x-shortlist-description").is_none(), "{op}");
    assert_eq!(op["description"], "Get quotes");

    // The console reads the files again: both show as reviewed, health counts them.
    let again = item(&srv, "tmdb", "/movie/top_rated", None, "description").await;
    assert_eq!(again["status"], "reviewed");
    assert_eq!(again["value"], edited);
    let (_, h) = get_json(&srv.url("/console/api/health?api=tmdb&q=top_rated")).await;
    assert_eq!(h["endpoints"][0]["generated"], false);
    assert_eq!(h["endpoints"][0]["description"], "ok");

    // A stale value (the enricher ran again meanwhile) is refused, not overwritten.
    let echo = item(&srv, "tmdb", "/echo", None, "description").await;
    let mut stale = review_of(&echo, "accept", None);
    stale["expected"] = json!("Some other text.");
    let (status, e) = post_json(&save, &stale).await;
    assert_eq!(status, StatusCode::CONFLICT, "{e}");

    // Re-running the enricher keeps what the reviewer decided. The heuristic generates the
    // rejected description again, word for word; it is not written back.
    drop(srv);
    let said = cat.enrich();
    let doc = read_spec(&cat.spec("1forge.com_0.0.1.enriched.yaml"));
    let op = &doc["paths"]["/quotes"]["get"];
    assert!(op.get("x-shortlist-description").is_none(), "{op}");
    assert!(
        op.get("x-shortlist-generated")
            .is_none_or(|m| m.get("description").is_none()),
        "{op}"
    );
    assert_eq!(
        op["x-shortlist-rejected"]["description"],
        json!([quotes["value"]])
    );
    assert!(
        said.contains("rejected in review, not written again: ")
            && said.contains("/quotes: description"),
        "{said}"
    );
    let doc = read_spec(&tmdb_file);
    let op = &doc["paths"]["/movie/top_rated"]["get"];
    assert_eq!(op["description"], edited);
    assert!(
        op["x-shortlist-generated"].get("description").is_none(),
        "{op}"
    );
    let doc = read_spec(&xkcd_file);
    let p = &doc["paths"]["/{comicId}/info.0.json"]["get"]["parameters"][0];
    assert_eq!(p["description"], comic["value"]);
    assert!(p
        .get("x-shortlist-generated")
        .is_none_or(|m| m.get("description").is_none()));

    // The rejection is listed, and restoring it lets the next run write the value again.
    let srv = Server::console(&cat, &[], &[]).await;
    let save = srv.url("/console/api/review");
    let (status, list) =
        get_json(&srv.url("/console/api/review?api=1forge.com_0.0.1&status=rejected")).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list:#}");
    let rejected = &items[0];
    assert_eq!(rejected["path"], "/quotes");
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["value"], quotes["value"]);
    assert!(rejected["pointer"]
        .as_str()
        .unwrap()
        .ends_with("/get/x-shortlist-rejected/description/0"));
    let (_, page) = get_text(&srv.url("/console/review?status=rejected")).await;
    assert!(page.contains("data-action=\"restore\""), "{page}");
    let (status, e) = post_json(&save, &review_of(rejected, "accept", None)).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "not pending, so not acceptable: {e}"
    );
    let (status, saved) = post_json(&save, &review_of(rejected, "restore", None)).await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    let (status, e) = post_json(&save, &review_of(rejected, "restore", None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "restored already: {e}");
    let doc = read_spec(&cat.spec("1forge.com_0.0.1.enriched.yaml"));
    assert!(doc["paths"]["/quotes"]["get"]
        .get("x-shortlist-rejected")
        .is_none());
    drop(srv);
    cat.enrich();
    let doc = read_spec(&cat.spec("1forge.com_0.0.1.enriched.yaml"));
    let op = &doc["paths"]["/quotes"]["get"];
    assert_eq!(op["x-shortlist-description"], quotes["value"], "{op}");
    assert!(
        op["x-shortlist-generated"].get("description").is_some(),
        "pending again: {op}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reviews_get_clear_errors_and_change_nothing() {
    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;
    let save = srv.url("/console/api/review");
    let file = cat.spec("tmdb.enriched.json");
    let before = std::fs::read(&file).unwrap();
    let echo = item(&srv, "tmdb", "/echo", None, "description").await;

    let res = client()
        .post(&save)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("api=tmdb")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let res = client()
        .post(&save)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);

    let mut cases: Vec<(Value, StatusCode, &str)> = Vec::new();
    let mut unknown = review_of(&echo, "accept", None);
    unknown["colour"] = json!("blue");
    cases.push((unknown, StatusCode::BAD_REQUEST, "colour"));
    let mut action = review_of(&echo, "accept", None);
    action["action"] = json!("approve");
    cases.push((action, StatusCode::BAD_REQUEST, "approve"));
    cases.push((
        review_of(&echo, "edit", None),
        StatusCode::BAD_REQUEST,
        "value:",
    ));
    cases.push((
        review_of(&echo, "edit", Some(json!("   "))),
        StatusCode::BAD_REQUEST,
        "value:",
    ));
    cases.push((
        review_of(&echo, "accept", Some(json!("x"))),
        StatusCode::BAD_REQUEST,
        "value:",
    ));
    let mut field = review_of(&echo, "accept", None);
    field["field"] = json!("title");
    cases.push((field, StatusCode::BAD_REQUEST, "field:"));
    let mut api = review_of(&echo, "accept", None);
    api["api"] = json!("nope");
    cases.push((api, StatusCode::NOT_FOUND, "api:"));
    let mut path = review_of(&echo, "accept", None);
    path["path"] = json!("/nowhere");
    cases.push((path, StatusCode::NOT_FOUND, "no such operation"));
    let mut param = review_of(&echo, "accept", None);
    param["param"] = json!({"name": "missing", "in": "query"});
    cases.push((param, StatusCode::NOT_FOUND, "missing"));
    // An edited example must match the parameter's schema (`page` is an integer).
    let page = item(&srv, "tmdb", "/search/movie", Some("page"), "example").await;
    cases.push((
        review_of(&page, "edit", Some(json!("first"))),
        StatusCode::BAD_REQUEST,
        "schema",
    ));
    for (body, want, says) in cases {
        let (status, e) = post_json(&save, &body).await;
        assert_eq!(status, want, "{body}: {e}");
        let msg = e["error"].as_str().unwrap_or_default();
        assert!(msg.contains(says), "{body}: {msg}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing was written");

    let (status, e) = get_json(&srv.url("/console/api/review?status=done")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(e["error"].as_str().unwrap().starts_with("status:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_saves_to_one_spec_all_survive() {
    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;
    let (_, list) =
        get_json(&srv.url("/console/api/review?api=quarantine.country_1.0&status=pending")).await;
    let items: Vec<Value> = list["items"].as_array().unwrap().clone();
    assert!(items.len() >= 12, "{}", items.len());
    let save = srv.url("/console/api/review");
    // Every pending value of one YAML file at once: descriptions edited, examples accepted.
    let requests = items.iter().enumerate().map(|(i, it)| {
        let body = if it["field"] == "description" {
            review_of(
                it,
                "edit",
                Some(json!(format!("Reviewed text number {i}."))),
            )
        } else {
            review_of(it, "accept", None)
        };
        let save = save.clone();
        tokio::spawn(async move { post_json(&save, &body).await })
    });
    for r in futures::future::join_all(requests).await {
        let (status, body) = r.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let file = cat.spec("quarantine.country_1.0.enriched.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.trim_start().starts_with('{'), "still YAML");
    let doc = read_spec(&file);
    for (i, it) in items.iter().enumerate() {
        let op = &doc["paths"][it["path"].as_str().unwrap()]["get"];
        let obj = match it["param"]["name"].as_str() {
            Some(name) => op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap(),
            None => op,
        };
        let key = it["key"].as_str().unwrap();
        if it["field"] == "description" {
            assert_eq!(obj[key], format!("Reviewed text number {i}."), "{it}");
        } else {
            assert_eq!(obj[key], it["value"], "{it}");
        }
        assert!(
            obj.get("x-shortlist-generated").is_none(),
            "every marker entry went: {obj}"
        );
    }
    let (_, left) =
        get_json(&srv.url("/console/api/review?api=quarantine.country_1.0&status=pending")).await;
    assert_eq!(left["items"].as_array().unwrap().len(), 0);
    let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_page_shows_generated_text_beside_the_specs_own() {
    let cat = Catalog::enriched();
    let srv = Server::console(&cat, &[], &[]).await;
    let (status, page) = get_text(&srv.url("/console/review?api=1forge.com_0.0.1")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("The spec's own") && page.contains("Get quotes"));
    assert!(page.contains("generator <b>heuristic</b>"));
    assert!(page.contains("not checked"));
    assert!(page.contains("data-action=\"accept\""));
    let (status, page) = get_text(&srv.url("/console/review?status=reviewed")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Nothing to show"));

    // A retrieval check recorded in a marker entry (`check: {passed, reason}`) is shown.
    let file = cat.spec("1forge.com_0.0.1.enriched.yaml");
    let mut doc = read_spec(&file);
    let reason = "ranked 4th for its own sample question";
    doc["paths"]["/quotes"]["get"]["x-shortlist-generated"]["description"]["check"] =
        json!({"passed": false, "reason": reason});
    doc["paths"]["/symbols"]["get"]["x-shortlist-generated"]["description"]["check"] =
        json!({"passed": true});
    shortlist::enrich::spec_file::write(&file, &doc).unwrap();
    // The console reads the files again after a save; a fresh server reads them at start.
    drop(srv);
    let srv = Server::console(&cat, &[], &[]).await;
    let quotes = item(&srv, "1forge.com_0.0.1", "/quotes", None, "description").await;
    assert_eq!(quotes["check"], json!({"passed": false, "reason": reason}));
    assert!(quotes["provenance"].get("check").is_none());
    let (_, page) = get_text(&srv.url("/console/review?api=1forge.com_0.0.1")).await;
    assert!(
        page.contains("validation: failed</span> ranked 4th"),
        "{page}"
    );
    assert!(page.contains("validation: passed"));
    let (status, _) = get_text(&srv.url("/console/review?status=nope")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A value the check refused is in its marker entry only (the enricher writes it nowhere
    // the index reads): listed where accepting puts it, and written there when accepted.
    let file = cat.spec("xkcd.com_1.0.0.enriched.yaml");
    let mut doc = read_spec(&file);
    let refused = "Today's comic, with its number, title, image and alt text.";
    doc["paths"]["/info.0.json"]["get"]["x-shortlist-generated"] = json!({"description": {
        "generator": "m", "template": "endpoint-description", "date": "2026-11-25",
        "check": {"passed": false, "reason": "adds no distinctive word", "value": refused}}});
    shortlist::enrich::spec_file::write(&file, &doc).unwrap();
    drop(srv);
    let srv = Server::console(&cat, &[], &[]).await;
    let it = item(&srv, "xkcd.com_1.0.0", "/info.0.json", None, "description").await;
    assert_eq!(it["value"], refused);
    assert_eq!(it["placement"], "beside");
    assert_eq!(it["check"]["reason"], "adds no distinctive word");
    assert!(it["spec"]["description"]
        .as_str()
        .unwrap()
        .starts_with("Fetch current comic"));
    let (status, saved) = post_json(
        &srv.url("/console/api/review"),
        &review_of(&it, "accept", None),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{saved}");
    let op = &read_spec(&file)["paths"]["/info.0.json"]["get"];
    assert_eq!(op["x-shortlist-description"], refused);
    assert!(op.get("x-shortlist-generated").is_none(), "{op}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_shows_what_a_client_receives_and_why() {
    let cat = Catalog::enriched();
    let srv = Server::serve(&cat, &[], &[]).await;
    let query = "who played in the movie Inception";
    let (status, t) = post_json(&srv.url("/console/api/try"), &json!({"query": query})).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    // find_tools' default: as many hits as fit its token budget.
    let tools = t["tools"].as_array().unwrap();
    assert_eq!(t["k"], tools.len(), "{t:#}");
    assert!(tools.len() > 5 && tools.len() <= 50, "{t:#}");
    assert_eq!(tools[0]["name"], "tmdb__getMovieCredits", "{t:#}");
    assert_eq!(tools[0]["origin"], "request");
    let x = &tools[0]["explanation"];
    assert!(
        x["dense"].as_f64().is_some() && x["lexical"].as_f64().is_some(),
        "{x}"
    );
    // Credits need a movie id: the search that produces it comes along, and says so.
    let search = tools
        .iter()
        .find(|t| t["name"] == "tmdb__searchMovie")
        .unwrap_or_else(|| panic!("{t:#}"));
    assert_eq!(search["origin"], "prerequisite");
    assert!(search["why"]
        .as_str()
        .unwrap()
        .contains("tmdb__getMovieCredits"));
    // The judgement find_tools gives, with its evidence: the catalog fits this request.
    let j = &t["judgement"];
    assert_eq!(j["matched"], true, "{j:#}");
    assert!(
        j["no_match"]
            .as_f64()
            .is_some_and(|p| (0.0..=1.0).contains(&p)),
        "{j:#}"
    );
    for e in [
        "cosine",
        "cosine_gap",
        "task_cosine",
        "coverage",
        "coverage_top",
    ] {
        assert!(j["evidence"][e].as_f64().is_some(), "{e}: {j:#}");
    }
    // Scores never increase down the list.
    let scores: Vec<f64> = tools.iter().map(|t| t["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    // Tokens: cl100k of each definition as compact JSON.
    let bpe = tiktoken_rs::cl100k_base().unwrap();
    for tool in tools {
        let n = bpe
            .encode_with_special_tokens(&serde_json::to_string(&tool["definition"]).unwrap())
            .len();
        assert_eq!(tool["tokens"], n, "{}", tool["name"]);
    }
    assert!(t["meta_tokens"].as_u64().unwrap() > 100);

    // The definitions are what an MCP client lists after find_tools with the same query.
    let doc = server_common::python_client(
        server_common::Target::Http(&srv.url("/mcp")),
        "legacy",
        json!([
            {"op": "call", "tool": "find_tools", "args": {"query": query}},
            {"op": "list_tools"},
        ]),
    )
    .await;
    let listed = server_common::step(&doc, 1)["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(
        server_common::step(&doc, 0)["structuredContent"]["matched"],
        j["matched"],
        "{doc:#}"
    );
    for tool in tools {
        let def = &tool["definition"];
        let seen = listed
            .iter()
            .find(|l| l["name"] == def["name"])
            .unwrap_or_else(|| panic!("{} not listed", def["name"]));
        for k in [
            "description",
            "title",
            "inputSchema",
            "annotations",
            "_meta",
        ] {
            assert_eq!(seen.get(k), def.get(k), "{k} of {}", def["name"]);
        }
    }

    // A request of two tasks is split, and each task is named.
    let (_, t) = post_json(
        &srv.url("/console/api/try"),
        &json!({"query": "Show me the top rated movies, and then delete my list 42", "k": 3}),
    )
    .await;
    assert_eq!(t["tasks"][1], "delete my list 42", "{t:#}");
    assert_eq!(t["tools"].as_array().unwrap().len(), 3);
    let delete = t["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "tmdb__deleteList")
        .unwrap_or_else(|| panic!("{t:#}"));
    assert_eq!(delete["origin"], "task_part", "{delete:#}");
    assert_eq!(delete["explanation"]["origin"]["task"], 1);
    assert!(delete["why"]
        .as_str()
        .unwrap()
        .contains("delete my list 42"));

    // Bad input: the messages find_tools gives.
    for (body, says) in [
        (json!({}), "query"),
        (json!({"query": "  "}), "query"),
        (json!({"query": "x", "k": "five"}), "k"),
        (json!({"query": "x", "api": "nope"}), "no API matches"),
        (json!({"query": "x", "extra": 1}), "extra"),
    ] {
        let (status, e) = post_json(&srv.url("/console/api/try"), &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(e["error"].as_str().unwrap().contains(says), "{body}: {e}");
    }
    let res = client()
        .post(srv.url("/console/api/try"))
        .body("query=x")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // The page renders the same ranking on the server.
    let (status, page) =
        get_text(&srv.url("/console/try?q=who+played+in+the+movie+Inception&k=5")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("tmdb__getMovieCredits") && page.contains("prerequisite of"));
    assert!(
        page.contains("id=\"judgement\" data-matched=\"true\""),
        "{page}"
    );
    assert!(page.contains("best cosine"), "{page}");
    // A request nothing in this catalog (comics, currencies, quarantine rules, movies) does:
    // the page says so beside the closest hits, as find_tools tells the client.
    let unmatched = "book a table for two at a sushi restaurant tonight";
    let (_, t) = post_json(&srv.url("/console/api/try"), &json!({"query": unmatched})).await;
    assert_eq!(t["judgement"]["matched"], false, "{t:#}");
    assert!(!t["tools"].as_array().unwrap().is_empty(), "{t:#}");
    let (status, page) =
        get_text(&srv.url(&format!("/console/try?q={}", unmatched.replace(' ', "+")))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("data-matched=\"false\""), "{page}");
    assert!(page.contains("Nothing in the catalog seems to fit this request"));
    assert!(page.contains("&quot;inputSchema&quot;"));
    let (status, page) = get_text(&srv.url("/console/try?q=x&k=lots")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(page.contains("k: must be a whole number"));
    let (status, page) = get_text(&srv.url("/console/try")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("What a user would ask"));
}
