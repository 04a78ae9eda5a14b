//! Starting an MCP server as a child process.
//!
//! The child gets exactly the environment its entry allows ([`McpSource::child_env`]),
//! runs in its own process group so that stopping it stops whatever it started (`npx`
//! starts `node`, `uvx` starts `python`), and its stderr goes to the log under the
//! server's id, one line at a time and bounded, never to shortlist's stdout, which in
//! stdio mode belongs to the protocol.

use crate::catalog::mcp_config::McpSource;
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::transport::TokioChildProcess;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

/// The longest stderr line logged; the rest of it is dropped.
const MAX_LOG_LINE: usize = 4_000;

/// Starts the child an entry describes, connected over its stdin and stdout.
pub fn spawn(server: &str, source: &McpSource) -> std::io::Result<TokioChildProcess> {
    let program = source
        .command
        .as_deref()
        .ok_or_else(|| std::io::Error::other("no command to start"))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&source.args)
        .env_clear()
        .envs(source.child_env(|k| std::env::var(k).ok()))
        .kill_on_drop(true);
    if let Some(dir) = &source.cwd {
        cmd.current_dir(dir);
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    let (child, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(stderr) = stderr {
        let server = server.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match (&mut lines)
                    .take(MAX_LOG_LINE as u64 * 4)
                    .read_until(b'\n', &mut buf)
                    .await
                {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = crate::text::clip_chars(line.trim_end(), MAX_LOG_LINE);
                        if !line.is_empty() {
                            tracing::info!(server = %server, "stderr: {line}");
                        }
                    }
                }
            }
        });
    }
    Ok(child)
}
