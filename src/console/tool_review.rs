//! The review of MCP servers' tool definitions: what is held (a new server's tools, a new
//! tool, a changed definition), shown beside the approved definition as a line diff, and a
//! reviewer's decision on it (`docs/console.md`, "Tool definitions").
//!
//! A decision names the digest of the definition the reviewer read, so one made on text
//! that changed since is refused rather than applied to text nobody read. Decisions are
//! recorded in the audit log before they are written, as reviews of generated text are.

use super::html::{esc, frame, Page};
use crate::store::{PinDecision, PinState, ToolPin};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Lines of a definition compared line by line; longer ones are shown whole, old then new.
const MAX_DIFF_LINES: usize = 1500;

/// Where a tool's definition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    /// Served: the definition listed is the approved one.
    Approved,
    /// Held: never approved (a new server's tool, or a new tool).
    New,
    /// Held: the definition listed differs from the approved one.
    Changed,
    /// Held: a reviewer refused the definition listed.
    Rejected,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Approved => "approved",
            ReviewState::New => "new",
            ReviewState::Changed => "changed",
            ReviewState::Rejected => "rejected",
        }
    }

    /// Whether the tool is held (not served).
    pub fn is_held(self) -> bool {
        self != ReviewState::Approved
    }

    /// `approved`, `held` (new, changed or rejected) or `all`.
    pub fn matches(self, filter: &str) -> bool {
        match filter {
            "held" => self.is_held(),
            "all" => true,
            other => self.as_str() == other,
        }
    }
}

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    /// `" "` kept, `"-"` only in the approved definition, `"+"` only in the listed one.
    pub op: &'static str,
    pub text: String,
}

/// A tool's pin as the console shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PinView {
    pub server: String,
    pub tool: String,
    pub state: ReviewState,
    /// The digest of this definition: what a decision names.
    pub digest: String,
    pub definition: String,
    /// The tool's latest approved definition, which a held one is compared with.
    pub approved_digest: Option<String>,
    /// The tool's latest approved definition against this one (held definitions).
    pub diff: Vec<DiffLine>,
    pub decided_by: Option<String>,
    pub decided_at_ms: Option<i64>,
    pub seen_at_ms: i64,
}

impl PinView {
    /// Every row as shown: a held definition beside the tool's latest approved one.
    pub fn all(pins: &[ToolPin]) -> Vec<PinView> {
        let mut approved: HashMap<(&str, &str), &ToolPin> = HashMap::new();
        for p in pins.iter().filter(|p| p.state == PinState::Approved) {
            let slot = approved.entry((&p.server, &p.tool)).or_insert(p);
            if p.decided_at > slot.decided_at {
                *slot = p;
            }
        }
        pins.iter()
            .map(|p| {
                let reference = approved.get(&(p.server.as_str(), p.tool.as_str()));
                let state = match p.state {
                    PinState::Approved => ReviewState::Approved,
                    PinState::Rejected => ReviewState::Rejected,
                    PinState::Pending if reference.is_some() => ReviewState::Changed,
                    PinState::Pending => ReviewState::New,
                };
                let reference = reference.filter(|_| p.state != PinState::Approved);
                PinView {
                    server: p.server.clone(),
                    tool: p.tool.clone(),
                    state,
                    digest: p.digest.clone(),
                    definition: p.definition.clone(),
                    approved_digest: reference.map(|r| r.digest.clone()),
                    diff: reference
                        .map(|r| line_diff(&r.definition, &p.definition))
                        .unwrap_or_default(),
                    decided_by: p.decided_by.clone(),
                    decided_at_ms: p.decided_at,
                    seen_at_ms: p.seen_at,
                }
            })
            .collect()
    }
}

/// A decision as the console's JSON endpoint receives it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub server: String,
    pub tool: String,
    /// The digest of the definition the reviewer read.
    pub digest: String,
    pub action: Action,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Approve,
    Reject,
    Revoke,
}

impl Action {
    pub fn decision(self) -> PinDecision {
        match self {
            Action::Approve => PinDecision::Approve,
            Action::Reject => PinDecision::Reject,
            Action::Revoke => PinDecision::Revoke,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Approve => "approve",
            Action::Reject => "reject",
            Action::Revoke => "revoke",
        }
    }
}

/// The lines of `old` and `new` as a diff (longest common subsequence); two texts too long
/// to compare are shown whole, one removed and the other added.
pub fn line_diff(old: &str, new: &str) -> Vec<DiffLine> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let line = |op, t: &str| DiffLine {
        op,
        text: t.to_string(),
    };
    if a.len() > MAX_DIFF_LINES || b.len() > MAX_DIFF_LINES {
        return a
            .iter()
            .map(|t| line("-", t))
            .chain(b.iter().map(|t| line("+", t)))
            .collect();
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(line(" ", a[i]));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(line("-", a[i]));
            i += 1;
        } else {
            out.push(line("+", b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|t| line("-", t)));
    out.extend(b[j..].iter().map(|t| line("+", t)));
    out
}

