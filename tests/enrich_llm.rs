//! `shortlist enrich` against a real LLM: SmolLM2-135M behind llama.cpp's OpenAI-compatible
//! server on 127.0.0.1, through the real HTTP API. The model is tiny, so the assertions are
//! about structure, schema validity, provenance and cache behaviour, never wording.
//!
//! Needs `./scripts/setup-test-tools.sh` (the test fails, naming it, when the venv is
//! missing).

#[path = "support/enrich_cli.rs"]
mod enrich_cli;
#[path = "support/llm.rs"]
mod llm;

use enrich_cli::*;
use serde_json::Value;
use shortlist::catalog::{enriched_path, Catalog};
use shortlist::enrich::schema_check;

/// The two endpoints of the tiny spec that lack text (the third is fully human).
fn two_endpoint_spec() -> Value {
    let mut s = tiny_spec();
    s["paths"].as_object_mut().unwrap().remove("/lists");
    s
}

const LABEL_HASH_LEN: usize = 8;

/// `shortlist enrich` arguments for the model at `url`, one task per request, unchecked.
fn one_task_per_request(url: &str) -> Vec<&str> {
    vec![
        "--llm-url",
        url,
        "--llm-model",
        llm::MODEL,
        "--concurrency",
        "1",
        "--max-tokens",
        "128",
        "--json",
        "--per-task",
        "--check",
        "off",
    ]
}

