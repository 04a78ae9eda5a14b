//! Spec loading under hostile sizes: `cargo bench --bench spec_load`.
//!
//! Two tables, each row measured in a fresh child process (peak memory is per process):
//!
//! - **Big valid specs**: the TMDB spec (`catalogs/tmdb.json`) with its paths copied
//!   under fresh prefixes until the file is 1, 10, 30 and 60 MiB, written as JSON and as
//!   YAML (60 MiB of YAML is over the YAML limit: the row measures the refusal).
//!   For each: wall time and peak resident memory of parsing alone
//!   (`source::read_document_packed`, as a load reads it) and of the whole load
//!   (`Catalog::load`: parse, resolve, normalize, name), and peak memory above the
//!   process's baseline as a multiple of the file size.
//! - **Endpoint-dense specs**: `ops` operations of one path parameter and one response each
//!   (64,000 by default, about 20 MB of YAML), as JSON and YAML: the same figures. Nothing
//!   in them is shared through `$ref`s, so the parsed document's many small collections
//!   weigh more than in the copied TMDB spec.
//! - **Deep nesting**: documents that are nothing but nesting (JSON objects, YAML flow
//!   sequences, YAML block sequences), from 200,000 levels up to the largest file each
//!   format accepts (64 MiB of JSON, 32 MiB of YAML): time to rejection.
//!
//! Options: `--sizes 1,10` (MiB, default 1,10,30,60), `--dense 64000` (operations, default
//! 64000), `--keep DIR` (write the specs there and
//! keep them). Figures go to stdout as Markdown; `docs/benchmarks.md` records a run.

use serde_json::{Map, Value};
use shortlist::catalog::{source, Catalog};
use std::path::{Path, PathBuf};
use std::time::Instant;

