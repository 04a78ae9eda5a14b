//! The real local LLM for tests: SmolLM2-135M behind llama.cpp's OpenAI-compatible server
//! (`scripts/llm-server.py`, run by the `.venv` that `scripts/setup-test-tools.sh` makes).
//!
//! A missing venv is a test failure with the fix in the message, never a silent skip: a
//! skipped test would hide that the real wire path went unproven.
//!
//! Use with `#[path = "support/llm.rs"] mod llm;`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model name the server answers to.
pub const MODEL: &str = "smollm2";

/// A running server, stopped (its process killed) when dropped.
pub struct LocalLlm {
    child: Child,
    pub port: u16,
    /// Base URL for `--llm-url` (ends in `/v1`).
    pub url: String,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl LocalLlm {
    /// Starts the server on a free port with one thread and waits until `/health` is ok.
    pub fn start() -> LocalLlm {
        let python = repo().join(".venv/bin/python");
        let script = repo().join("scripts/llm-server.py");
        assert!(
            python.is_file(),
            "{} is missing: run ./scripts/setup-test-tools.sh",
            python.display()
        );
        let port = free_port();
        let child = Command::new(&python)
            .arg(&script)
            .args(["--port", &port.to_string(), "--threads", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; run ./scripts/setup-test-tools.sh",
                    script.display()
                )
            });
        let mut llm = LocalLlm {
            child,
            port,
            url: format!("http://127.0.0.1:{port}/v1"),
        };
        llm.wait_ready(Duration::from_secs(60));
        llm
    }

    fn wait_ready(&mut self, limit: Duration) {
        let start = Instant::now();
        loop {
            if health_ok(self.port) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                let tail: String = err.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
                panic!(
                    "the LLM server exited ({status}): {tail}; run ./scripts/setup-test-tools.sh"
                );
            }
            assert!(
                start.elapsed() < limit,
                "the LLM server did not become healthy within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for LocalLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET /health` answers 200.
fn health_ok(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).contains(" 200")
}