/// The page: the held definitions first, each with its diff and the reviewer's buttons.
pub fn page(views: &[PinView], status: &str, note: Option<&str>, admin: bool) -> String {
    let mut b = String::from("<h1>Tool definitions</h1>");
    b.push_str(
        "<p class=\"quiet\">An MCP server writes the tool text every colleague's agent reads. A \
         tool is served only in a definition approved here: a new server's tools, a new tool \
         and a changed definition wait (held) until a reviewer approves them. Approve serves \
         the definition shown; Reject keeps it held and marks it refused; Revoke stops serving \
         an approved one. Every replica follows within seconds.</p>",
    );
    let status_options: String = ["held", "approved", "all"]
        .iter()
        .map(|s| {
            let sel = if *s == status { " selected" } else { "" };
            format!("<option value=\"{s}\"{sel}>{s}</option>")
        })
        .collect();
    b.push_str(&format!(
        "<form method=\"get\" action=\"/console/tools\" class=\"filters\">\
         <label>Status <select name=\"status\">{status_options}</select></label>\
         <button>Show</button></form>"
    ));
    if let Some(n) = note {
        b.push_str(&format!("<p class=\"quiet\">{}</p>", esc(n)));
    }
    if views.is_empty() {
        b.push_str("<p id=\"none\" class=\"quiet\">Nothing to show.</p>");
    } else {
        b.push_str(&format!("<p class=\"quiet\">{} tools</p>", views.len()));
    }
    for v in views {
        b.push_str(&card(v));
    }
    frame(Page::Tools, "Tool definitions", &b, admin)
}

/// One tool's card; its identity travels in `data-pin` for the script.
fn card(v: &PinView) -> String {
    let identity = serde_json::json!({"server": v.server, "tool": v.tool, "digest": v.digest});
    let state = v.state.as_str();
    let body = if v.diff.is_empty() {
        format!("<pre>{}</pre>", esc(&v.definition))
    } else {
        let lines: String = v
            .diff
            .iter()
            .map(|l| {
                let class = match l.op {
                    "+" => "added",
                    "-" => "removed",
                    _ => "kept",
                };
                format!("<span class=\"{class}\">{} {}</span>\n", l.op, esc(&l.text))
            })
            .collect();
        format!("<h4>Approved definition → listed now</h4><pre class=\"diff\">{lines}</pre>")
    };
    let actions = match v.state {
        ReviewState::Approved => "<button data-action=\"revoke\">Revoke</button>",
        ReviewState::Rejected => "<button data-action=\"approve\">Approve</button>",
        ReviewState::New | ReviewState::Changed => {
            "<button data-action=\"approve\">Approve</button>\
             <button data-action=\"reject\">Reject</button>"
        }
    };
    let decided = match (&v.decided_by, v.decided_at_ms) {
        (Some(by), Some(at)) => format!(
            "<p class=\"meta\">last decided by {} at {}</p>",
            esc(by),
            super::audit::utc(at)
        ),
        _ => String::new(),
    };
    format!(
        "<article class=\"item {state}\" data-pin=\"{}\">\
         <h3><span class=\"badge {state}\">{state}</span> {} · <code>{}</code></h3>{body}\
         <p class=\"meta\">digest <code>{}</code> · listed since {}</p>{decided}\
         <div class=\"actions\">{actions}</div><p class=\"message\" role=\"status\"></p></article>",
        esc(&identity.to_string()),
        esc(&v.server),
        esc(&v.tool),
        esc(&v.digest[..v.digest.len().min(16)]),
        super::audit::utc(v.seen_at_ms),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(digest: &str, state: PinState, decided_at: Option<i64>) -> ToolPin {
        ToolPin {
            server: "fs".into(),
            tool: "read".into(),
            digest: digest.into(),
            definition: format!("{{\n  \"description\": \"{digest}\"\n}}"),
            state,
            seen_at: 0,
            decided_by: None,
            decided_at,
        }
    }

    fn states(pins: &[ToolPin]) -> Vec<(String, ReviewState)> {
        PinView::all(pins)
            .into_iter()
            .map(|v| (v.digest, v.state))
            .collect()
    }

    #[test]
    fn states_follow_the_rows() {
        assert_eq!(
            states(&[pin("a", PinState::Pending, None)]),
            vec![("a".into(), ReviewState::New)]
        );
        assert_eq!(
            states(&[
                pin("a", PinState::Approved, Some(1)),
                pin("b", PinState::Pending, None),
                pin("c", PinState::Rejected, Some(2)),
            ]),
            vec![
                ("a".into(), ReviewState::Approved),
                ("b".into(), ReviewState::Changed),
                ("c".into(), ReviewState::Rejected),
            ]
        );
        assert!(ReviewState::Changed.matches("held") && !ReviewState::Approved.matches("held"));
    }

    #[test]
    fn a_changed_definition_is_shown_against_the_latest_approved_one() {
        let views = PinView::all(&[
            pin("old text", PinState::Approved, Some(1)),
            pin("older text", PinState::Approved, Some(0)),
            pin("new text", PinState::Pending, None),
        ]);
        let v = views.iter().find(|v| v.digest == "new text").unwrap();
        assert_eq!(v.approved_digest.as_deref(), Some("old text"));
        let ops: Vec<(&str, &str)> = v.diff.iter().map(|l| (l.op, l.text.as_str())).collect();
        assert_eq!(
            ops,
            vec![
                (" ", "{"),
                ("-", "  \"description\": \"old text\""),
                ("+", "  \"description\": \"new text\""),
                (" ", "}"),
            ]
        );
        assert!(views
            .iter()
            .filter(|v| v.state == ReviewState::Approved)
            .all(|v| v.diff.is_empty()));
    }

    #[test]
    fn the_page_escapes_what_an_upstream_wrote() {
        let mut p = pin("a", PinState::Pending, None);
        p.tool = "<img src=x onerror=alert(1)>".into();
        p.definition = "</pre><script>alert(1)</script>".into();
        let html = page(&PinView::all(&[p]), "held", None, false);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(!html.contains("<img src=x"), "{html}");
        assert!(html.contains("data-action=\"approve\""));
    }

    #[test]
    fn long_texts_are_not_compared_line_by_line() {
        let old = "a\n".repeat(MAX_DIFF_LINES + 1);
        let d = line_diff(&old, "b");
        assert_eq!(d.len(), MAX_DIFF_LINES + 2);
        assert_eq!(d.last().unwrap().op, "+");
    }
}
