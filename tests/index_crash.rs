//! Killing `shortlist index` at any point leaves the previous index loadable.

use shortlist::index::catalog_index::EndpointIndex;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn catalogs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogs")
}

fn index_cmd(data: &Path, specs: &[PathBuf]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shortlist"));
    c.arg("index")
        .arg("--data-dir")
        .arg(data)
        .args(specs)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

#[test]
fn sigkill_during_indexing_keeps_the_previous_index() {
    let data = tempfile::tempdir().unwrap();
    let small = vec![catalogs().join("tmdb.json")];
    assert!(index_cmd(data.path(), &small).status().unwrap().success());

    // Time one full build of the larger catalog so kills land across its whole run.
    let big = vec![catalogs()];
    let scratch = tempfile::tempdir().unwrap();
    let t = Instant::now();
    assert!(index_cmd(scratch.path(), &big).status().unwrap().success());
    let full = t.elapsed();
    let all = EndpointIndex::open(scratch.path())
        .ok()
        .flatten()
        .map(|i| i.len())
        .expect("the full index");

    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut outcomes = (0, 0);
    for round in 0..12 {
        // xorshift: deterministic "random" kill points between 0 and the full build time.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = full.mul_f64((seed % 1000) as f64 / 1000.0);
        let mut child = index_cmd(data.path(), &big).spawn().unwrap();
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let index = EndpointIndex::open(data.path())
            .unwrap_or_else(|e| panic!("round {round}: index unreadable after kill at {at:?}: {e}"))
            .unwrap_or_else(|| panic!("round {round}: index gone after kill at {at:?}"));
        match index.len() {
            54 => outcomes.0 += 1,
            n if n == all => outcomes.1 += 1,
            n => {
                panic!("round {round}: index holds {n} endpoints, neither the old nor the new one")
            }
        }
        assert!(index
            .similarity_all(&index.vectors().row(0).unwrap())
            .is_ok());
        // Restore the small index so every round kills a build that has work to do.
        if index.len() == all {
            assert!(index_cmd(data.path(), &small).status().unwrap().success());
        }
    }
    eprintln!(
        "kills that left the old index: {}, after the new one was published: {}",
        outcomes.0, outcomes.1
    );
}