const MIB: usize = 1024 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], Path::new(&args[i + 2]));
        return;
    }
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let sizes: Vec<usize> = value("--sizes")
        .unwrap_or_else(|| "1,10,30,60".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let dense_ops: Vec<usize> = value("--dense")
        .unwrap_or_else(|| "64000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = value("--keep")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("spec dir");

    println!("| spec | file | parse: time | parse: peak RSS (x file) | load: time | load: peak RSS (x file) | endpoints |");
    println!("|---|---|---|---|---|---|---|");
    let base = base_spec();
    // YAML of the same document is smaller: grow it further to reach the same file size.
    let yaml_ratio = serde_json::to_string_pretty(&base).expect("json").len() as f64
        / shortlist::enrich::yaml_out::to_string(&base).len() as f64;
    for &mib in &sizes {
        for ext in ["json", "yaml"] {
            let target = if ext == "json" {
                mib * MIB
            } else {
                (mib as f64 * MIB as f64 * yaml_ratio) as usize
            };
            let doc = grow(&base, target);
            let path = dir.join(format!("big-{mib}mib.{ext}"));
            let text = if ext == "json" {
                serde_json::to_string_pretty(&doc).expect("json")
            } else {
                shortlist::enrich::yaml_out::to_string(&doc)
            };
            std::fs::write(&path, &text).expect("write spec");
            let len = text.len();
            drop(text);
            let parse = run_child("parse", &path);
            let load = run_child("load", &path);
            println!(
                "| {mib} MiB {ext} | {:.1} MB | {:.2} s | {} | {:.2} s | {} | {} {} |",
                len as f64 / 1e6,
                parse.secs,
                parse.memory(len),
                load.secs,
                load.memory(len),
                load.count,
                if load.count == 0 { &load.message } else { "" }
            );
        }
    }

    // Endpoint-dense specs: many small operations, nothing shared, so the parsed
    // document's many small collections, not its text, decide the memory.
    for ops in dense_ops {
        for ext in ["json", "yaml"] {
            let doc = dense(ops);
            let path = dir.join(format!("dense-{ops}.{ext}"));
            let text = if ext == "json" {
                serde_json::to_string_pretty(&doc).expect("json")
            } else {
                shortlist::enrich::yaml_out::to_string(&doc)
            };
            drop(doc);
            std::fs::write(&path, &text).expect("write spec");
            let len = text.len();
            drop(text);
            let parse = run_child("parse", &path);
            let load = run_child("load", &path);
            println!(
                "| {ops} small operations {ext} | {:.1} MB | {:.2} s | {} | {:.2} s | {} | {} {} |",
                len as f64 / 1e6,
                parse.secs,
                parse.memory(len),
                load.secs,
                load.memory(len),
                load.count,
                if load.count == 0 { &load.message } else { "" }
            );
        }
    }

    println!();
    println!("| deep document | file | levels | time to rejection | peak RSS | message |");
    println!("|---|---|---|---|---|---|");
    let deep: Vec<(&str, &str, &str, &str, usize)> = vec![
        ("JSON objects", "json", "{\"a\":", "}", 200_000),
        ("YAML flow sequences", "yaml", "[", "]", 200_000),
        ("YAML block sequences", "yaml", "- ", "", 200_000),
        // The largest files each format accepts: 64 MiB of JSON, 32 MiB of YAML.
        ("JSON objects", "json", "{\"a\":", "}", 63 * MIB / 6),
        ("YAML flow sequences", "yaml", "[", "]", 31 * MIB / 2),
        ("YAML flow mappings", "yaml", "{a: ", "}", 31 * MIB / 5),
        ("YAML block sequences", "yaml", "- ", "", 31 * MIB / 2),
    ];
    for (name, ext, open, close, levels) in deep {
        let path = dir.join(format!("deep-{levels}.{ext}"));
        let mut text = String::with_capacity(levels * (open.len() + close.len()) + 64);
        if ext == "json" {
            text.push_str("{\"openapi\":\"3.0.0\",\"paths\":{},\"x\":");
        }
        for _ in 0..levels {
            text.push_str(open);
        }
        text.push('1');
        for _ in 0..levels {
            text.push_str(close);
        }
        if ext == "json" {
            text.push('}');
        }
        std::fs::write(&path, &text).expect("write deep spec");
        let r = run_child("parse", &path);
        println!(
            "| {name} | {:.1} MB | {levels} | {:.2} s | {:.0} MB | {} |",
            text.len() as f64 / 1e6,
            r.secs,
            r.peak_kb as f64 / 1024.0,
            r.message
        );
    }
}

/// What a child reports.
struct Measured {
    secs: f64,
    peak_kb: u64,
    baseline_kb: u64,
    count: usize,
    message: String,
}

impl Measured {
    fn memory(&self, file_len: usize) -> String {
        let above = self.peak_kb.saturating_sub(self.baseline_kb) as f64 * 1024.0;
        format!(
            "{:.0} MB ({:.1}x)",
            self.peak_kb as f64 / 1024.0,
            above / file_len as f64
        )
    }
}

fn run_child(mode: &str, path: &Path) -> Measured {
    let exe = std::env::current_exe().expect("own path");
    let out = std::process::Command::new(exe)
        .args(["--child", mode])
        .arg(path)
        .output()
        .expect("run child");
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.trim().splitn(5, '\t').collect();
    if fields.len() < 5 {
        panic!(
            "child {mode} {} failed: {}{}",
            path.display(),
            text,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Measured {
        secs: fields[0].parse().unwrap_or(f64::NAN),
        peak_kb: fields[1].parse().unwrap_or(0),
        baseline_kb: fields[2].parse().unwrap_or(0),
        count: fields[3].parse().unwrap_or(0),
        message: fields[4].to_string(),
    }
}

/// Child mode: parse or load one file, print `secs peak_kb baseline_kb endpoints message`.
fn child(mode: &str, path: &Path) {
    let baseline = status_kb("VmHWM");
    let start = Instant::now();
    let (count, message) = match mode {
        // As a catalog load reads it: path items packed.
        "parse" => match source::read_document_packed(path) {
            Ok(p) => (usize::from(p.value.is_object()), "parsed".to_string()),
            Err(e) => (0, e.message),
        },
        _ => {
            let cat = Catalog::load_paths(&[path.to_path_buf()]);
            let msg = cat
                .errors()
                .next()
                .map(|p| p.message.clone())
                .unwrap_or_else(|| "loaded".into());
            (cat.endpoints.len(), msg)
        }
    };
    let secs = start.elapsed().as_secs_f64();
    let message = shortlist::text::clip_chars(&message.replace(['\t', '\n', '|'], " "), 90);
    println!(
        "{secs:.3}\t{}\t{baseline}\t{count}\t{message}",
        status_kb("VmHWM")
    );
}

/// A `/proc/self/status` figure in KiB.
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn base_spec() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("catalogs/tmdb.json")).expect("tmdb.json");
    serde_json::from_str(&text).expect("tmdb.json parses")
}

/// The base spec with its paths copied under `/copyN` prefixes (operation ids suffixed)
/// until its pretty JSON is about `target` bytes.
fn grow(base: &Value, target: usize) -> Value {
    let paths = base["paths"].as_object().expect("paths").clone();
    let one_copy = serde_json::to_string_pretty(&Value::Object(paths.clone()))
        .expect("json")
        .len();
    let whole = serde_json::to_string_pretty(base).expect("json").len();
    let copies = target.saturating_sub(whole) / one_copy;
    let mut all = paths.clone();
    for n in 0..copies {
        for (p, item) in &paths {
            let mut item = item.clone();
            if let Some(ops) = item.as_object_mut() {
                for op in ops.values_mut() {
                    if let Some(id) = op.get("operationId").and_then(Value::as_str) {
                        let id = format!("{id}Copy{n}");
                        op["operationId"] = Value::String(id);
                    }
                }
            }
            all.insert(format!("/copy{n}{p}"), item);
        }
    }
    let mut doc: Map<String, Value> = base.as_object().expect("object").clone();
    doc.insert("paths".into(), Value::Object(all));
    Value::Object(doc)
}

/// A spec of `ops` small operations: `GET /resourcesN/{id}` with an operation id, a summary,
/// a description, one path parameter and one response.
fn dense(ops: usize) -> Value {
    let mut paths = Map::new();
    for i in 0..ops {
        let op = serde_json::json!({
            "operationId": format!("getResource{i}"),
            "summary": format!("Get resource {i}"),
            "description": format!("Returns resource {i}."),
            "parameters": [{
                "name": "id", "in": "path", "required": true, "schema": {"type": "string"}
            }],
            "responses": {"200": {"description": "The resource."}}
        });
        paths.insert(
            format!("/resources{i}/{{id}}"),
            serde_json::json!({ "get": op }),
        );
    }
    serde_json::json!({
        "openapi": "3.0.3",
        "info": {"title": "Dense", "version": "1.0"},
        "servers": [{"url": "https://api.example.com/v1"}],
        "paths": paths,
    })
}
