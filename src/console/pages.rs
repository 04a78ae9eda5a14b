//! The pages, rendered on the server from the same data the JSON endpoints return.
//! They work without JavaScript (filters and requests are plain GET forms); the script only
//! filters the endpoint table as one types and sends reviews.

use super::audit::{AuditQuery, AuditRow};
use super::health::{DescriptionState, Filter, Health, MAX_ROWS};
use super::html::{esc, frame, json_block, options, percent, url_value, Page};
use super::review::{ReviewItem, Status};
use super::try_request::Tried;
use crate::catalog::Method;
use crate::shortlist::matched::Judgement;
use serde_json::{json, Value};

/// Catalog health.
pub fn health(h: &Health, f: &Filter, admin: bool) -> String {
    let mut b = String::new();
    b.push_str(&format!(
        "<h1>Catalog health</h1><section class=\"cards\">\
         <div><b>{}</b> APIs</div><div><b>{}</b> endpoints</div>\
         <div><b>{}</b> with a missing or weak description</div>\
         <div><b>{}</b> specs skipped</div><div><b>{}</b> load problems</div></section>",
        h.apis.len(),
        h.total_endpoints,
        percent(h.poorly_described),
        h.skipped,
        h.problems.len(),
    ));
    b.push_str(
        "<h2>APIs</h2><table id=\"apis\"><thead><tr><th>API</th><th>Title</th><th>Version</th>\
         <th>Spec</th><th>Endpoints</th><th>Missing</th><th>Weak</th><th>Generated, to review</th>\
         <th>Missing or weak</th><th>Problems</th></tr></thead><tbody>",
    );
    for a in &h.apis {
        b.push_str(&format!(
            "<tr><td><a href=\"/console/health?api={}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td><a href=\"/console/review?api={0}\">{}</a></td>\
             <td><meter min=\"0\" max=\"1\" value=\"{:.3}\"></meter> {}</td><td>{}</td></tr>",
            url_value(&a.id),
            esc(&a.id),
            esc(&a.title),
            esc(&a.version),
            esc(&a.spec_version),
            a.endpoints,
            a.missing,
            a.weak,
            a.generated,
            a.poorly_described,
            percent(a.poorly_described),
            a.problems,
        ));
    }
    b.push_str("</tbody></table>");
    if !h.servers.is_empty() {
        b.push_str(
            "<h2>MCP servers</h2><table id=\"servers\"><thead><tr><th>Server</th><th>State</th>\
             <th>Why not running</th><th>Held for review</th></tr></thead><tbody>",
        );
        for s in &h.servers {
            let held = match s.held {
                Some(0) => "none".to_string(),
                Some(n) => format!("<a href=\"/console/tools\">{n} tool(s)</a>"),
                None => "not pinned".to_string(),
            };
            b.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{held}</td></tr>",
                esc(&s.id),
                esc(s.state),
                esc(s.reason.as_deref().unwrap_or("")),
            ));
        }
        b.push_str("</tbody></table>");
    }
    b.push_str("<h2>Load problems</h2>");
    if h.problems.is_empty() {
        b.push_str("<p class=\"quiet\">Every spec loaded without a problem.</p>");
    } else {
        b.push_str(
            "<table id=\"problems\"><thead><tr><th>Severity</th><th>File</th><th>Where (JSON pointer)</th>\
             <th>Problem</th></tr></thead><tbody>",
        );
        for p in &h.problems {
            b.push_str(&format!(
                "<tr class=\"{0}\"><td>{0}</td><td><code>{1}</code></td><td><code>{2}</code></td><td>{3}</td></tr>",
                p.severity,
                esc(&p.file),
                esc(p.pointer.as_deref().unwrap_or("(whole file)")),
                esc(&p.message),
            ));
        }
        b.push_str("</tbody></table>");
    }
    let apis: Vec<String> = h.apis.iter().map(|a| a.id.clone()).collect();
    let methods: Vec<String> = Method::ALL.iter().map(|m| m.as_str().to_string()).collect();
    let states: Vec<String> = ["missing", "weak", "ok", "generated"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    b.push_str(&format!(
        "<h2>Endpoints</h2><form id=\"filter\" method=\"get\" action=\"/console/health\" class=\"filters\">\
         <label>API <select name=\"api\">{}</select></label>\
         <label>Method <select name=\"method\">{}</select></label>\
         <label>Description <select name=\"description\">{}</select></label>\
         <label>Path or name <input type=\"search\" name=\"q\" value=\"{}\" placeholder=\"/movie\"></label>\
         <button>Filter</button></form>",
        options("any", &apis, f.api.as_deref()),
        options("any", &methods, f.method.map(Method::as_str)),
        options(
            "any",
            &states,
            if f.generated {
                Some("generated")
            } else {
                f.state.map(DescriptionState::as_str)
            }
        ),
        esc(f.text.as_deref().unwrap_or("")),
    ));
    let shown = if h.matching > h.endpoints.len() {
        format!(
            "showing the first {} of {} matching endpoints: narrow the filter",
            MAX_ROWS, h.matching
        )
    } else {
        format!("{} matching endpoints", h.matching)
    };
    b.push_str(&format!(
        "<p id=\"shown\" class=\"quiet\">{shown}</p><table id=\"endpoints\"><thead><tr><th>API</th>\
         <th>Method</th><th>Path</th><th>Tool</th><th>What clients read first</th><th>Description</th>\
         </tr></thead><tbody>"
    ));
    for e in &h.endpoints {
        let mut state = format!(
            "<span class=\"badge {0}\">{0}</span>",
            e.description.as_str()
        );
        if e.generated {
            state.push_str(&format!(
                " <span class=\"badge generated\">generated</span> \
                 <a href=\"/console/review?api={}&amp;tool={}\">review</a>",
                url_value(&e.api),
                url_value(&e.tool)
            ));
        }
        b.push_str(&format!(
            "<tr data-api=\"{}\" data-method=\"{}\" data-state=\"{}\" data-generated=\"{}\" data-text=\"{}\"><td>{}</td>\
             <td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{state}</td></tr>",
            esc(&e.api),
            e.method,
            e.description.as_str(),
            e.generated,
            esc(&format!("{} {} {}", e.path, e.tool, e.summary).to_lowercase()),
            esc(&e.api),
            e.method,
            esc(&e.path),
            esc(&e.tool),
            esc(&e.summary),
        ));
    }
    b.push_str("</tbody></table>");
    frame(Page::Health, "Catalog health", &b, admin)
}

