//! A stand-in for an egress proxy on 127.0.0.1: it records each request head exactly as it
//! arrived (the request line, in absolute form for a proxy, and the headers) and answers
//! it itself with `answer` (or 403 to a `CONNECT`), so a test sees what was handed to a
//! proxy and whether the proxy's answer came back as a tool's result.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request head as received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET http://host/path HTTP/1.1`.
    pub line: String,
    /// Header lines as sent, `name: value`.
    pub headers: Vec<String>,
}

impl Seen {
    /// The value of a header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }
}

/// A running recording proxy; stops with its runtime.
pub struct Proxy {
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Proxy {
    /// Starts one that answers every request with 200 and `answer` as a JSON body; with
    /// `echo`, the body is the request head instead (a proxy that repeats what it got).
    pub async fn start(answer: &'static str, echo: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_string();
                    let mut lines = head.split("\r\n").take_while(|l| !l.is_empty());
                    let line = lines.next().unwrap_or_default().to_string();
                    let headers: Vec<String> = lines.map(str::to_string).collect();
                    let connect = line.starts_with("CONNECT ");
                    log.lock().unwrap().push(Seen { line, headers });
                    let body = if echo {
                        serde_json::json!({ "head": head }).to_string()
                    } else {
                        answer.to_string()
                    };
                    let status = if connect { "403 Forbidden" } else { "200 OK" };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(reply.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Proxy { port, seen }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Everything received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}
