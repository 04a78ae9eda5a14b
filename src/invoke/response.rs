//! Reading a response within a size cap and turning it into a [`CallOutcome`].
//!
//! The body is read as a stream and reading stops one byte past the cap, so a 50 MB
//! answer costs 100 KB of memory and the time to read it, and the rest is never
//! downloaded (the connection is dropped). What the model gets:
//!
//! - 2xx: the body text. A complete JSON body is re-serialized compactly (fewer tokens,
//!   same data) and also returned as structured content. A cut body ends with
//!   `[truncated: showed first 100 KB of N bytes]`. Binary media is summarized, not
//!   dumped.
//! - 3xx that was not followed (another host, a downgrade to http, too many hops): an
//!   error naming where it pointed.
//! - Anything else: an error with the status line and a short excerpt of the body (HTML
//!   reduced to its text), plus a hint when credentials look missing.

use super::auth::Redactor;
use super::outcome::CallOutcome;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// How much of a body is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Cap on what is read of any response body.
    pub max_bytes: usize,
    /// Cap (in characters) on the body excerpt shown for an error status.
    pub excerpt_chars: usize,
    /// Redirects followed before giving up (for the message).
    pub max_redirects: usize,
}

/// A response body read up to a cap.
#[derive(Debug, Clone, Default)]
pub struct CappedBody {
    pub bytes: Vec<u8>,
    /// More bytes were available than the cap.
    pub truncated: bool,
    /// The full size, when the server declared it.
    pub declared_len: Option<u64>,
}