/// Review of generated text.
pub fn review(
    items: &[&ReviewItem],
    matching: usize,
    apis: &[String],
    api: Option<&str>,
    status: &str,
    unreadable: &[String],
    admin: bool,
) -> String {
    let mut b = String::from("<h1>Review generated text</h1>");
    b.push_str(
        "<p class=\"quiet\">Accept keeps a generated value as if you wrote it, Edit saves your \
         text instead, Reject removes it (the spec's own text stays) and keeps later runs from \
         writing it again; Restore, among the rejected, undoes that. Saved values survive \
         <code>shortlist enrich</code> re-runs. Run <code>shortlist index</code> (or restart the \
         server) for the ranking to use them.</p>",
    );
    let status_options: String = ["pending", "reviewed", "rejected", "all"]
        .iter()
        .map(|s| {
            let sel = if *s == status { " selected" } else { "" };
            format!("<option value=\"{s}\"{sel}>{s}</option>")
        })
        .collect();
    b.push_str(&format!(
        "<form method=\"get\" action=\"/console/review\" class=\"filters\">\
         <label>API <select name=\"api\">{}</select></label>\
         <label>Status <select name=\"status\">{status_options}</select></label>\
         <button>Show</button></form>",
        options("any", apis, api),
    ));
    for u in unreadable {
        b.push_str(&format!("<p class=\"error\">{}</p>", esc(u)));
    }
    if items.is_empty() {
        b.push_str(
            "<p id=\"none\" class=\"quiet\">Nothing to show: no generated value matches.</p>",
        );
    }
    if matching > items.len() {
        b.push_str(&format!(
            "<p class=\"quiet\">showing the first {} of {matching} values: choose an API</p>",
            items.len()
        ));
    } else {
        b.push_str(&format!("<p class=\"quiet\">{matching} values</p>"));
    }
    for it in items {
        b.push_str(&item(it));
    }
    frame(Page::Review, "Review generated text", &b, admin)
}

