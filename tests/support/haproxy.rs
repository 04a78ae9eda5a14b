//! A real load balancer for tests: Debian's `haproxy` (installed by
//! scripts/setup-test-tools.sh) in the foreground on 127.0.0.1, with a config written into a
//! temporary folder and its statistics page readable as CSV, so a test can see which
//! backend server answered how many requests and which ones the health checks took out.
//!
//! Use with `#[path = "support/haproxy.rs"] mod haproxy;`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// The binary, or a failure that says how to install it: a test that needs a balancer
/// never passes without one.
pub fn binary() -> PathBuf {
    [
        "/usr/sbin/haproxy",
        "/usr/bin/haproxy",
        "/usr/local/sbin/haproxy",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .unwrap_or_else(|| {
        panic!("HAProxy is not installed (no haproxy binary): run ./scripts/setup-test-tools.sh")
    })
}

/// A running HAProxy; killed when dropped.
pub struct Haproxy {
    child: Child,
    dir: tempfile::TempDir,
    /// `http://127.0.0.1:PORT/stats;csv`.
    stats_url: String,
    http: reqwest::Client,
}

/// One row of the statistics: a backend server's state and counters.
#[derive(Debug, Clone, Default)]
pub struct ServerStats {
    /// `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `MAINT`...
    pub status: String,
    /// Responses with a 2xx status this server gave.
    pub http_2xx: u64,
    /// Requests sent to this server (each HTTP request is one session in HTTP mode).
    pub sessions: u64,
}

impl Haproxy {
    /// Writes `config` (which must contain a `listen` or `frontend` serving `stats uri /stats`
    /// on `stats_port`) and starts HAProxy on it, after checking it with `-c`.
    pub async fn start(config: &str, stats_port: u16) -> Haproxy {
        let bin = binary();
        let dir = tempfile::Builder::new()
            .prefix("shortlist-haproxy-")
            .tempdir()
            .expect("temp dir");
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(&cfg, config).expect("write haproxy.cfg");
        let check = Command::new(&bin)
            .arg("-c")
            .arg("-f")
            .arg(&cfg)
            .output()
            .await
            .expect("run haproxy -c");
        assert!(
            check.status.success(),
            "haproxy refused the config: {}{}\n{config}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let log = std::fs::File::create(dir.path().join("haproxy.log")).expect("log file");
        let child = Command::new(&bin)
            // -db: foreground, no daemon; -W would add a master process to keep track of.
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .expect("start haproxy");
        let h = Haproxy {
            child,
            dir,
            stats_url: format!("http://127.0.0.1:{stats_port}/stats;csv"),
            http: reqwest::Client::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while h.try_stats().await.is_none() {
            assert!(
                Instant::now() < deadline,
                "haproxy did not start: {}",
                h.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        h
    }

    /// What HAProxy printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("haproxy.log")).unwrap_or_default()
    }

    async fn try_stats(&self) -> Option<String> {
        let res = self.http.get(&self.stats_url).send().await.ok()?;
        if !res.status().is_success() {
            return None;
        }
        res.text().await.ok()
    }

    /// The servers of `backend`, by name.
    pub async fn servers(&self, backend: &str) -> HashMap<String, ServerStats> {
        let csv = self
            .try_stats()
            .await
            .unwrap_or_else(|| panic!("haproxy statistics unavailable: {}", self.log()));
        parse_servers(&csv, backend)
    }

    /// Waits up to `within` until every server of `backend` in `names` has `status`.
    pub async fn wait_status(&self, backend: &str, names: &[&str], status: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let now = self.servers(backend).await;
            if names
                .iter()
                .all(|n| now.get(*n).is_some_and(|s| s.status == status))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "servers {names:?} of {backend} not {status} within {within:?}: {now:?}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The server rows of `backend` in HAProxy's CSV statistics (header `# pxname,svname,...`).
fn parse_servers(csv: &str, backend: &str) -> HashMap<String, ServerStats> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .trim_start_matches("# ")
        .split(',')
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in haproxy statistics: {header:?}"))
    };
    let (px, sv, status, h2xx, stot) = (
        col("pxname"),
        col("svname"),
        col("status"),
        col("hrsp_2xx"),
        col("stot"),
    );
    let num = |f: &[&str], i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| {
            f.get(px) == Some(&backend)
                && !matches!(f.get(sv), Some(&"BACKEND") | Some(&"FRONTEND"))
        })
        .map(|f| {
            (
                f[sv].to_string(),
                ServerStats {
                    status: f.get(status).unwrap_or(&"").to_string(),
                    http_2xx: num(&f, h2xx),
                    sessions: num(&f, stot),
                },
            )
        })
        .collect()
}
