//! The synthetic catalog: deterministic OpenAPI specs of any size with distinct,
//! realistic-looking operations, and requests against them.

use serde_json::{json, Map};
use std::path::{Path, PathBuf};

const RESOURCES: &[&str] = &[
    "invoice",
    "customer",
    "order",
    "shipment",
    "product",
    "warehouse",
    "employee",
    "payroll",
    "ticket",
    "incident",
    "device",
    "sensor",
    "alert",
    "report",
    "budget",
    "contract",
    "vendor",
    "payment",
    "refund",
    "subscription",
    "playlist",
    "track",
    "album",
    "artist",
    "movie",
    "series",
    "episode",
    "review",
    "comment",
    "user",
    "group",
    "role",
    "permission",
    "token",
    "webhook",
    "repository",
    "branch",
    "commit",
    "pipeline",
    "deployment",
];
const QUALIFIERS: &[&str] = &[
    "",
    "archived",
    "draft",
    "shared",
    "public",
    "private",
    "regional",
    "scheduled",
    "recurring",
    "external",
    "internal",
    "pending",
    "approved",
    "rejected",
    "historical",
    "summary",
    "detailed",
    "audit",
    "bulk",
    "tagged",
    "favorite",
    "recent",
    "legacy",
    "premium",
    "trial",
];
const ACTIONS: &[(&str, &str, bool)] = &[
    ("get", "Retrieve a single", true),
    ("get", "List all", false),
    ("post", "Create a new", false),
    ("put", "Replace an existing", true),
    ("patch", "Update fields of a", true),
    ("delete", "Delete a", true),
    ("post", "Export the", true),
    ("get", "Count the", false),
    ("post", "Import a batch of", false),
    ("get", "Show the change history of a", true),
];

/// API domains that prefix paths once a catalog outgrows one domain's 10,000 operations.
const DOMAINS: &[&str] = &[
    "",
    "billing",
    "logistics",
    "hr",
    "support",
    "iot",
    "finance",
    "media",
    "identity",
    "devops",
    "sales",
    "marketing",
    "legal",
    "research",
    "facilities",
    "procurement",
];

/// A deterministic OpenAPI 3.0 spec with `size` distinct, realistic-looking operations
/// (up to 160,000).
/// Operations per synthetic spec file: a catalog larger than this is written as several
/// APIs (`synthetic-0.json`, `synthetic-1.json`, ... under path prefixes `/r1`, `/r2`), as
/// a platform's catalog would be, and each file stays under the 64 MiB spec limit.
const PER_FILE: usize = 100_000;

/// The synthetic catalog of `size` operations: one file up to [`PER_FILE`], else several.
pub fn synthetic_specs(dir: &Path, size: usize) -> Vec<PathBuf> {
    if size <= PER_FILE {
        return vec![synthetic_spec(dir, size)];
    }
    (0..size.div_ceil(PER_FILE))
        .map(|k| {
            let n = PER_FILE.min(size - k * PER_FILE);
            let one = synthetic_spec_in(dir, n, &format!("/r{k}"), &format!("synthetic-{k}.json"));
            eprintln!("wrote {} ({n} operations)", one.display());
            one
        })
        .collect()
}

pub fn synthetic_spec(dir: &Path, size: usize) -> PathBuf {
    synthetic_spec_in(dir, size, "", "synthetic.json")
}

fn synthetic_spec_in(dir: &Path, size: usize, prefix: &str, file: &str) -> PathBuf {
    let mut paths = Map::new();
    let mut made = 0;
    'outer: for d in DOMAINS {
        for (qi, q) in QUALIFIERS.iter().enumerate() {
            for r in RESOURCES {
                for (ai, (method, verb, by_id)) in ACTIONS.iter().enumerate() {
                    if made == size {
                        break 'outer;
                    }
                    let base = match (d.is_empty(), q.is_empty()) {
                        (true, true) => format!("{prefix}/{r}s"),
                        (true, false) => format!("{prefix}/{q}/{r}s"),
                        (false, true) => format!("{prefix}/{d}/{r}s"),
                        (false, false) => format!("{prefix}/{d}/{q}/{r}s"),
                    };
                    let path = match (*by_id, ai) {
                        (true, 6) => format!("{base}/{{{r}_id}}/export"),
                        (true, 9) => format!("{base}/{{{r}_id}}/history"),
                        (true, _) => format!("{base}/{{{r}_id}}"),
                        (false, 7) => format!("{base}/count"),
                        (false, 8) => format!("{base}/import"),
                        _ => base.clone(),
                    };
                    let label = [*d, *q, *r]
                        .iter()
                        .filter(|w| !w.is_empty())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ");
                    let item = paths.entry(path.clone()).or_insert_with(|| json!({}));
                    let mut params = vec![];
                    if path.contains('{') {
                        params.push(json!({"name": format!("{r}_id"), "in": "path", "required": true, "schema": {"type": "string"}, "description": format!("Identifier of the {label}.")}));
                    }
                    if *method == "get" && !by_id {
                        params.push(json!({"name": "page", "in": "query", "schema": {"type": "integer"}, "description": "Page number."}));
                    }
                    item[*method] = json!({
                        "operationId": format!("{method}_{}{}", label.replace(' ', "_"), ai),
                        "summary": format!("{verb} {label}"),
                        "description": format!("{verb} {label} records of the {d} {q} {r} service. Variant {qi}."),
                        "parameters": params,
                        "responses": {"200": {"description": "OK"}},
                    });
                    made += 1;
                }
            }
        }
    }
    let spec = json!({"openapi": "3.0.0", "info": {"title": "Synthetic Enterprise API", "version": "1"},
        "servers": [{"url": "https://api.example.com"}], "paths": paths});
    let p = dir.join(file);
    std::fs::write(&p, spec.to_string()).expect("write synthetic spec");
    p
}

pub fn synthetic_queries() -> Vec<String> {
    let mut q = Vec::new();
    for (i, r) in RESOURCES.iter().enumerate() {
        let qual = QUALIFIERS[i % QUALIFIERS.len()];
        q.push(format!(
            "show me the change history of the {qual} {r} with id 42"
        ));
        q.push(format!("how many {r}s are there"));
        q.push(format!("create a {r}"));
    }
    q
}