/// One review card. Its identity travels in `data-review` for the script.
fn item(it: &ReviewItem) -> String {
    let target = match &it.param {
        Some(p) => format!(
            "parameter <code>{}</code> ({})",
            esc(&p.name),
            esc(&p.location)
        ),
        None => "operation".to_string(),
    };
    let identity = json!({
        "api": it.api, "method": it.method, "path": it.path, "param": it.param,
        "field": it.field, "expected": it.value,
    });
    let own = spec_fields(&it.spec);
    let placement = match it.placement {
        Some(super::review::Placement::Beside) => " (beside the spec's weak text)",
        Some(super::review::Placement::InPlace) => " (the spec has none)",
        None => "",
    };
    let provenance = match &it.provenance {
        Some(p) => {
            let get = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let template = get("template");
            format!(
                "generator <b>{}</b>{} · {}",
                esc(&get("generator")),
                if template.is_empty() {
                    String::new()
                } else {
                    format!(" · template {}", esc(&template))
                },
                esc(&get("date"))
            )
        }
        None if it.status == Status::Rejected => {
            "rejected in review: later runs do not write it again".to_string()
        }
        None => "reviewed: no longer marked as generated".to_string(),
    };
    let validation = match &it.check {
        Some(c) if c["passed"] == true => {
            "<span class=\"badge ok\">validation: passed</span>".to_string()
        }
        Some(c) => format!(
            "<span class=\"badge weak\">validation: failed</span> {} (kept out of the index \
             until accepted)",
            esc(c.get("reason").and_then(Value::as_str).unwrap_or(""))
        ),
        None => "<span class=\"badge\">not checked</span>".to_string(),
    };
    let editable = match &it.value {
        Value::String(s) => s.clone(),
        Value::Array(a) if it.field == super::review::ReviewField::Questions => a
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    };
    let status = match it.status {
        Status::Pending => "pending",
        Status::Reviewed => "reviewed",
        Status::Rejected => "rejected",
    };
    let actions = if it.status == Status::Rejected {
        "<div class=\"actions\"><button data-action=\"restore\">Restore</button></div>".to_string()
    } else if it.status == Status::Pending {
        format!(
            "<div class=\"actions\"><button data-action=\"accept\">Accept</button>\
             <button data-action=\"edit\">Edit</button><button data-action=\"reject\">Reject</button></div>\
             <form class=\"editor\" hidden><textarea name=\"value\" rows=\"4\">{}</textarea>\
             <button data-action=\"save\">Save edit</button> <button type=\"button\" data-action=\"cancel\">Cancel</button></form>",
            esc(&editable)
        )
    } else {
        String::new()
    };
    format!(
        "<article class=\"item {status}\" data-review=\"{}\" data-tool=\"{}\">\
         <h3><span class=\"badge {status}\">{status}</span> {} <code>{} {}</code> · {} · <b>{}</b>{}</h3>\
         <div class=\"cols\"><div><h4>The spec's own</h4>{own}</div>\
         <div><h4>Generated</h4><div class=\"value\">{}</div>\
         <p class=\"meta\">{provenance}</p><p class=\"meta\">{validation}</p>\
         <p class=\"meta\">{} <code>{}</code></p></div></div>{actions}<p class=\"message\" role=\"status\"></p></article>",
        esc(&identity.to_string()),
        esc(it.tool.as_deref().unwrap_or("")),
        esc(&it.api),
        it.method,
        esc(&it.path),
        target,
        it.field.as_str(),
        placement,
        value_html(&it.value),
        esc(&it.file),
        esc(&it.pointer),
    )
}

fn value_html(v: &Value) -> String {
    match v {
        Value::String(s) => format!("<p>{}</p>", esc(s)),
        Value::Array(a) if a.iter().all(Value::is_string) => format!(
            "<ul>{}</ul>",
            a.iter()
                .filter_map(Value::as_str)
                .map(|q| format!("<li>{}</li>", esc(q)))
                .collect::<String>()
        ),
        v => format!("<pre>{}</pre>", json_block(v)),
    }
}

/// The spec's own fields as a definition list; absent ones say so.
fn spec_fields(spec: &Value) -> String {
    let mut out = String::from("<dl>");
    if let Some(o) = spec.as_object() {
        for (k, v) in o {
            let shown = match v {
                Value::Null => "<i>none</i>".to_string(),
                Value::String(s) => esc(s),
                v => esc(&v.to_string()),
            };
            out.push_str(&format!("<dt>{}</dt><dd>{shown}</dd>", esc(k)));
        }
    }
    out.push_str("</dl>");
    out
}

