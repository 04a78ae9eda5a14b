//! Logs on stderr, as text for people or JSON Lines for a log shipper, and the
//! OpenTelemetry span export beside them.
//!
//! Both formats carry the same fields (time, level, target, the spans an event happened
//! in, the message and its fields) and pass through the same secret-masking writer
//! ([`shortlist::invoke::redact::LogWriter`]): a JSON line is masked as a whole, its
//! escapes included, before it reaches stderr. In text, the message and every field's
//! value have their control characters escaped ([`super::log_fields`]): text a caller
//! chose cannot start a line of its own. stdout is never written: in stdio mode it
//! belongs to the protocol.
//!
//! In JSON the status lines the commands print themselves (`shortlist: serving MCP on
//! ...`, errors) are JSON objects too: stderr is a pipe read by a thread that passes JSON
//! lines on and wraps any other line (masked like a log line) as
//! `{"timestamp", "level", "target": "shortlist", "message"}`, so a shipper never meets a
//! line it cannot parse.

use shortlist::invoke::redact::LogWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// How log lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `spans`, `message` and
    /// the event's fields).
    Json,
}

/// What must outlive the command: the span exporter, flushed when this is dropped, and
/// the thread that turns stderr into JSON Lines, finished then.
pub struct Logging {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    json_lines: Option<json_lines::Wrapper>,
}

impl Drop for Logging {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            if let Err(e) = p.shutdown() {
                eprintln!("shortlist: OpenTelemetry: spans not all exported: {e}");
            }
        }
        if let Some(w) = self.json_lines.take() {
            w.finish();
        }
    }
}

/// Sets up logging to stderr in `format` (`RUST_LOG` picks the level, `warn` by default)
/// and, when the environment names an OTLP collector, span export.
pub fn init(format: LogFormat) -> Logging {
    let json_lines = match format {
        LogFormat::Json => json_lines::Wrapper::start(),
        LogFormat::Text => None,
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    // Colour codes only on a terminal: a client that captures a server's stderr (every MCP
    // client does) would otherwise log escape sequences.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let text = tracing_subscriber::fmt::layer().with_writer(LogWriter);
    let fmt = match format {
        LogFormat::Text => text
            .fmt_fields(super::log_fields::EscapedFields)
            .with_ansi(ansi)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => text
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .with_filter(filter)
            .boxed(),
    };
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![fmt];
    let provider = match shortlist::telemetry::trace::provider_from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("shortlist: {e:#}; no spans are exported");
            None
        }
    };
    if let Some(p) = &provider {
        layers.push(shortlist::telemetry::trace::layer(p).boxed());
    }
    let _ = tracing_subscriber::registry().with(layers).try_init();
    Logging {
        provider,
        json_lines,
    }
}

/// Every stderr line a JSON object: see the module documentation.
#[cfg(unix)]
mod json_lines {
    use std::io::{BufRead, Write};
    use std::os::fd::{FromRawFd, OwnedFd};

    pub struct Wrapper {
        /// The real stderr, put back by [`Wrapper::finish`].
        saved: OwnedFd,
        thread: std::thread::JoinHandle<()>,
    }

    impl Wrapper {
        /// Points stderr at a pipe read by a thread that writes JSON Lines to the real
        /// stderr. `None` (stderr left as it is) when the descriptors cannot be made.
        pub fn start() -> Option<Wrapper> {
            let mut fds = [0; 2];
            // SAFETY: plain descriptor calls; every descriptor made is owned below.
            unsafe {
                if libc::pipe(fds.as_mut_ptr()) != 0 {
                    return None;
                }
                let (read, write) = (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]));
                let saved = libc::dup(2);
                if saved < 0 {
                    return None;
                }
                let saved = OwnedFd::from_raw_fd(saved);
                let out = saved.try_clone().ok()?;
                if libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&write), 2) < 0 {
                    return None;
                }
                drop(write);
                let thread = std::thread::Builder::new()
                    .name("stderr-json".into())
                    .spawn(move || copy(read, out))
                    .ok()?;
                Some(Wrapper { saved, thread })
            }
        }

        /// Puts the real stderr back (closing the pipe's last writer) and waits for the
        /// thread to write out what is left.
        pub fn finish(self) {
            // SAFETY: `saved` is a valid descriptor this wrapper owns.
            unsafe {
                libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&self.saved), 2);
            }
            let _ = self.thread.join();
        }
    }

    fn copy(read: OwnedFd, out: OwnedFd) {
        let lines = std::io::BufReader::new(std::fs::File::from(read));
        let mut out = std::fs::File::from(out);
        for line in lines.split(b'\n') {
            let Ok(line) = line else { break };
            let text = String::from_utf8_lossy(&line);
            let json = wrap(&text);
            let _ = out.write_all(json.as_bytes());
        }
    }

    /// A JSON object line as it is; any other line as the message of one.
    pub(super) fn wrap(line: &str) -> String {
        let line = line.trim_end_matches('\r');
        if line.starts_with('{')
            && serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.is_object())
        {
            return format!("{line}\n");
        }
        let message = shortlist::invoke::redact::redact_for_logs(line);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let doc = serde_json::json!({
            "timestamp": super::rfc3339(now),
            "level": "INFO",
            "target": "shortlist",
            "message": message,
        });
        format!("{doc}\n")
    }
}

#[cfg(not(unix))]
mod json_lines {
    pub struct Wrapper;
    impl Wrapper {
        pub fn start() -> Option<Wrapper> {
            None
        }
        pub fn finish(self) {}
    }
}

/// `since_epoch` as an RFC 3339 UTC time with microseconds, like the log lines' own.
fn rfc3339(since_epoch: std::time::Duration) -> String {
    let secs = since_epoch.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since_epoch.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(
            rfc3339(std::time::Duration::from_millis(1_795_795_200_123)),
            "2026-11-27T16:00:00.123000Z"
        );
        assert_eq!(
            rfc3339(std::time::Duration::ZERO),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            rfc3339(std::time::Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000000Z"
        );
    }

    #[cfg(unix)]
    #[test]
    fn other_lines_become_json_objects_and_json_lines_pass() {
        let v: serde_json::Value =
            serde_json::from_str(&json_lines::wrap("shortlist: serving MCP on http://x/mcp"))
                .unwrap();
        assert_eq!(v["message"], "shortlist: serving MCP on http://x/mcp");
        assert_eq!(v["level"], "INFO");
        let line = r#"{"timestamp":"t","level":"WARN","message":"m"}"#;
        assert_eq!(json_lines::wrap(line), format!("{line}\n"));
        // Not an object: wrapped, not passed.
        let v: serde_json::Value = serde_json::from_str(&json_lines::wrap("[1]")).unwrap();
        assert_eq!(v["message"], "[1]");
    }
}
