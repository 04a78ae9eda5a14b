//! Building the real HTTP request from validated arguments: URL, headers, cookies, body,
//! credentials.
//!
//! The invariant this file defends: the request goes to the catalog's host and to the
//! path the endpoint names, whatever the arguments hold. Values are encoded so they stay
//! data (see `style`); whole-segment `.` / `..` values are refused, because URL parsers
//! resolve them even percent-encoded; and the finished URL is checked: its path must be
//! exactly the one built (no normalization happened) and its scheme, host and port those
//! of the base URL.

use super::args::{arguments, ArgTarget};
use super::auth::Credentials;
use super::body::{encode, EncodedBody};
use super::style::{cookie_pairs, header_value, path_value, query_pairs};
use super::validate::ValidArgs;
use crate::catalog::{ApiConfig, Endpoint, Method, ParamLocation};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, COOKIE};
use url::Url;

/// What URL parsers would re-encode in a path, plus `\` (a separator for http URLs).
/// Template literals come from the spec and are trusted to be a path, so `/` and `%`
/// pass.
const PATH_LITERAL: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\');

/// Sent unless the config sets `Accept`: JSON preferred, anything accepted.
const DEFAULT_ACCEPT: &str = "application/json, */*;q=0.5";

/// A request ready to send. Its `Debug` output shows neither the query nor header values
/// (either may hold a credential).
pub struct PreparedRequest {
    pub method: Method,
    pub url: Url,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Option<EncodedBody>,
    /// `scheme://host[:port]/path`: the URL without its query (which may hold an API
    /// key) and user info, for messages and logs.
    pub display_url: String,
}

impl std::fmt::Debug for PreparedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedRequest")
            .field("method", &self.method)
            .field("url", &self.display_url)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("body_bytes", &self.body.as_ref().map(|b| b.bytes.len()))
            .finish()
    }
}

/// Builds the request for `ep` (see the module docs for what is guaranteed).
pub fn build_request(
    ep: &Endpoint,
    cfg: Option<&ApiConfig>,
    args: &ValidArgs,
    creds: &Credentials,
) -> Result<PreparedRequest, String> {
    let base = base_url(ep, cfg)?;
    let names = arg_names(ep);
    let path = format!(
        "{}{}",
        base.path().trim_end_matches('/'),
        expand_path(ep, args, &names)?
    );

    let mut query: Vec<String> = base
        .query()
        .map(|q| vec![q.to_string()])
        .unwrap_or_default();
    let mut cookies = Vec::new();
    let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
    if let Some(cfg) = cfg {
        for (k, v) in &cfg.headers {
            headers.push(header(
                k,
                v,
                &format!("header '{k}' in the catalog config"),
            )?);
        }
    }
    for (i, p) in ep.parameters.iter().enumerate() {
        let Some(v) = args.param(i) else { continue };
        let arg = names.get(&i).map(String::as_str).unwrap_or(&p.name);
        match p.location {
            // An MCP tool's arguments never become an HTTP request (see `invoke::mcp`).
            ParamLocation::Path | ParamLocation::Argument => {}
            ParamLocation::Query => query.extend(query_pairs(p, v)),
            ParamLocation::Header => headers.push(header(
                &p.name,
                &header_value(p, v),
                &format!("argument '{arg}'"),
            )?),
            ParamLocation::Cookie => {
                let crumbs = cookie_pairs(p, v);
                if crumbs.iter().any(|c| c.contains(['\r', '\n'])) {
                    return Err(format!(
                        "argument '{arg}': cookie values cannot contain line breaks"
                    ));
                }
                cookies.extend(crumbs);
            }
        }
    }
    query.extend(creds.query.iter().cloned());
    if !cookies.is_empty() {
        headers.push(header(
            COOKIE.as_str(),
            &cookies.join("; "),
            "cookie parameters",
        )?);
    }
    for (k, v) in &creds.headers {
        // The value is a secret: the message names the header only.
        let (name, mut value) = header(k, v, &format!("the credential header '{k}'"))
            .map_err(|_| format!("the credential for header '{k}' is not a valid header value"))?;
        value.set_sensitive(true);
        headers.push((name, value));
    }
    if !headers.iter().any(|(n, _)| n == ACCEPT) {
        headers.push((ACCEPT, HeaderValue::from_static(DEFAULT_ACCEPT)));
    }

    let body = match (&ep.request_body, args.body()) {
        (Some(rb), Some(v)) => {
            let b = encode(&rb.content_type, &rb.schema, v)?;
            headers.retain(|(n, _)| n != CONTENT_TYPE);
            let ct = HeaderValue::from_str(&b.content_type).map_err(|_| {
                format!(
                    "the body media type '{}' is not a valid header value",
                    b.content_type
                )
            })?;
            headers.push((CONTENT_TYPE, ct));
            Some(b)
        }
        _ => None,
    };

    let mut url = base.clone();
    url.set_path(&path);
    url.set_query((!query.is_empty()).then(|| query.join("&")).as_deref());
    url.set_fragment(None);
    if url.path() != path {
        return Err(format!(
            "refusing to call {}: URL normalization would change the path '{path}' (check the path arguments)",
            ep.key()
        ));
    }
    if url.scheme() != base.scheme()
        || url.host_str() != base.host_str()
        || url.port_or_known_default() != base.port_or_known_default()
    {
        return Err(format!(
            "refusing to call a host other than the catalog's ({})",
            host_of(&base)
        ));
    }
    let display_url = shown_url(&url);
    Ok(PreparedRequest {
        method: ep.method,
        url,
        headers,
        body,
        display_url,
    })
}

