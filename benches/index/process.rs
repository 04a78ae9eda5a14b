//! What the benchmark reads about processes: peak and settled memory, CPU time, folder
//! sizes, and the cold start and memory of a fresh `shortlist` process.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A `shortlist serve` (stdio) on the same catalog and index: its peak and settled RSS
/// once it says it is ready, as `peak / settled MB`.
pub fn server_rss_mb(specs: &[PathBuf], data: &Path) -> String {
    use std::io::{BufRead, BufReader};
    let bin = env!("CARGO_BIN_EXE_shortlist");
    let mut child = match std::process::Command::new(bin)
        .arg("serve")
        .args(specs)
        .arg("--data-dir")
        .arg(data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return format!("cannot start: {e}"),
    };
    let stderr = child.stderr.take().expect("stderr");
    let mut ready = false;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("ready in") {
            ready = true;
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    let out = if ready {
        format!("{:.0} / {:.0} MB", field("VmHWM:"), field("VmRSS:"))
    } else {
        "not ready".to_string()
    };
    let _ = child.kill();
    let _ = child.wait();
    out
}

/// A fresh `shortlist search` process: open the index, load the model, answer one query.
pub fn cold_start(data: &Path, query: &str) -> Duration {
    let bin = env!("CARGO_BIN_EXE_shortlist");
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let out = std::process::Command::new(bin)
            .args(["search", query, "-k", "5", "--data-dir"])
            .arg(data)
            .output()
            .expect("run shortlist");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        best = best.min(t.elapsed());
    }
    best
}

pub fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

pub fn dir_size(p: &Path) -> u64 {
    let mut total = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let path = e.path();
            total += if path.is_dir() {
                dir_size(&path)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    total
}

/// CPU time of this process so far (user + system, every thread), from `/proc/self/stat`;
/// `None` where that file does not exist.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}
