//! The batched LLM path (the default: several endpoints of one API per request) against a
//! misbehaving server: transient failures are retried without losing the batch, an answer
//! that is not JSON is asked again in halves until the endpoint that breaks it is alone,
//! an answer that leaves an endpoint out asks again for that endpoint only (saying why),
//! a truncated answer keeps what was complete, a refused key stops the run without
//! leaking it, and a value a reviewer rejected is shown to the model and never taken again. The per-task path has its own tests (`enrich_faults.rs`).

#[path = "support/enrich_cli.rs"]
mod enrich_cli;
#[path = "support/fault_llm.rs"]
mod fault_llm;

use enrich_cli::*;
use fault_llm::{good_answer, FaultLlm, Reply};
use serde_json::{json, Value};
use shortlist::catalog::enriched_path;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MODEL: &str = "fault-model";

/// A spec of GET endpoints at `paths`, each with an operationId only.
fn spec(dir: &Path, paths: &[&str]) -> PathBuf {
    bare_gets(dir, paths, json!([]))
}

/// `shortlist enrich` in batches of 4 (the default), one request at a time, checks off.
fn run_batched(server: &FaultLlm, spec: &Path, extra: &[&str]) -> Run {
    let data = spec.parent().unwrap().join("data");
    let mut args = vec![
        "--llm-url",
        &server.url,
        "--llm-model",
        MODEL,
        "--json",
        "--concurrency",
        "1",
        "--batch",
        "4",
        "--check",
        "off",
        "--tasks",
        "description",
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push(spec.to_str().unwrap());
    enrich(&args)
}

fn generator(doc: &Value, path: &str) -> String {
    op(doc, path, "get")["x-shortlist-generated"]["description"]["generator"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Which of `paths` a request's prompt asks about.
fn asked(prompt: &str, paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| prompt.contains(&format!(" {p} ")) || prompt.contains(&format!(" {p}\n")))
        .map(|p| p.to_string())
        .collect()
}

#[test]
fn rate_limits_server_errors_and_timeouts_are_retried_for_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ["/alpha", "/bravo", "/charlie"];
    let spec = spec(dir.path(), &paths);
    let server = FaultLlm::start(|n, _| match n {
        0 => Reply::RateLimited(0),
        1 => Reply::Status(503, "overloaded".into()),
        2 => Reply::Hang(Duration::from_secs(4)),
        _ => Reply::Good,
    });
    let r = run_batched(&server, &spec, &["--timeout", "1", "--retries", "3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    assert_eq!(
        (s["requests"].as_u64(), s["retries"].as_u64()),
        (Some(4), Some(3)),
        "one batch, asked four times: {s}"
    );
    assert_eq!(s["by_llm"]["descriptions"], 3, "{s}");
    assert_eq!(s["failures"], json!([]));
    let seen = server.seen();
    assert_eq!(asked(&seen[3].prompt(), &paths), paths, "the same batch");
    let doc = read_json(&enriched_path(&spec));
    for p in paths {
        assert_eq!(generator(&doc, p), MODEL, "{p}");
    }
}

#[test]
fn an_answer_that_is_not_json_is_asked_again_in_halves() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ["/alpha", "/bravo", "/charlie", "/broken"];
    let spec = spec(dir.path(), &paths);
    let server = FaultLlm::start(|_, seen| {
        if seen.prompt().contains("/broken") {
            Reply::Content("Sure! Here are the descriptions you asked for.".into())
        } else {
            Reply::Good
        }
    });
    let r = run_batched(&server, &spec, &["--retries", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    let batches: Vec<Vec<String>> = server
        .seen()
        .iter()
        .map(|x| asked(&x.prompt(), &paths))
        .collect();
    assert_eq!(
        batches,
        vec![
            vec!["/alpha", "/bravo", "/charlie", "/broken"],
            vec!["/alpha", "/bravo"],
            vec!["/charlie", "/broken"],
            vec!["/charlie"],
            vec!["/broken"],
            vec!["/broken"],
        ],
        "halves until the breaking endpoint is alone, then one correction"
    );
    assert!(
        server.seen()[5]
            .prompt()
            .contains("your earlier answer could not be used: the answer is not a JSON object"),
        "the correction says what was wrong"
    );
    assert_eq!(s["failed_endpoints"], 1, "{s}");
    assert_eq!(s["by_llm"]["descriptions"], 3, "{s}");
    let failures: Vec<String> = serde_json::from_value(s["failures"].clone()).unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains("GET /broken") && failures[0].contains("no usable answer"),
        "{failures:?}"
    );
    let doc = read_json(&enriched_path(&spec));
    for p in ["/alpha", "/bravo", "/charlie"] {
        assert_eq!(generator(&doc, p), MODEL, "{p}");
    }
    assert_ne!(generator(&doc, "/broken"), MODEL);
}

#[test]
fn an_answer_that_leaves_an_endpoint_out_asks_for_that_endpoint_only() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ["/alpha", "/bravo", "/charlie"];
    let spec = spec(dir.path(), &paths);
    let server = FaultLlm::start(|n, seen| {
        if n > 0 {
            return Reply::Good;
        }
        // A valid answer for the first two ids, none for the third.
        let mut v: Value = serde_json::from_str(&good_answer(seen)).unwrap();
        let obj = v.as_object_mut().unwrap();
        let last = obj.keys().max().cloned().unwrap();
        obj.remove(&last);
        Reply::Content(v.to_string())
    });
    let r = run_batched(&server, &spec, &["--retries", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{s}");
    assert_eq!(asked(&seen[1].prompt(), &paths), vec!["/charlie"]);
    assert!(
        seen[1].prompt().contains("no answer given"),
        "the second request says why: {}",
        seen[1].prompt()
    );
    assert_eq!(s["by_llm"]["descriptions"], 3, "{s}");
    assert_eq!(s["failures"], json!([]));
    let doc = read_json(&enriched_path(&spec));
    for p in paths {
        assert_eq!(generator(&doc, p), MODEL, "{p}");
    }
}

#[test]
fn a_truncated_answer_keeps_the_endpoints_it_completed() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ["/alpha", "/bravo"];
    let spec = spec(dir.path(), &paths);
    let server = FaultLlm::start(|n, seen| {
        if n > 0 {
            return Reply::Good;
        }
        // The first endpoint's part is whole, the second's is cut off mid-string.
        let whole: Value = serde_json::from_str(&good_answer(seen)).unwrap();
        let ids: Vec<&String> = whole.as_object().unwrap().keys().collect();
        let first = json!({ ids[0].as_str(): whole[ids[0].as_str()].clone() }).to_string();
        let cut = format!(
            "{}, \"{}\": {{\"description\": \"Returns the bra",
            first.trim_end_matches('}'),
            ids[1]
        );
        Reply::Truncated(cut)
    });
    let r = run_batched(&server, &spec, &["--retries", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.summary();
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "{s}");
    assert_eq!(
        asked(&seen[1].prompt(), &paths),
        vec!["/bravo"],
        "only the cut-off endpoint is asked again"
    );
    assert_eq!(s["by_llm"]["descriptions"], 2, "{s}");
    let doc = read_json(&enriched_path(&spec));
    for p in paths {
        assert_eq!(generator(&doc, p), MODEL, "{p}");
    }
}

#[test]
fn a_refused_key_stops_a_batched_run_without_leaking_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        &["/alpha", "/bravo", "/charlie", "/delta", "/echo"],
    );
    let server = FaultLlm::start(|_, _| Reply::EchoAuth401);
    let key = "sk-test-SECRET-5151";
    let data = dir.path().join("data");
    let r: Run = shortlist()
        .args(["enrich", "--llm-url", &server.url, "--llm-model", MODEL])
        .args(["--api-key-env", "SHORTLIST_TEST_KEY", "--check", "off"])
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
    assert!(
        server.seen().len() <= 2,
        "the run stops instead of failing every batch"
    );
    assert!(!enriched_path(&spec).exists());
}

#[test]
fn a_rejected_value_is_shown_to_the_model_and_never_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let paths = ["/alpha", "/bravo"];
    let spec = spec(dir.path(), &paths);
    // The first three requests get the same valid answer; then every description is new.
    let reworded = "Lists the alpha records, newest first, one page at a time.";
    let server = FaultLlm::start(move |n, seen| {
        if n < 3 {
            return Reply::Good;
        }
        let mut v: Value = serde_json::from_str(&good_answer(seen)).unwrap();
        for e in v.as_object_mut().unwrap().values_mut() {
            e["description"] = json!(reworded);
        }
        Reply::Content(v.to_string())
    });
    let r = run_batched(&server, &spec, &["--retries", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let enriched = enriched_path(&spec);
    let mut doc = read_json(&enriched);
    // A reviewer rejects /alpha's description, as the console records it.
    let op = doc["paths"]["/alpha"]["get"].as_object_mut().unwrap();
    let first = op.remove("description").unwrap();
    op.remove("x-shortlist-generated");
    op.insert(
        "x-shortlist-rejected".into(),
        json!({"description": [first.clone()]}),
    );
    std::fs::write(&enriched, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    // The model is told, and answers the same again, twice: its answer is not written (the
    // heuristic's text is, as for any failed answer).
    let r = run_batched(&server, &spec, &["--retries", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        3,
        "/bravo came from the cache, /alpha was asked twice"
    );
    let told = seen[1].prompt();
    assert_eq!(asked(&told, &paths), ["/alpha"]);
    assert!(
        told.contains("rejected by a reviewer") && told.contains(first.as_str().unwrap()),
        "{told}"
    );
    assert!(
        seen[2].prompt().contains("repeats one a reviewer rejected"),
        "the second request says why: {}",
        seen[2].prompt()
    );
    let doc = read_json(&enriched);
    let alpha = op_of(&doc, "/alpha");
    assert_ne!(alpha.get("description"), Some(&first), "{alpha}");
    assert_eq!(
        generator(&doc, "/alpha"),
        "heuristic",
        "the fallback's own text: {alpha}"
    );
    assert!(
        r.stderr.contains("repeats one a reviewer rejected"),
        "{}",
        r.stderr
    );
    assert_eq!(alpha["x-shortlist-rejected"]["description"], json!([first]));
    assert_eq!(generator(&doc, "/bravo"), MODEL);

    // Asked with --retry-failed, the model now writes something else: it awaits review.
    let r = run_batched(&server, &spec, &["--retries", "0", "--retry-failed"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = read_json(&enriched);
    let alpha = op_of(&doc, "/alpha");
    assert_eq!(alpha["description"], reworded, "{alpha}");
    assert_eq!(generator(&doc, "/alpha"), MODEL);
    assert_eq!(alpha["x-shortlist-rejected"]["description"], json!([first]));
}

fn op_of<'a>(doc: &'a Value, path: &str) -> &'a Value {
    op(doc, path, "get")
}
