//! Peak memory of `shortlist check` on an endpoint-dense spec: many small operations, each
//! with one path parameter and one response, the shape whose many small collections once
//! made loading peak at 29 times the file's size. The bound is 10 times.
//!
//! One test in this file, so the process's children are the two `check` runs measured.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Largest peak resident memory of the children waited for so far, in bytes.
fn children_peak() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_CHILDREN is always valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage failed");
    // SAFETY: initialised by the successful call above.
    let kb = unsafe { usage.assume_init() }.ru_maxrss;
    kb as u64 * 1024
}

fn check(spec: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_shortlist"))
        .arg("check")
        .arg(spec)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ops` operations `GET /resourcesN/{id}`, as YAML.
fn dense_yaml(ops: usize) -> String {
    let mut s = String::from(
        "openapi: 3.0.3\ninfo:\n  title: Dense\n  version: '1.0'\nservers:\n  - url: https://api.example.com/v1\npaths:\n",
    );
    for i in 0..ops {
        let _ = write!(
            s,
            "  /resources{i}/{{id}}:\n    get:\n      operationId: getResource{i}\n      \
             summary: Get resource {i}\n      description: Returns resource {i}.\n      \
             parameters:\n        - name: id\n          in: path\n          required: true\n          \
             schema:\n            type: string\n      responses:\n        '200':\n          \
             description: The resource.\n"
        );
    }
    s
}

#[test]
fn an_endpoint_dense_spec_loads_in_at_most_ten_times_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // The process's own size first: a spec of a few operations.
    let small = dir.path().join("small.yaml");
    std::fs::write(&small, dense_yaml(3)).unwrap();
    check(&small);
    let baseline = children_peak();

    let dense = dir.path().join("dense.yaml");
    let text = dense_yaml(16_000);
    std::fs::write(&dense, &text).unwrap();
    check(&dense);
    let peak = children_peak();
    let ratio = peak.saturating_sub(baseline) as f64 / text.len() as f64;
    assert!(
        ratio <= 10.0,
        "{} bytes of YAML peaked at {peak} bytes, {baseline} before: {ratio:.1} times the file",
        text.len()
    );
}
