//! Starting a `shortlist` server process in a test: spawn it with stderr piped, wait for
//! the line that says where it listens, and keep reading its stderr afterwards (into a
//! log the test can search), so the server never blocks on a full pipe.
//!
//! Used by `server_common`, `console_common` and `support` (`#[path]` where needed).
#![allow(dead_code)]

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A started server process; killed when dropped.
pub struct Started {
    pub child: Child,
    /// `host:port` as the listening line gave it (after `marker`).
    pub addr: String,
    pub port: u16,
    /// Its stderr up to and including the listening line.
    pub startup: String,
    /// Its stderr since.
    pub log: Arc<Mutex<String>>,
}

/// Spawns `cmd` and waits up to `within` for a stderr line containing `marker` followed by
/// an address (`127.0.0.1:PORT`, `0.0.0.0:PORT/...`, or only `PORT` when the marker ends
/// in the host). Panics with everything the process printed if it never comes.
pub async fn start(mut cmd: Command, marker: &str, within: Duration) -> Started {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn shortlist");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut startup = String::new();
    let found = tokio::time::timeout(within, async {
        while let Ok(Some(line)) = lines.next_line().await {
            startup.push_str(&line);
            startup.push('\n');
            if let Some(rest) = line.split(marker).nth(1) {
                let addr: String = rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '/')
                    .collect();
                let port = addr.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
                if let Some(port) = port {
                    return Some((addr, port));
                }
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    let Some((addr, port)) = found else {
        panic!("the server did not start: {startup}");
    };
    let log = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&log);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(mut l) = sink.lock() {
                l.push_str(&line);
                l.push('\n');
            }
        }
    });
    Started {
        child,
        addr,
        port,
        startup,
        log,
    }
}
