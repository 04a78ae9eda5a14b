//! The LLM path against a misbehaving server: 429/500/timeouts are retried, garbage and
//! truncated answers are survived, invalid examples are corrected once then dropped, a
//! refused key stops the run without leaking the key, `response_format` steps down when
//! refused, and a killed run resumes from the cache without asking again.

#[path = "support/enrich_cli.rs"]
mod enrich_cli;
#[path = "support/fault_llm.rs"]
mod fault_llm;

use enrich_cli::bare_gets as spec;
use enrich_cli::*;
use fault_llm::{FaultLlm, Reply};
use serde_json::{json, Value};
use shortlist::catalog::enriched_path;
use std::path::Path;
use std::time::{Duration, Instant};

const MODEL: &str = "fault-model";

fn run_llm(server: &FaultLlm, spec: &Path, extra: &[&str]) -> Run {
    let data = spec.parent().unwrap().join("data");
    let mut args = vec![
        "--llm-url",
        &server.url,
        "--llm-model",
        MODEL,
        "--json",
        "--concurrency",
        "1",
        // The per-task path; the batched one (the default) has its own fault tests
        // (enrich_batch_faults.rs) and is run against the real model (enrich_llm.rs).
        "--per-task",
        "--check",
        "off",
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push(spec.to_str().unwrap());
    enrich(&args)
}

fn generator(obj: &Value, field: &str) -> String {
    obj["x-shortlist-generated"][field]["generator"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn rate_limits_server_errors_and_timeouts_are_retried() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), &["/a"], json!([]));
    let server = FaultLlm::start(|n, _| match n {
        0 => Reply::RateLimited(0),
        1 => Reply::Status(503, "overloaded".into()),
        2 => Reply::Hang(Duration::from_secs(4)),
        _ => Reply::Good,
    });
    let r = run_llm(
        &server,
        &spec,
        &["--tasks", "description", "--timeout", "1", "--retries", "3"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(
        (s["requests"].as_u64(), s["retries"].as_u64()),
        (Some(4), Some(3)),
        "{s}"
    );
    assert_eq!(s["by_llm"]["descriptions"], 1);
    assert_eq!(s["failures"], json!([]));
    assert_eq!(s["prompt_tokens"], 100, "tokens of the answered request");
    let doc = read_json(&enriched_path(&spec));
    assert_eq!(generator(op(&doc, "/a", "get"), "description"), MODEL);
}

#[test]
fn garbage_answers_fail_one_endpoint_and_the_rest_completes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), &["/a", "/broken", "/html"], json!([]));
    let server = FaultLlm::start(|_, seen| {
        let p = seen.prompt();
        if p.contains("/broken") {
            Reply::Content("Sure! I cannot produce JSON today.".into())
        } else if p.contains("/html") {
            Reply::NotJson
        } else {
            Reply::Good
        }
    });
    let r = run_llm(
        &server,
        &spec,
        &["--tasks", "description,summary", "--retries", "0"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(s["failed_endpoints"], 2, "{s}");
    let failures: Vec<String> = serde_json::from_value(s["failures"].clone()).unwrap();
    assert_eq!(failures.len(), 4, "{failures:?}");
    assert!(
        failures
            .iter()
            .any(|f| f.contains("GET /broken: endpoint-description: no usable answer")),
        "{failures:?}"
    );
    assert!(
        failures
            .iter()
            .any(|f| f.contains("GET /html: endpoint-summary: unusable response")),
        "{failures:?}"
    );
    assert!(r.stderr.contains("failed: api GET /broken"), "{}", r.stderr);
    assert_eq!(s["by_llm"]["descriptions"], 1);
    assert_eq!(
        s["fallbacks"], 2,
        "the heuristic filled the two failed descriptions"
    );
    let doc = read_json(&enriched_path(&spec));
    assert_eq!(generator(op(&doc, "/a", "get"), "description"), MODEL);
    assert_eq!(generator(op(&doc, "/a", "get"), "summary"), MODEL);
    let broken = op(&doc, "/broken", "get");
    assert_eq!(generator(broken, "description"), "heuristic");
    assert!(broken.get("x-shortlist-summary").is_none());
    // /broken got a correction turn that quotes its answer and names the problem.
    let corrections: Vec<_> = server
        .seen()
        .into_iter()
        .filter(|x| {
            x.prompt().contains("/broken") && x.body["messages"].as_array().unwrap().len() == 4
        })
        .collect();
    assert_eq!(corrections.len(), 2, "one per task");
    assert!(corrections[0].body["messages"][3]["content"]
        .as_str()
        .unwrap()
        .contains("not a JSON object"));

    // Unusable answers are remembered: a re-run asks nothing and reports them again.
    let before = server.seen().len();
    let r = run_llm(
        &server,
        &spec,
        &["--tasks", "description,summary", "--retries", "0"],
    );
    assert_eq!(
        server.seen().len() - before,
        2,
        "only /html (a server error) is asked again"
    );
    assert_eq!(r.summary()["failed_endpoints"], 2);
}

#[test]
fn truncated_json_is_repaired_or_corrected() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), &["/a"], json!([]));
    let server = FaultLlm::start(|n, _| match n {
        0 => Reply::Truncated(r#"{"description": "Returns the"#.into()),
        2 => Reply::Truncated(
            r#"{"questions": ["Which movies are playing now?", "What is on tonight in"#.into(),
        ),
        _ => Reply::Good,
    });
    let r = run_llm(&server, &spec, &["--tasks", "description,questions"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(
        s["requests"], 3,
        "description corrected once; questions repaired: {s}"
    );
    let a = op(&read_json(&enriched_path(&spec)), "/a", "get").clone();
    assert_eq!(generator(&a, "description"), MODEL);
    assert_eq!(
        a["x-shortlist-questions"],
        json!(["Which movies are playing now?"])
    );
    let correction = &server.seen()[1].body["messages"][3]["content"];
    assert!(
        correction
            .as_str()
            .unwrap()
            .contains("cut off at the token limit"),
        "{correction}"
    );
}

#[test]
fn examples_that_fail_their_schema_twice_are_dropped_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let params = json!([
        {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
        {"name": "sort", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"]}}
    ]);
    let spec = spec(dir.path(), &["/a"], params);
    let server = FaultLlm::start(|_, _| {
        Reply::Content(r#"{"examples": {"page": 0, "sort": "asc"}}"#.into())
    });
    let r = run_llm(&server, &spec, &["--tasks", "param-examples"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(s["requests"], 2);
    assert_eq!(s["dropped_examples"].as_array().unwrap().len(), 1, "{s}");
    assert!(
        r.stderr
            .contains("dropped example: api GET /a: page: 0 is invalid: 0 is below the minimum 1"),
        "{}",
        r.stderr
    );
    let seen = server.seen();
    // The server was told which value failed and why; the retry asked only for `page`.
    assert!(seen[1].body["messages"][3]["content"]
        .as_str()
        .unwrap()
        .contains("page: 0 is invalid"));
    let retry_schema =
        &seen[1].body["response_format"]["json_schema"]["schema"]["properties"]["examples"];
    assert_eq!(retry_schema["required"], json!(["page"]));
    assert_eq!(
        seen[0].body["response_format"]["json_schema"]["schema"]["properties"]["examples"]
            ["properties"]["page"],
        json!({"type": "integer", "minimum": 1})
    );
    let a = op(&read_json(&enriched_path(&spec)), "/a", "get").clone();
    assert_eq!(param(&a, "sort")["example"], "asc");
    assert_eq!(generator(param(&a, "sort"), "example"), MODEL);
    assert_eq!(
        param(&a, "page")["example"],
        1,
        "the heuristic's valid value replaces the dropped one"
    );
    assert_eq!(generator(param(&a, "page"), "example"), "heuristic");
}

#[test]
fn a_refused_key_stops_the_run_without_leaking_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), &["/a", "/b"], json!([]));
    let server = FaultLlm::start(|_, _| Reply::EchoAuth401);
    let key = "sk-test-SECRET-4242";
    let data = dir.path().join("data");
    let r: Run = shortlist()
        .args([
            "enrich",
            "--llm-url",
            &server.url,
            "--llm-model",
            MODEL,
            "--api-key-env",
            "SHORTLIST_TEST_KEY",
            "--per-task",
            "--check",
            "off",
        ])
        .args(["--data-dir", data.to_str().unwrap(), spec.to_str().unwrap()])
        .env("SHORTLIST_TEST_KEY", key)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap()
        .into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("refused the credentials (HTTP 401)"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("SECRET") && !r.stdout.contains("SECRET"),
        "{}",
        r.stderr
    );
    assert_eq!(
        server.seen()[0].authorization.as_deref(),
        Some(&*format!("Bearer {key}"))
    );
    assert!(
        server.seen().len() <= 2,
        "the run stops instead of failing every endpoint"
    );
    assert!(!enriched_path(&spec).exists());
}

#[test]
fn response_format_steps_down_when_the_server_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), &["/a", "/b"], json!([]));
    let server = FaultLlm::start(|_, seen| {
        if seen.format() == "json_schema" {
            Reply::Status(
                400,
                "response_format type json_schema is not supported".into(),
            )
        } else {
            Reply::Good
        }
    });
    let r = run_llm(&server, &spec, &["--tasks", "description"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.summary()["by_llm"]["descriptions"], 2);
    let formats: Vec<String> = server.seen().iter().map(|s| s.format()).collect();
    assert_eq!(
        formats,
        ["json_schema", "json_object", "json_object"],
        "remembered for the rest of the run"
    );
}

#[test]
fn a_killed_run_resumes_without_losing_finished_work() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), &["/a", "/b", "/c"], json!([]));
    let data = dir.path().join("data");
    let cache = data.join("enrich-cache").join("answers.jsonl");
    let slow = FaultLlm::start(|_, seen| {
        if seen.prompt().contains("/c") {
            Reply::Hang(Duration::from_secs(120))
        } else {
            Reply::Good
        }
    });
    let mut child = shortlist()
        .args([
            "enrich",
            "--llm-url",
            &slow.url,
            "--llm-model",
            MODEL,
            "--concurrency",
            "1",
            "--timeout",
            "300",
            "--per-task",
            "--check",
            "off",
        ])
        .args([
            "--tasks",
            "description,summary",
            "--data-dir",
            data.to_str().unwrap(),
            spec.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let lines = || {
        std::fs::read_to_string(&cache)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    while lines() < 4 || slow.seen().len() < 5 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the first endpoints never finished"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert!(
        !enriched_path(&spec).exists(),
        "the copy is written only at the end"
    );

    let fresh = FaultLlm::start(|_, _| Reply::Good);
    let r = run_llm(&fresh, &spec, &["--tasks", "description,summary"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(s["cache_hits"], 4, "{s}");
    assert!(
        r.stderr
            .contains("enriched 3/3 endpoints (2 from the cache)"),
        "the progress line tells cached endpoints apart: {}",
        r.stderr
    );
    let asked: Vec<String> = fresh.seen().iter().map(|x| x.prompt()).collect();
    assert_eq!(asked.len(), 2, "only /c's two tasks: {asked:?}");
    assert!(asked.iter().all(|p| p.contains("/c")));
    let doc = read_json(&enriched_path(&spec));
    for path in ["/a", "/b", "/c"] {
        assert_eq!(generator(op(&doc, path, "get"), "summary"), MODEL, "{path}");
    }
}

/// SIGKILL at random points, many times: after every kill the cache holds at least what it
/// held before (no finished enrichment is lost), the spec is untouched and an enriched copy,
/// if one was written, is whole; the run that finally completes asks only for what was never
/// answered, and the copy it writes covers every endpoint.
#[test]
fn sigkill_at_random_points_loses_no_finished_work() {
    const ENDPOINTS: usize = 40;
    const TASKS: usize = 2;
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = (0..ENDPOINTS).map(|i| format!("/r{i}")).collect();
    let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let spec = spec(dir.path(), &refs, json!([]));
    let original = std::fs::read(&spec).unwrap();
    let data = dir.path().join("data");
    let cache = data.join("enrich-cache").join("answers.jsonl");
    // Every answer takes a while, so a run spans long enough for kills to land inside it.
    let server = FaultLlm::start(|_, _| Reply::Hang(Duration::from_millis(120)));
    let spawn = || {
        shortlist()
            .args(["enrich", "--llm-url", &server.url, "--llm-model", MODEL])
            .args(["--concurrency", "1", "--tasks", "description,summary"])
            .args(["--per-task", "--check", "off"])
            .args(["--data-dir", data.to_str().unwrap(), spec.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let answers = || -> usize {
        std::fs::read_to_string(&cache)
            .map(|t| {
                t.lines()
                    .filter(|l| serde_json::from_str::<Value>(l).is_ok())
                    .count()
            })
            .unwrap_or(0)
    };
    // A full run takes about ENDPOINTS * TASKS * 120 ms (~10 s); each round is killed within
    // its first second (while loading, replaying the cache or asking), so the rounds
    // together finish about half of the work and every round has work left to interrupt.
    let span_ms = 1000;
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let rounds = 12;
    let mut before = 0;
    for round in 0..rounds {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = Duration::from_millis(seed % span_ms);
        let mut child = spawn();
        std::thread::sleep(at);
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let now = answers();
        assert!(
            now >= before,
            "round {round}: kill at {at:?} lost answers ({before} -> {now})"
        );
        before = now;
        assert_eq!(
            std::fs::read(&spec).unwrap(),
            original,
            "round {round}: spec touched"
        );
        let copy = enriched_path(&spec);
        if copy.exists() {
            read_json(&copy); // panics on a torn copy
        }
    }
    assert!(
        before < ENDPOINTS * TASKS,
        "the kills should have interrupted the work, yet all {before} answers were in"
    );
    let asked_before = server.seen().len();
    // Each kill can lose at most the one answer in flight (concurrency 1).
    assert!(
        asked_before <= before + rounds,
        "asked {asked_before} times for {before} kept answers in {rounds} rounds"
    );

    let mut child = spawn();
    assert!(child.wait().unwrap().success(), "the resumed run completes");
    let asked_after = server.seen().len() - asked_before;
    assert_eq!(
        asked_after,
        ENDPOINTS * TASKS - before,
        "the completing run asks only for what was never answered"
    );
    let doc = read_json(&enriched_path(&spec));
    for path in &paths {
        assert_eq!(generator(op(&doc, path, "get"), "summary"), MODEL, "{path}");
        assert_eq!(
            generator(op(&doc, path, "get"), "description"),
            MODEL,
            "{path}"
        );
    }
}

#[test]
fn an_example_a_reviewer_rejected_is_never_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let params =
        json!([{"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}}]);
    let spec = spec(dir.path(), &["/a"], params);
    // 1 until the fourth request, then 4.
    let server = FaultLlm::start(|n, _| {
        let page = if n < 3 { 1 } else { 4 };
        Reply::Content(format!(r#"{{"examples": {{"page": {page}}}}}"#))
    });
    let r = run_llm(&server, &spec, &["--tasks", "param-examples"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let enriched = enriched_path(&spec);
    let mut doc = read_json(&enriched);
    let p = doc["paths"]["/a"]["get"]["parameters"][0]
        .as_object_mut()
        .unwrap();
    assert_eq!(p["example"], 1);
    // A reviewer rejects it, as the console records it.
    p.remove("example");
    p.remove("x-shortlist-generated");
    p.insert("x-shortlist-rejected".into(), json!({"example": [1]}));
    std::fs::write(&enriched, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    // Told, the model gives 1 twice; the heuristic's fallback is 1 too: nothing is written.
    let r = run_llm(&server, &spec, &["--tasks", "param-examples"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = server.seen();
    assert_eq!(seen.len(), 3, "{}", r.stderr);
    assert!(
        seen[1].prompt().contains("rejected by a reviewer")
            && seen[1].prompt().contains("example of parameter page 1"),
        "{}",
        seen[1].prompt()
    );
    let s = r.summary();
    assert_eq!(
        s["rejected_before"],
        json!(["api GET /a: page example"]),
        "{s}"
    );
    let a = op(&read_json(&enriched), "/a", "get").clone();
    assert!(param(&a, "page").get("example").is_none(), "{a}");
    assert_eq!(
        param(&a, "page")["x-shortlist-rejected"]["example"],
        json!([1])
    );

    // Another answer later is written, and awaits review.
    let r = run_llm(
        &server,
        &spec,
        &["--tasks", "param-examples", "--retry-failed"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let a = op(&read_json(&enriched), "/a", "get").clone();
    assert_eq!(param(&a, "page")["example"], 4, "{}", r.stderr);
    assert_eq!(generator(param(&a, "page"), "example"), MODEL);
}