/// Try a request; `result` is the ranking for the form's request, or its error.
pub fn try_page(
    query: &str,
    k: Option<usize>,
    api: Option<&str>,
    apis: &[String],
    result: Option<Result<&Tried, &str>>,
    admin: bool,
) -> String {
    let mut b = String::from("<h1>Try a request</h1>");
    b.push_str(&format!(
        "<form id=\"try\" method=\"get\" action=\"/console/try\" class=\"filters\">\
         <label class=\"wide\">What a user would ask <input type=\"search\" name=\"q\" value=\"{}\" \
         placeholder=\"find the director of the movie Inception\" required></label>\
         <label>Tools (k) <input type=\"number\" name=\"k\" min=\"1\" max=\"50\" value=\"{}\"></label>\
         <label>API <select name=\"api\">{}</select></label><button>Shortlist</button></form>",
        esc(query),
        k.map(|k| k.to_string()).unwrap_or_default(),
        options("any", apis, api),
    ));
    match result {
        None => b.push_str(
            "<p class=\"quiet\">The shortlist is what <code>find_tools</code> would give a client \
             for this request, with the same defaults.</p>",
        ),
        Some(Err(e)) => b.push_str(&format!("<p class=\"error\" id=\"error\">{}</p>", esc(e))),
        Some(Ok(t)) => b.push_str(&tried(t)),
    }
    frame(Page::Try, "Try a request", &b, admin)
}

fn tried(t: &Tried) -> String {
    let tokens = |n: Option<usize>| n.map_or("?".to_string(), |n| n.to_string());
    let mut b = format!(
        "<section class=\"cards\"><div><b>{}</b> tools offered</div>\
         <div><b id=\"tools-tokens\">{}</b> tokens of tool definitions</div>\
         <div><b>{}</b> tokens of the three meta-tools a client always has</div></section>",
        t.tools.len(),
        tokens(t.tools_tokens),
        tokens(t.meta_tokens),
    );
    if !t.tasks.is_empty() {
        b.push_str(
            "<p>The request was split into tasks, each ranked on its own too: <ol class=\"tasks\">",
        );
        for task in &t.tasks {
            b.push_str(&format!("<li>{}</li>", esc(task)));
        }
        b.push_str("</ol></p>");
    }
    if t.tools.is_empty() {
        b.push_str("<p id=\"none\" class=\"quiet\">No endpoint matches.</p>");
        return b;
    }
    if let Some(j) = &t.judgement {
        b.push_str(&judgement(j));
    }
    b.push_str(
        "<table id=\"shortlist\"><thead><tr><th>#</th><th>Tool</th><th>Call</th><th>Score</th>\
         <th>From</th><th>Why</th><th>Tokens</th></tr></thead><tbody>",
    );
    for tool in &t.tools {
        let origin = tool.origin;
        b.push_str(&format!(
            "<tr data-origin=\"{origin}\"><td>{}</td><td><code>{}</code><br><span class=\"quiet\">{}</span></td>\
             <td><code>{}</code></td><td>{:.3}</td><td><span class=\"badge {origin}\">{}</span></td>\
             <td class=\"why\">{}</td><td>{}</td></tr>\
             <tr class=\"definition\"><td></td><td colspan=\"6\"><details><summary>Tool definition as a \
             client receives it</summary><pre>{}</pre></details></td></tr>",
            tool.rank,
            esc(&tool.name),
            esc(&tool.summary),
            esc(&tool.call),
            tool.score,
            origin.replace('_', " "),
            esc(&tool.why),
            tokens(tool.tokens),
            json_block(&tool.definition),
        ));
    }
    b.push_str("</tbody></table>");
    b
}

/// Whether anything in the catalog fits the request, as `find_tools` tells the client, and
/// the raw evidence the judgement read: a platform team sees which requests their catalog
/// cannot serve.
fn judgement(j: &Judgement) -> String {
    let e = &j.evidence;
    let verdict = if j.matched {
        "Something in the catalog fits this request: <code>find_tools</code> answers \
         <code>\"matched\": true</code>."
    } else {
        "Nothing in the catalog seems to fit this request: <code>find_tools</code> answers \
         <code>\"matched\": false</code> and tells the assistant so; the hits below are only \
         the closest."
    };
    format!(
        "<section id=\"judgement\" data-matched=\"{}\" class=\"{}\"><p>{verdict}</p>\
         <p class=\"quiet\">Evidence: probability that nothing fits {:.2} (unmatched from {:.2}); \
         best cosine {:.2}, {:.2} above the tenth; lowest task cosine {:.2}; the request's words \
         found in the best hit {:.0}%, in the first five {:.0}%.</p></section>",
        j.matched,
        if j.matched { "matched" } else { "unmatched" },
        j.no_match,
        crate::shortlist::matched::CALIBRATION.threshold,
        e.cosine,
        e.cosine_gap,
        e.task_cosine,
        100.0 * e.coverage,
        100.0 * e.coverage_top,
    )
}