/// Reads at most `cap` bytes of the body (stopping at `cap + 1` to learn whether there
/// was more). The capacity reserved up front trusts no `Content-Length` beyond the cap.
pub async fn read_capped(
    resp: &mut reqwest::Response,
    cap: usize,
) -> Result<CappedBody, reqwest::Error> {
    let declared_len = resp.content_length();
    let hint = declared_len
        .map(|n| n as usize)
        .unwrap_or(8 * 1024)
        .min(cap + 1);
    let mut bytes = Vec::with_capacity(hint);
    while let Some(chunk) = resp.chunk().await? {
        let room = cap + 1 - bytes.len();
        if chunk.len() >= room {
            bytes.extend_from_slice(&chunk[..room]);
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    let truncated = bytes.len() > cap;
    bytes.truncate(cap);
    Ok(CappedBody {
        bytes,
        truncated,
        declared_len,
    })
}

/// Everything about the call that the outcome text mentions.
pub struct ResponseContext<'a> {
    pub method: &'a str,
    pub display_url: &'a str,
    pub limits: Limits,
    pub redactor: &'a Redactor,
    /// Said after a 401/403 (e.g. that no credentials are configured).
    pub auth_hint: Option<String>,
}

/// Response metadata needed to shape the outcome.
pub struct ResponseHead {
    pub status: StatusCode,
    pub content_type: Option<String>,
    /// The `Location` of a redirect, resolved against the request URL.
    pub location: Option<String>,
    /// Whether `location` has the request's scheme, host and port.
    pub location_same_origin: bool,
}

/// Turns a response into the outcome the model sees.
pub fn shape(head: &ResponseHead, body: CappedBody, ctx: &ResponseContext<'_>) -> CallOutcome {
    let status = head.status;
    let code = Some(status.as_u16());
    let status_line = format!(
        "HTTP {} {} from {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        ctx.method,
        ctx.display_url
    );
    let ct = head
        .content_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    if status.is_redirection() {
        let text = match &head.location {
            Some(loc) if head.location_same_origin => format!(
                "{status_line}: stopped after {} redirects (last pointed to {loc})",
                ctx.limits.max_redirects
            ),
            Some(loc) => format!(
                "{status_line}: not following the redirect to {loc}: only redirects to the same host are followed"
            ),
            None => format!("{status_line}: a redirect without a Location"),
        };
        return CallOutcome {
            is_error: true,
            text,
            structured: None,
            status: code,
            refusal: None,
            content: Vec::new(),
        };
    }
    if !status.is_success() {
        let mut text = status_line;
        let excerpt = excerpt(&body.bytes, &ct, ctx.limits.excerpt_chars, ctx.redactor);
        if !excerpt.is_empty() {
            text.push('\n');
            text.push_str(&excerpt);
        }
        if matches!(status.as_u16(), 401 | 403) {
            if let Some(h) = &ctx.auth_hint {
                text.push('\n');
                text.push_str(h);
            }
        }
        return CallOutcome {
            is_error: true,
            text,
            structured: None,
            status: code,
            refusal: None,
            content: Vec::new(),
        };
    }
    if body.bytes.is_empty() {
        let text = format!("{status_line} (empty response body)");
        return CallOutcome {
            is_error: false,
            text,
            structured: None,
            status: code,
            refusal: None,
            content: Vec::new(),
        };
    }
    let Some(raw) = text_of(&body.bytes, &ct, body.truncated) else {
        let text = format!(
            "[binary response: {} of {}, not shown]",
            size(body.declared_len.unwrap_or(body.bytes.len() as u64) as usize),
            if ct.is_empty() { "unknown type" } else { &ct }
        );
        return CallOutcome {
            is_error: false,
            text,
            structured: None,
            status: code,
            refusal: None,
            content: Vec::new(),
        };
    };
    let raw = if body.truncated {
        ctx.redactor.redact_cut(&raw)
    } else {
        ctx.redactor.redact(&raw)
    };
    if body.truncated {
        let of = match body.declared_len {
            Some(n) => format!("{n} bytes"),
            None => format!("more than {}", size(ctx.limits.max_bytes)),
        };
        let text = format!(
            "{raw}\n[truncated: showed first {} of {of}]",
            size(ctx.limits.max_bytes)
        );
        return CallOutcome {
            is_error: false,
            text,
            structured: None,
            status: code,
            refusal: None,
            content: Vec::new(),
        };
    }
    let looks_json =
        ct.contains("json") || (ct.is_empty() && raw.trim_start().starts_with(['{', '[']));
    if looks_json {
        if let Ok(v) = serde_json::from_str::<Value>(&raw) {
            let text = serde_json::to_string(&v).unwrap_or(raw);
            let structured = if v.is_object() {
                v
            } else {
                json!({ "result": v })
            };
            return CallOutcome {
                is_error: false,
                text,
                structured: Some(structured),
                status: code,
                refusal: None,
                content: Vec::new(),
            };
        }
    }
    CallOutcome {
        is_error: false,
        text: raw,
        structured: None,
        status: code,
        refusal: None,
        content: Vec::new(),
    }
}

/// The body as text, or `None` for binary media. A cut body may end mid-character; that
/// tail is dropped rather than shown as a replacement character.
fn text_of(bytes: &[u8], ct: &str, truncated: bool) -> Option<String> {
    if ["image/", "audio/", "video/", "font/"]
        .iter()
        .any(|p| ct.starts_with(p))
        || [
            "application/octet-stream",
            "application/pdf",
            "application/zip",
            "application/gzip",
        ]
        .iter()
        .any(|p| ct.starts_with(p))
    {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => Some(s.to_string()),
        Err(e) if truncated && e.error_len().is_none() => {
            Some(String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned())
        }
        // Mostly text with a stray byte: show it rather than call it binary.
        Err(_) if bytes.iter().take(4096).filter(|b| **b == 0).count() == 0 => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        Err(_) => None,
    }
}

/// A bounded excerpt of an error body; HTML pages are reduced to their text.
/// Secrets are masked before cleaning and clipping, so a cut cannot leave half of one,
/// and again after cleaning.
fn excerpt(bytes: &[u8], ct: &str, max: usize, redactor: &Redactor) -> String {
    // HTML pages shrink a lot when cleaned, so more than `max` is read before cleaning.
    let raw = String::from_utf8_lossy(&bytes[..bytes.len().min(max.saturating_mul(16))]);
    let raw = redactor.redact_cut(&raw);
    let html = ct.contains("html") || raw.trim_start().starts_with('<');
    let text = if html {
        // Cleaning decodes entities (`&#x2F;`), which may reveal a secret again.
        redactor.redact(&crate::text::clean(&raw))
    } else {
        raw.trim().to_string()
    };
    crate::text::clip_chars(&text, max)
}

/// `100 KB` for whole kibibytes, else bytes.
pub fn size(n: usize) -> String {
    if n >= 1024 && n % 1024 == 0 {
        format!("{} KB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(r: &Redactor) -> ResponseContext<'_> {
        ResponseContext {
            method: "GET",
            display_url: "https://h/x",
            limits: Limits {
                max_bytes: 1024,
                excerpt_chars: 40,
                max_redirects: 5,
            },
            redactor: r,
            auth_hint: Some("hint".into()),
        }
    }

    fn head(status: u16, ct: &str) -> ResponseHead {
        ResponseHead {
            status: StatusCode::from_u16(status).unwrap(),
            content_type: Some(ct.into()),
            location: None,
            location_same_origin: false,
        }
    }

    fn body(b: &[u8], truncated: bool, declared: Option<u64>) -> CappedBody {
        CappedBody {
            bytes: b.to_vec(),
            truncated,
            declared_len: declared,
        }
    }

    #[test]
    fn json_is_text_and_structured() {
        let r = Redactor::default();
        let o = shape(
            &head(200, "application/json"),
            body(b"{ \"a\": [1, 2] }", false, None),
            &ctx(&r),
        );
        assert_eq!(o.text, r#"{"a":[1,2]}"#);
        assert_eq!(o.structured, Some(json!({"a": [1, 2]})));
        let o = shape(
            &head(200, "application/json"),
            body(b"[1]", false, None),
            &ctx(&r),
        );
        assert_eq!(o.structured, Some(json!({"result": [1]})));
    }

    #[test]
    fn truncation_is_stated_and_cuts_on_char_boundary() {
        let r = Redactor::default();
        let o = shape(
            &head(200, "text/plain"),
            body("aé".as_bytes()[..2].as_ref(), true, Some(5000)),
            &ctx(&r),
        );
        assert_eq!(o.text, "a\n[truncated: showed first 1 KB of 5000 bytes]");
        assert!(o.structured.is_none() && !o.is_error);
    }

    #[test]
    fn errors_have_status_line_and_clean_bounded_excerpt() {
        let r = Redactor::default();
        let html = b"<html><body><h1>Internal Server Error</h1><p>Something broke badly in a long way</p></body></html>";
        let o = shape(&head(500, "text/html"), body(html, false, None), &ctx(&r));
        assert!(o.is_error);
        assert_eq!(o.status, Some(500));
        assert_eq!(o.text, "HTTP 500 Internal Server Error from GET https://h/x\nInternal Server Error Something broke…");
        let o = shape(
            &head(401, "application/json"),
            body(b"{}", false, None),
            &ctx(&r),
        );
        assert!(o.text.ends_with("\n{}\nhint"));
    }

    #[test]
    fn binary_is_summarized() {
        let r = Redactor::default();
        let o = shape(
            &head(200, "image/png"),
            body(&[0x89, b'P', 0, 1], false, Some(4)),
            &ctx(&r),
        );
        assert_eq!(o.text, "[binary response: 4 bytes of image/png, not shown]");
    }
}
