//! A throwaway PostgreSQL server for a test: Debian's `postgresql` package (installed by
//! scripts/setup-test-tools.sh), a fresh cluster in a temporary folder, listening on
//! 127.0.0.1 and a free port, no Unix socket. As root it runs as `nobody`: PostgreSQL
//! refuses to run as root.
//!
//! Use with `#[path = "support/postgres.rs"] mod postgres;`.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The user a root test runs PostgreSQL as.
const NOBODY: u32 = 65534;

/// A running cluster; stopped (immediately) and deleted when dropped.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
}

/// The newest installed server's `bin` folder.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("postgres").is_file() && b.join("initdb").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres): \
             run ./scripts/setup-test-tools.sh"
        )
    })
}

fn as_server_user(cmd: &mut Command) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(NOBODY).gid(NOBODY);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Postgres {
    /// initdb + start; waits until it accepts connections.
    pub fn start() -> Postgres {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("shortlist-pg-")
            .tempdir()
            .expect("temp dir");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("data dir");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            for p in [dir.path(), data.as_path()] {
                std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).expect("chown");
            }
        }
        let mut init = Command::new(bin.join("initdb"));
        init.args([
            "-A",
            "trust",
            "-U",
            "shortlist",
            "-E",
            "UTF8",
            "--no-sync",
            "-D",
        ])
        .arg(&data)
        .current_dir(dir.path())
        .stdout(Stdio::null());
        as_server_user(&mut init);
        let out = init.output().expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut pg = Postgres {
            bin,
            dir,
            port: free_port(),
            child: None,
        };
        pg.resume();
        pg
    }

    /// Starts the server again on the same cluster and port (after [`Self::kill`]).
    pub fn resume(&mut self) {
        let mut cmd = Command::new(self.bin.join("postgres"));
        cmd.arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.dir.path().join("postgres.log"))
                    .expect("postgres log"),
            ));
        as_server_user(&mut cmd);
        self.child = Some(cmd.spawn().expect("start postgres"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "postgres did not start listening: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        // Listening comes a moment before accepting logins (startup recovery).
        loop {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-t", "5"])
                .stdout(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "postgres is not ready: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What the server printed.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    /// A connection URL for database `postgres`.
    pub fn url(&self) -> String {
        format!("postgres://shortlist@127.0.0.1:{}/postgres", self.port)
    }

    /// A fresh database; its URL.
    pub fn database(&self, name: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "shortlist",
            ])
            .args(["-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!("CREATE DATABASE {name}"))
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "create database: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        format!("postgres://shortlist@127.0.0.1:{}/{name}", self.port)
    }

    /// The server goes away at once (immediate shutdown: every connection is cut).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill with a pid we spawned; SIGQUIT is PostgreSQL's immediate shutdown.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGQUIT);
            }
            let _ = c.wait();
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.kill();
    }
}
