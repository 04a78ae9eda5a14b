//! The secrets every log line is masked with, process-wide, so no log level of this crate
//! or of its dependencies (HTTP client, MCP library) prints one.
//!
//! Secrets read from the environment stay on the list for the process's life (the config
//! names a bounded set); tokens obtained at run time stay only while a call that uses them
//! runs or they are good, so a server renewing people's tokens all day keeps a list the
//! size of the tokens alive now, not of every token it ever held. Registering what is
//! already known takes no exclusive lock, and a log line is masked under a shared one.

use super::mask::Mask;
use std::collections::HashMap;
use std::io::Write;
use std::sync::RwLock;
use std::time::Instant;

/// What the logs mask: secrets for the process's life, and obtained tokens while a call
/// uses them or they are good.
#[derive(Default)]
pub(super) struct LogSecrets {
    permanent: Mask,
    expiring: Mask,
    /// Each expiring form: until when it is good, and how many running calls hold it.
    held: HashMap<String, (Instant, usize)>,
    /// Whether some expiring form may be forgotten now or soon: the earliest expiry.
    next_expiry: Option<Instant>,
}

impl LogSecrets {
    fn register(&mut self, form: &str) {
        self.permanent.insert(form);
    }

    /// One more call holds `form`, good until `until`.
    pub(super) fn hold(&mut self, form: &str, until: Instant) {
        let entry = self.held.entry(form.to_string()).or_insert((until, 0));
        entry.0 = entry.0.max(until);
        entry.1 += 1;
        self.expiring.insert(form);
        self.next_expiry = Some(self.next_expiry.map_or(until, |t| t.min(until)));
        let now = Instant::now();
        if self.next_expiry.is_some_and(|t| t <= now) {
            self.prune(now);
        }
    }

    /// A call that held `form` ended.
    pub(super) fn release(&mut self, form: &str) {
        if let Some(e) = self.held.get_mut(form) {
            e.1 = e.1.saturating_sub(1);
        }
    }

    /// Forgets every expiring form no call holds and whose time has passed.
    pub(super) fn prune(&mut self, now: Instant) {
        let before = self.held.len();
        self.held
            .retain(|_, (until, holders)| *holders > 0 || *until > now);
        if self.held.len() != before {
            let held = &self.held;
            self.expiring
                .forget(|chars| !held.contains_key(&chars.iter().collect::<String>()));
        }
        self.next_expiry = self.held.values().map(|(t, _)| *t).min();
    }

    fn knows(&self, form: &str) -> bool {
        self.permanent.knows(form)
    }
}

/// Every secret any [`Redactor`] of this process has learnt, for the logs.
pub(super) static LOG_SECRETS: std::sync::LazyLock<RwLock<LogSecrets>> =
    std::sync::LazyLock::new(|| RwLock::new(LogSecrets::default()));

pub(super) fn register_for_logs(form: &str) {
    // A secret sent with every call is known after the first: a shared lock tells.
    if LOG_SECRETS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .knows(form)
    {
        return;
    }
    LOG_SECRETS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .register(form);
}

/// Registers a secret that is not read through a [`super::redact::Redactor`] (user info of
/// a base URL) so logs never show it.
pub fn register_secret_for_logs(secret: &str) {
    for form in super::mask::forms(secret) {
        if form.chars().count() >= super::mask::MIN_CHARS {
            register_for_logs(&form);
        }
    }
}

/// How many forms the logs mask now: those of the process's secrets, and those of the
/// obtained tokens not yet expired (tests and diagnostics: it must not grow with time).
pub fn log_secret_count() -> usize {
    let mut s = LOG_SECRETS.write().unwrap_or_else(|e| e.into_inner());
    s.prune(Instant::now());
    s.permanent.len() + s.expiring.len()
}

/// `text` with every secret this process knows masked.
pub fn redact_for_logs(text: &str) -> String {
    let s = LOG_SECRETS.read().unwrap_or_else(|e| e.into_inner());
    if s.permanent.is_empty() && s.expiring.is_empty() {
        return text.to_string();
    }
    let once = s.permanent.redact(text);
    s.expiring.redact(&once)
}

/// A `tracing` writer to stderr that masks every known secret in each log line.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

/// One log event's text; masked and written out when the event is complete.
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&self.0);
        let masked = redact_for_logs(&text);
        self.0.clear();
        std::io::stderr().lock().write_all(masked.as_bytes())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> Self::Writer {
        LogLine(Vec::with_capacity(256))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_masked() {
        register_secret_for_logs("l0g-secret/value");
        let mut line = LogLine(Vec::new());
        line.write_all(br"DEBUG body: l0g-secret\/value").unwrap();
        assert_eq!(
            redact_for_logs(&String::from_utf8_lossy(&line.0)),
            "DEBUG body: [REDACTED]"
        );
        line.0.clear();
    }
}