#[test]
fn smollm2_enriches_a_small_spec_end_to_end_one_task_per_request() {
    let server = llm::LocalLlm::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = write_json(dir.path(), "movies.json", &two_endpoint_spec());
    let original = std::fs::read(&spec).unwrap();
    let data = dir.path().join("data");
    let run = |extra: &[&str]| {
        let mut args = one_task_per_request(&server.url);
        args.extend(["--data-dir", data.to_str().unwrap()]);
        args.extend_from_slice(extra);
        args.push(spec.to_str().unwrap());
        let r = enrich(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r
    };

    // First run: everything goes through the real HTTP API.
    let first = run(&[]).summary();
    assert!(first["requests"].as_u64().unwrap() >= 10, "{first}");
    assert!(first["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(first["completion_tokens"].as_u64().unwrap() > 0);
    let by_llm: u64 = first["by_llm"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert!(
        by_llm > 0,
        "the model produced at least some accepted value: {first}"
    );
    assert_eq!(
        std::fs::read(&spec).unwrap(),
        original,
        "the original is never modified"
    );
    let failures: Vec<String> = serde_json::from_value(first["failures"].clone()).unwrap();

    // The copy is a valid spec that the loader prefers, with provenance on every value.
    let copy = enriched_path(&spec);
    let doc = read_json(&copy);
    assert_eq!(doc["openapi"], "3.0.3");
    let c = Catalog::load_paths(std::slice::from_ref(&spec));
    assert_eq!(c.problems, vec![]);
    assert_eq!(c.apis[0].source, copy);
    assert_eq!(c.endpoints.len(), 2);
    for ep in &c.endpoints {
        let prov = ep
            .description_provenance
            .as_ref()
            .unwrap_or_else(|| panic!("{}", ep.key()));
        assert!(ep
            .description
            .as_deref()
            .is_some_and(|d| !d.trim().is_empty()));
        check_provenance(prov, "endpoint-description");
        for p in &ep.parameters {
            assert!(p.description.is_some(), "{} {}", ep.key(), p.name);
            check_provenance(
                p.description_provenance.as_ref().unwrap(),
                "parameter-descriptions",
            );
            match &p.example {
                Some(ex) => {
                    let problems = schema_check::check(&p.schema, ex);
                    assert!(
                        problems.is_empty(),
                        "{} {} = {ex}: {problems:?}",
                        ep.key(),
                        p.name
                    );
                    check_provenance(p.example_provenance.as_ref().unwrap(), "parameter-examples");
                }
                None => assert_eq!(p.name, "api_key", "only credentials go without an example"),
            }
        }
        // Document expansions: written with an LLM marker, or the failure is reported.
        let op = op(&doc, &ep.path, "get");
        for (field, marker, task) in [
            ("x-shortlist-summary", "summary", "endpoint-summary"),
            ("x-shortlist-questions", "questions", "endpoint-questions"),
        ] {
            match op.get(field) {
                Some(v) => {
                    assert!(
                        v.is_string()
                            || v.as_array().is_some_and(|a| !a.is_empty() && a.len() <= 5)
                    );
                    assert_eq!(op["x-shortlist-generated"][marker]["generator"], llm::MODEL);
                }
                None => assert!(
                    failures
                        .iter()
                        .any(|f| f.contains(&ep.path) && f.contains(task)),
                    "{field} missing for {} without a reported failure: {failures:?}",
                    ep.key()
                ),
            }
        }
        assert_eq!(
            ep.generated_summary.is_some(),
            op.get("x-shortlist-summary").is_some()
        );
    }
    assert_eq!(
        op(&doc, "/search/movie", "get")["description"],
        "searchMovie",
        "human text stays"
    );

    // Second run: all from the cache, nothing asked, the same copy.
    let bytes = std::fs::read(&copy).unwrap();
    let second = run(&[]).summary();
    assert_eq!(second["requests"], 0, "{second}");
    assert_eq!(second["prompt_tokens"], 0);
    assert!(second["cache_hits"].as_u64().unwrap() >= 5);
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        bytes,
        "a re-run reproduces the copy exactly"
    );

    // An edited template regenerates what it writes, and only that.
    let prompts = dir.path().join("prompts");
    std::fs::create_dir(&prompts).unwrap();
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/enrich-prompts/endpoint-summary.txt"
    ))
    .unwrap();
    std::fs::write(
        prompts.join("endpoint-summary.txt"),
        format!("{base}Keep it under twenty words.\n"),
    )
    .unwrap();
    let third = run(&["--prompts", prompts.to_str().unwrap()]).summary();
    let asked = third["requests"].as_u64().unwrap();
    assert!(
        (2..=4).contains(&asked),
        "one summary per endpoint (plus corrections): {third}"
    );
    assert_eq!(
        third["cache_hits"].as_u64(),
        second["cache_hits"].as_u64().map(|n| n - 2),
        "{third}"
    );
}

/// A marker names its generator, and for the LLM, the template with its version hash.
fn check_provenance(p: &shortlist::catalog::Provenance, template: &str) {
    assert_eq!(p.date.len(), 10, "{p:?}");
    match p.generator.as_str() {
        "heuristic" => assert_eq!(p.template, ""),
        llm::MODEL => {
            let (name, hash) = p
                .template
                .split_once('@')
                .unwrap_or_else(|| panic!("{p:?}"));
            assert_eq!((name, hash.len()), (template, LABEL_HASH_LEN), "{p:?}");
        }
        other => panic!("unexpected generator {other}"),
    }
}

/// The default path: both endpoints in one batched request (all tasks in one answer, the
/// answer constrained by a JSON schema), every generated text through the retrieval checks,
/// each verdict in its marker; then the same generated output applied unchecked, from the
/// cache.
#[test]
fn smollm2_batched_and_checked_then_the_same_output_unchecked() {
    let server = llm::LocalLlm::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = write_json(dir.path(), "movies.json", &two_endpoint_spec());
    let data = dir.path().join("data");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--llm-url",
            &server.url,
            "--llm-model",
            llm::MODEL,
            "--concurrency",
            "1",
            "--json",
            "--data-dir",
            data.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.push(spec.to_str().unwrap());
        let r = enrich(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        r
    };

    // --dry-run prints the batched request and sends nothing.
    let dry = run(&["--dry-run"]);
    assert!(dry.stdout.contains("[e1] GET"), "{}", dry.stdout);
    assert!(dry.stdout.contains("[e2] GET"), "{}", dry.stdout);
    assert!(
        dry.stdout.contains("1 request(s) for 2 endpoint(s)"),
        "{}",
        dry.stdout
    );
    assert!(!enriched_path(&spec).exists(), "a dry run writes nothing");

    let first = run(&[]).summary();
    let requests = first["requests"].as_u64().unwrap();
    // One batched request, plus at most one request of corrections and two halves.
    assert!((1..=4).contains(&requests), "{first}");
    assert!(first["prompt_tokens"].as_u64().unwrap() > 0);
    let copy = enriched_path(&spec);
    let checked = read_json(&copy);
    let rejected: Vec<String> = serde_json::from_value(first["rejected"].clone()).unwrap();
    let mut verdicts = 0;
    for path in ["/movie/{movie_id}/credits", "/search/movie"] {
        let o = op(&checked, path, "get");
        for (field, marker) in [
            ("description", "description"),
            ("x-shortlist-description", "description"),
            ("x-shortlist-summary", "summary"),
            ("x-shortlist-questions", "questions"),
        ] {
            let entry = &o["x-shortlist-generated"][marker];
            if entry["generator"] != llm::MODEL {
                continue;
            }
            let (name, hash) = entry["template"].as_str().unwrap().split_once('@').unwrap();
            assert_eq!((name, hash.len()), ("endpoint-batch", LABEL_HASH_LEN));
            let check = &entry["check"];
            match check["passed"].as_bool() {
                Some(true) => {
                    if marker != "description" || o.get(field).is_some() {
                        verdicts += 1;
                    }
                }
                Some(false) => {
                    // Refused: not written where the index reads it, the reason and the
                    // value kept for the reviewer, and reported.
                    assert!(o.get(field).is_none() || field == "description", "{o}");
                    assert!(!check["reason"].as_str().unwrap().is_empty(), "{check}");
                    assert!(!check["value"].is_null(), "{check}");
                    assert!(
                        rejected
                            .iter()
                            .any(|r| r.contains(path) && r.contains(marker)),
                        "{rejected:?}"
                    );
                    verdicts += 1;
                }
                None => panic!("a generated {marker} without a check record: {entry}"),
            }
        }
        // Examples keep their schema.
        let c = Catalog::load_paths(std::slice::from_ref(&spec));
        for ep in &c.endpoints {
            for p in &ep.parameters {
                if let Some(ex) = &p.example {
                    assert!(schema_check::check(&p.schema, ex).is_empty(), "{ex}");
                }
            }
            // A refused text is the provenance of nothing the loader shows.
            if let Some(prov) = &ep.description_provenance {
                assert!(ep.description.is_some(), "{prov:?}");
            }
        }
    }
    assert!(verdicts > 0, "no generated text was checked: {checked}");

    // The same generated output, unchecked: from the cache, no request; every text the
    // checks refused is now written.
    let second = run(&["--check", "off"]).summary();
    assert_eq!(second["requests"], 0, "{second}");
    let unchecked = read_json(&copy);
    for r in &rejected {
        let path = if r.contains("/search/movie") {
            "/search/movie"
        } else {
            "/movie/{movie_id}/credits"
        };
        let o = op(&unchecked, path, "get");
        let m = o["x-shortlist-generated"].as_object().unwrap();
        assert!(m.values().all(|e| e.get("check").is_none()), "{o}");
        if r.contains(": summary:") {
            assert!(o.get("x-shortlist-summary").is_some(), "{o}");
        }
        if r.contains(": questions:") {
            assert!(o.get("x-shortlist-questions").is_some(), "{o}");
        }
    }
    // Checked again: the same copy as the first time, still without a request.
    let third = run(&[]).summary();
    assert_eq!(third["requests"], 0, "{third}");
    assert_eq!(read_json(&copy), checked);
}

/// An MCP server's thin tools enriched like a thin spec: `shortlist enrich` lists the
/// server (our own, in its `thin` mode: an empty description, one that only repeats the
/// tool's name, undescribed arguments), the model writes what is missing, and the catalog
/// serves it on those tools, marked as generated, while the author's good text stays; a
/// tool whose definition changes afterwards loses the text made for the old one.
#[test]
fn smollm2_enriches_an_mcp_servers_thin_tools() {
    use shortlist::catalog::CatalogConfig;
    let server = llm::LocalLlm::start();
    let dir = tempfile::tempdir().unwrap();
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    let own = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_upstreams/own_server.py");
    let config = dir.path().join("catalog.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n[[api]]\nid = \"fin\"\nmcp = {{ command = {:?}, args = [{:?}, \"--mode\", \"thin\"] }}\n",
            dir.path().join("data"),
            python,
            own
        ),
    )
    .unwrap();
    let mut args = one_task_per_request(&server.url);
    args.extend(["-c", config.to_str().unwrap()]);
    let r = enrich(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let summary = r.summary();
    assert!(summary["requests"].as_u64().unwrap() > 0, "{summary}");
    let copy = dir.path().join("data/mcp-enriched/fin.enriched.json");
    assert!(copy.is_file(), "{}", r.stderr);

    let cfg = CatalogConfig::load(&config).unwrap();
    let listings = shortlist::upstream::list_once(&cfg);
    let c = Catalog::load_listed(&cfg, &listings);
    let tool = |name: &str| {
        c.endpoints
            .iter()
            .find(|e| e.mcp.as_ref().is_some_and(|t| t.name == name))
            .unwrap_or_else(|| panic!("{name}: {:?}", c.endpoints))
    };
    let fx = tool("get_fx_rate");
    assert!(
        fx.description
            .as_deref()
            .is_some_and(|d| !d.trim().is_empty()),
        "{fx:?}"
    );
    assert!(fx.description_provenance.is_some(), "{fx:?}");
    for p in &fx.parameters {
        assert!(p.description.is_some(), "{} {:?}", p.name, p);
        assert!(p.description_provenance.is_some(), "{p:?}");
    }
    // A description that only repeats the name is shown replaced, and says so.
    let invoice = tool("lookup_invoice");
    assert_eq!(
        invoice
            .description_provenance
            .as_ref()
            .and_then(|p| p.replaced.as_deref()),
        Some("lookup_invoice"),
        "{invoice:?}"
    );
    // The author's own good text stays, unmarked.
    let ok = tool("ok");
    assert_eq!(
        ok.description.as_deref(),
        Some("A normal tool that returns ok.")
    );
    assert!(ok.description_provenance.is_none());
    // What the model wrote reached the catalog (not only the heuristic's fallback).
    let by_model = c.endpoints.iter().any(|e| {
        e.description_provenance
            .as_ref()
            .is_some_and(|p| p.generator == llm::MODEL)
            || e.parameters.iter().any(|p| {
                p.description_provenance
                    .as_ref()
                    .is_some_and(|p| p.generator == llm::MODEL)
            })
    });
    assert!(by_model, "{:#?}", c.endpoints);

    // The server changes get_fx_rate: the text made for the old definition is dropped.
    let mut changed = listings.clone();
    for listed in changed.values_mut().flatten() {
        for t in &mut listed.tools {
            if t["name"] == "get_fx_rate" {
                t["inputSchema"]["properties"]["date"] = serde_json::json!({"type": "string"});
            }
        }
    }
    let c = Catalog::load_listed(&cfg, &changed);
    let fx = c
        .endpoints
        .iter()
        .find(|e| e.operation_id.as_deref() == Some("get_fx_rate"))
        .unwrap();
    assert!(fx.description.is_none(), "{fx:?}");
    assert!(
        c.problems
            .iter()
            .any(|p| p.message.contains("stale") && p.message.contains("/get_fx_rate")),
        "{:?}",
        c.problems
    );
}
