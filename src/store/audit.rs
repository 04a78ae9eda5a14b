//! What the audit log records: upstream calls, and the other events a security review of
//! a team server asks about. Each is one [`AuditEntry`] row, named by its [`Event`].

use super::backend::AuditEntry;

/// The kinds of record in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An upstream call (status 0: no answer came).
    Call,
    /// A call refused before it reached the API: the API is read-only, the address is
    /// refused, the arguments are invalid, the credentials are missing, or the audit log
    /// could not record it.
    Refused,
    /// A person was sent a consent link.
    ConsentAsked,
    /// A person's consent completed: their token is stored.
    ConsentGiven,
    /// A consent link was opened by someone it was not made for, or its callback came
    /// without the browser that started it: nothing was stored.
    ConsentRefused,
    /// A person withdrew an API's access.
    Withdrawn,
    /// Someone accepted, edited, rejected or restored generated tool text in the console.
    Review,
    /// Someone approved, rejected or revoked an MCP server's tool definition in the
    /// console.
    ToolReview,
    /// A token could not be had (exchange, client credentials, refresh, code redemption).
    TokenFailed,
    /// A token was issued upstream but could not be stored, nor revoked.
    TokenOrphaned,
}

impl Event {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Call => "call",
            Event::Refused => "refused",
            Event::ConsentAsked => "consent_asked",
            Event::ConsentGiven => "consent_given",
            Event::ConsentRefused => "consent_refused",
            Event::Withdrawn => "withdrawn",
            Event::Review => "review",
            Event::ToolReview => "tool_review",
            Event::TokenFailed => "token_failed",
            Event::TokenOrphaned => "token_orphaned",
        }
    }
}

/// Longest text a `detail` value keeps: a review's old and new text are shown whole up
/// to this, then cut with a note.
const MAX_DETAIL_CHARS: usize = 4000;

impl AuditEntry {
    /// A record of `event` by `sub` (through `client_id`) about `api`, now.
    pub fn event(event: Event, sub: &str, client_id: Option<&str>, api: &str) -> AuditEntry {
        AuditEntry {
            at_ms: super::now_ms(),
            event: event.as_str().to_string(),
            sub: sub.to_string(),
            client_id: client_id.map(str::to_string),
            api: api.to_string(),
            endpoint: String::new(),
            status: 0,
            latency_ms: 0,
            detail: None,
        }
    }

    /// The same, about one endpoint (its tool name).
    pub fn on(mut self, endpoint: &str) -> AuditEntry {
        self.endpoint = endpoint.to_string();
        self
    }

    /// The same, with `detail` (a JSON object) attached; long strings in it are cut.
    pub fn with_detail(mut self, mut detail: serde_json::Value) -> AuditEntry {
        clip(&mut detail);
        self.detail = Some(detail.to_string());
        self
    }
}

/// Cuts long strings in `v` (a detail) to [`MAX_DETAIL_CHARS`].
pub fn clip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) if s.chars().count() > MAX_DETAIL_CHARS => {
            let cut: String = s.chars().take(MAX_DETAIL_CHARS).collect();
            *s = format!("{cut}… (cut at {MAX_DETAIL_CHARS} characters)");
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(clip),
        serde_json::Value::Object(o) => o.values_mut().for_each(clip),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_carry_their_name_and_a_cut_detail() {
        let e = AuditEntry::event(Event::Review, "alice", Some("cli"), "billing")
            .on("billing__get_invoice")
            .with_detail(serde_json::json!({"new": "x".repeat(5000), "old": "y"}));
        assert_eq!(
            (e.event.as_str(), e.endpoint.as_str()),
            ("review", "billing__get_invoice")
        );
        let d: serde_json::Value = serde_json::from_str(e.detail.as_deref().unwrap()).unwrap();
        assert!(d["new"]
            .as_str()
            .unwrap()
            .ends_with("(cut at 4000 characters)"));
        assert_eq!(d["old"], "y");
    }
}
