//! A minimal MCP client over a child's stdio, shared by the benchmarks: JSON-RPC lines
//! written and read by hand, so that what is timed is the server's cost, not an SDK's.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    /// Starts `cmd` (its stderr as the caller set it) and initializes a 2025-11-25 session.
    pub fn start(cmd: &mut Command) -> StdioClient {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut c = StdioClient {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        c.notify("notifications/initialized");
        c
    }

    pub fn notify(&mut self, method: &str) {
        let m = json!({"jsonrpc": "2.0", "method": method});
        writeln!(self.stdin, "{m}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and returns its result, skipping notifications (and any line that
    /// is not JSON).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{m}").expect("write");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed stdout");
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