/// The audit log: the rows `q` asked for, or why there are none. `viewer` says who is
/// reading (a person sees their own name, so a shared screen says whose view it is).
pub fn audit(viewer: &str, q: &AuditQuery, rows: Result<&[AuditRow], &str>) -> String {
    let mut b = format!(
        "<h1>Audit log</h1><p class=\"quiet\">Every upstream call the server made (when, for \
         whom, which endpoint, the status and how long it took) and every consent, withdrawal, \
         review of tool text, refused call and token failure; never a body, header, argument \
         or token. Newest first. Shown to {}.</p>\
         <form id=\"audit-filter\" method=\"get\" action=\"/console/audit\" class=\"filters\">\
         <label>Person (sub) <input type=\"search\" name=\"sub\" value=\"{}\" placeholder=\"everyone\"></label>\
         <label>Rows <input type=\"number\" name=\"limit\" min=\"1\" max=\"{}\" value=\"{}\"></label>\
         <button>Show</button></form>",
        esc(viewer),
        esc(q.sub.as_deref().unwrap_or("")),
        super::audit::MAX_LIMIT,
        q.limit,
    );
    let rows = match rows {
        Err(e) => {
            b.push_str(&format!("<p class=\"error\" id=\"error\">{}</p>", esc(e)));
            return frame(Page::Audit, "Audit log", &b, true);
        }
        Ok(rows) => rows,
    };
    if rows.is_empty() {
        b.push_str("<p id=\"none\" class=\"quiet\">Nothing recorded.</p>");
        return frame(Page::Audit, "Audit log", &b, true);
    }
    b.push_str(
        "<table id=\"audit\"><thead><tr><th>When (UTC)</th><th>Event</th><th>Person</th>\
         <th>Client</th><th>API</th><th>Endpoint</th><th>Status</th><th>Latency</th>\
         <th>Detail</th></tr></thead><tbody>",
    );
    for r in rows {
        let status = if r.status == 0 {
            "no answer".to_string()
        } else {
            r.status.to_string()
        };
        let detail = r.detail.as_ref().map(|d| d.to_string()).unwrap_or_default();
        b.push_str(&format!(
            "<tr data-event=\"{}\"><td>{}</td><td>{}</td>\
             <td><a href=\"/console/audit?sub={}\">{}</a></td><td>{}</td><td>{}</td>\
             <td><code>{}</code></td><td>{}</td><td>{} ms</td><td><code>{}</code></td></tr>",
            esc(&r.event),
            esc(&r.at),
            esc(&r.event),
            url_value(&r.sub),
            esc(&r.sub),
            esc(r.client_id.as_deref().unwrap_or("")),
            esc(&r.api),
            esc(&r.endpoint),
            status,
            r.latency_ms,
            esc(&detail),
        ));
    }
    b.push_str("</tbody></table>");
    frame(Page::Audit, "Audit log", &b, true)
}

/// A page the viewer may not open, and why.
pub fn forbidden(page: Page, title: &str, why: &str, admin: bool) -> String {
    frame(
        page,
        title,
        &format!(
            "<h1>{}</h1><p class=\"error\" id=\"error\">{}</p>",
            esc(title),
            esc(why)
        ),
        admin,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audit_page_escapes_what_the_log_holds() {
        let q = AuditQuery {
            sub: Some("\"><script>x</script>".into()),
            limit: 10,
        };
        let row = AuditRow {
            at_ms: 0,
            at: "1970-01-01T00:00:00.000Z".into(),
            event: "<i>call</i>".into(),
            sub: "<b>mallory</b>".into(),
            client_id: Some("<u>cli</u>".into()),
            api: "a&b".into(),
            endpoint: "<img src=x>".into(),
            status: 0,
            latency_ms: 7,
            detail: Some(serde_json::json!({"new": "<script>y</script>"})),
        };
        let html = audit("<op>", &q, Ok(&[row]));
        for raw in [
            "<script>",
            "<b>mallory",
            "<img",
            "a&b",
            "<op>",
            "<i>call",
            "<u>cli",
        ] {
            assert!(!html.contains(raw), "{raw} unescaped: {html}");
        }
        assert!(html.contains("&lt;b&gt;mallory&lt;/b&gt;"), "{html}");
        assert!(html.contains("href=\"/console/audit?sub=%3Cb%3Emallory%3C%2Fb%3E\""));
        assert!(
            html.contains("no answer"),
            "status 0 is said in words: {html}"
        );
        let failed = audit("op", &q, Err("the state store is unavailable: <gone>"));
        assert!(failed.contains("unavailable: &lt;gone&gt;"), "{failed}");
    }
}
