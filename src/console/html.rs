//! HTML building blocks: escaping, the page frame, and the static assets.
//!
//! Pages are plain strings built on the server; every value from a spec or a request goes
//! through [`esc`]. The frame links one stylesheet and one script from `/console/assets`,
//! so the Content-Security-Policy can forbid inline scripts and styles altogether.

/// The stylesheet, served at `/console/assets/console.css`.
pub const CSS: &str = include_str!("assets/console.css");
/// The script, served at `/console/assets/console.js`.
pub const JS: &str = include_str!("assets/console.js");
/// The tab icon, served at `/console/assets/icon.svg` (else browsers ask for `/favicon.ico`).
pub const ICON: &str = include_str!("assets/icon.svg");

/// What the pages may load: their own assets and their own JSON endpoints, nothing else.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
    frame-ancestors 'none'";

/// Escapes text for HTML content and quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes a query-string value.
pub fn url_value(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Which page is open, for the navigation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Page {
    Health,
    Review,
    Try,
    Tools,
    Audit,
}

/// A whole page: navigation, then `body`. The audit log's link is shown to admins only
/// (`admin`): the page behind it is theirs alone.
pub fn frame(page: Page, title: &str, body: &str, admin: bool) -> String {
    let link = |p: Page, href: &str, label: &str| {
        let current = if p == page {
            " aria-current=\"page\""
        } else {
            ""
        };
        format!("<a href=\"{href}\"{current}>{label}</a>")
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · shortlist console</title>\
         <link rel=\"icon\" href=\"/console/assets/icon.svg\" type=\"image/svg+xml\">\
         <link rel=\"stylesheet\" href=\"/console/assets/console.css\">\
         <script src=\"/console/assets/console.js\" defer></script></head>\
         <body><header><strong>shortlist console</strong><nav>{}{}{}{}{}</nav></header>\
         <main>{body}</main></body></html>\n",
        link(Page::Health, "/console/health", "Catalog health"),
        link(Page::Review, "/console/review", "Review generated text"),
        link(Page::Try, "/console/try", "Try a request"),
        link(Page::Tools, "/console/tools", "Tool definitions"),
        if admin {
            link(Page::Audit, "/console/audit", "Audit log")
        } else {
            String::new()
        },
        title = esc(title),
    )
}

/// `<option>`s for a `<select>`, the current value selected; the first is "any".
pub fn options(any: &str, values: &[String], current: Option<&str>) -> String {
    let mut out = format!("<option value=\"\">{}</option>", esc(any));
    for v in values {
        let sel = if current == Some(v.as_str()) {
            " selected"
        } else {
            ""
        };
        out.push_str(&format!("<option value=\"{0}\"{sel}>{0}</option>", esc(v)));
    }
    out
}

/// A percentage with no decimals.
pub fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// A JSON value, pretty-printed and escaped for a `<pre>`.
pub fn json_block(v: &serde_json::Value) -> String {
    esc(&serde_json::to_string_pretty(v).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_could_open_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(url_value("a b/c"), "a%20b%2Fc");
        let o = options("any", &["a\"b".into()], Some("a\"b"));
        assert!(o.contains("value=\"a&quot;b\" selected"), "{o}");
    }
}