/// A URL as messages, logs and the model may see it: without its query (which may hold
/// an API key) and without user info (`https://user:pw@host` carries credentials, which
/// the HTTP client sends as basic auth).
pub fn shown_url(url: &Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    // (Only fails for URLs that cannot have user info, which then have none.)
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// A base URL as configured, for display: [`shown_url`] when it parses, else the text
/// with anything between `://` and an `@` in its authority removed.
pub fn shown_url_text(raw: &str) -> String {
    if let Ok(u) = Url::parse(raw) {
        if u.has_host() {
            return shown_url(&u);
        }
    }
    let Some(scheme_end) = raw.find("://").map(|i| i + 3) else {
        return raw.to_string();
    };
    let rest = &raw[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &raw[..scheme_end], &rest[at + 1..]),
        None => raw.to_string(),
    }
}

/// Registers the user info of a base URL as secrets: the user name and password, as
/// written and percent-decoded, and the basic-auth token the HTTP client makes of them.
pub fn register_user_info(raw: &str, redactor: &mut super::auth::Redactor) {
    let Ok(u) = Url::parse(raw) else {
        return;
    };
    if u.username().is_empty() && u.password().is_none() {
        return;
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let user = decode(u.username());
    let pass = u.password().map(decode);
    for s in [Some(u.username()), u.password()].into_iter().flatten() {
        redactor.add(s);
        redactor.add(&decode(s));
    }
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD
        .encode(format!("{user}:{}", pass.as_deref().unwrap_or("")));
    redactor.add(&token);
}

/// The base URL: the config's `base_url`, else the endpoint's first server. It must be
/// absolute http(s); a relative server (`/v1`) only says where the API lives relative to
/// a host the spec does not name.
fn base_url(ep: &Endpoint, cfg: Option<&ApiConfig>) -> Result<Url, String> {
    let raw = cfg
        .and_then(|c| c.base_url.as_deref())
        .or_else(|| ep.servers.first().map(String::as_str))
        .ok_or_else(|| {
            format!(
                "API '{}' declares no server URL; set `base_url` for it in the catalog config",
                ep.api
            )
        })?;
    let hint = format!("set `base_url` for API '{}' in the catalog config", ep.api);
    let shown = shown_url_text(raw);
    if raw.contains('{') {
        return Err(format!(
            "the server URL '{shown}' of API '{}' has an unresolved variable; {hint}",
            ep.api
        ));
    }
    let url = match Url::parse(raw) {
        Ok(u) => u,
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            return Err(format!(
                "the server URL '{shown}' of API '{}' is relative; {hint}",
                ep.api
            ));
        }
        Err(e) => {
            return Err(format!(
                "the server URL '{shown}' of API '{}' is invalid ({e}); {hint}",
                ep.api
            ))
        }
    };
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "the server URL '{shown}' of API '{}' is not an http(s) URL with a host; {hint}",
            ep.api
        ));
    }
    Ok(url)
}

/// Parameter index to argument name, for messages.
fn arg_names(ep: &Endpoint) -> std::collections::HashMap<usize, String> {
    arguments(ep)
        .into_iter()
        .filter_map(|a| match a.target {
            ArgTarget::Param(i) => Some((i, a.name)),
            ArgTarget::Body => None,
        })
        .collect()
}

/// The endpoint's path template with every `{name}` replaced by its encoded value.
fn expand_path(
    ep: &Endpoint,
    args: &ValidArgs,
    names: &std::collections::HashMap<usize, String>,
) -> Result<String, String> {
    let mut out = String::new();
    if !ep.path.starts_with('/') {
        out.push('/');
    }
    let mut rest = ep.path.as_str();
    while let Some(open) = rest.find('{') {
        out.extend(utf8_percent_encode(&rest[..open], PATH_LITERAL));
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(format!(
                "the path template '{}' has an unclosed '{{'",
                ep.path
            ));
        };
        let name = &after[..close];
        let idx = ep
            .parameters
            .iter()
            .position(|p| p.location == ParamLocation::Path && p.name == name);
        let value = idx.and_then(|i| args.param(i).map(|v| (i, v)));
        let Some((i, v)) = value else {
            return Err(format!("missing value for path parameter '{name}'"));
        };
        let encoded = path_value(&ep.parameters[i], v);
        if encoded == "." || encoded == ".." {
            let arg = names.get(&i).map(String::as_str).unwrap_or(name);
            return Err(format!(
                "argument '{arg}': the value '{encoded}' is not allowed in a URL path (it would change which path is called)"
            ));
        }
        out.push_str(&encoded);
        rest = &after[close + 1..];
    }
    out.extend(utf8_percent_encode(rest, PATH_LITERAL));
    if out.split('/').any(|seg| seg == "." || seg == "..") {
        return Err(format!(
            "the path '{out}' would contain a '.' or '..' segment; refusing to call it"
        ));
    }
    Ok(out)
}

/// A validated header; `what` names the source for the error (never the value).
fn header(name: &str, value: &str, what: &str) -> Result<(HeaderName, HeaderValue), String> {
    if value.contains(['\r', '\n', '\0']) {
        return Err(format!("{what}: header values cannot contain line breaks"));
    }
    let n = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{what}: '{name}' is not a valid HTTP header name"))?;
    let v = HeaderValue::from_bytes(value.trim().as_bytes())
        .map_err(|_| format!("{what}: not a valid HTTP header value (control characters)"))?;
    Ok((n, v))
}

/// `host[:port]` of a URL.
pub fn host_of(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoke::args::tests::{endpoint, param};
    use crate::invoke::validate::validate;
    use serde_json::{json, Value};

    fn build(ep: &Endpoint, args: Value) -> Result<PreparedRequest, String> {
        let valid = validate(ep, args.as_object().unwrap()).map_err(|e| e.to_string())?;
        build_request(ep, None, &valid, &Credentials::default())
    }

    fn ep() -> Endpoint {
        let mut h = param("X-Trace", ParamLocation::Header, json!({"type": "string"}));
        h.required = false;
        let mut c = param("session", ParamLocation::Cookie, json!({"type": "string"}));
        c.required = false;
        let mut q = param(
            "tags",
            ParamLocation::Query,
            json!({"type": "array", "items": {"type": "string"}}),
        );
        q.required = false;
        endpoint(
            Method::Get,
            "/files/{name}/raw",
            vec![
                param("name", ParamLocation::Path, json!({"type": "string"})),
                h,
                c,
                q,
            ],
        )
    }

    #[test]
    fn path_values_stay_in_their_segment() {
        for (v, want) in [
            ("../x", "/v1/files/..%2Fx/raw"),
            ("@evil.example", "/v1/files/%40evil.example/raw"),
            ("%2e%2e", "/v1/files/%252e%252e/raw"),
            (
                "https://evil.example/",
                "/v1/files/https%3A%2F%2Fevil.example%2F/raw",
            ),
            ("a\\b", "/v1/files/a%5Cb/raw"),
        ] {
            let r = build(&ep(), json!({"name": v})).unwrap();
            assert_eq!(r.url.path(), want);
            assert_eq!(r.url.host_str(), Some("api.example.com"));
        }
        for v in [".", ".."] {
            let err = build(&ep(), json!({"name": v})).unwrap_err();
            assert!(err.contains("argument 'name': the value"), "{err}");
        }
    }

    #[test]
    fn query_headers_and_cookies() {
        let r = build(
            &ep(),
            json!({"name": "a", "tags": ["x", "y z"], "X-Trace": "t1", "session": "s"}),
        )
        .unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://api.example.com/v1/files/a/raw?tags=x&tags=y%20z"
        );
        assert_eq!(r.display_url, "https://api.example.com/v1/files/a/raw");
        let get = |n: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k.as_str() == n)
                .map(|(_, v)| v.to_str().unwrap().to_string())
        };
        assert_eq!(get("x-trace").as_deref(), Some("t1"));
        assert_eq!(get("cookie").as_deref(), Some("session=s"));
        assert_eq!(get("accept").as_deref(), Some(DEFAULT_ACCEPT));
    }

    #[test]
    fn header_crlf_is_refused() {
        let err = build(&ep(), json!({"name": "a", "X-Trace": "t\r\nX-Evil: 1"})).unwrap_err();
        assert_eq!(
            err,
            "argument 'X-Trace': header values cannot contain line breaks"
        );
    }

    #[test]
    fn relative_servers_need_a_base_url() {
        let mut e = ep();
        e.servers = vec!["/v1".into()];
        let err = build(&e, json!({"name": "a"})).unwrap_err();
        assert!(
            err.contains("is relative; set `base_url` for API 't'"),
            "{err}"
        );
        e.servers = vec![];
        assert!(build(&e, json!({"name": "a"}))
            .unwrap_err()
            .contains("declares no server URL"));
    }
}
