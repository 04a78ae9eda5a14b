//! What a person's browser sees of the server outside the console: the pages of a
//! consent (its link, the sign-in, the callback), the cookies that tie one browser to one
//! consent, and the limit on how fast those pages may be asked for.
//!
//! Cookies are sealed with the state store's key (any replica opens them), `HttpOnly`
//! (no script reads them), `SameSite=Lax` (sent on the redirects back from the provider,
//! not on other sites' requests) and short-lived; behind https they are `Secure` with the
//! `__Host-` prefix, so no other host or path can set or read them.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use std::time::Duration;

/// The server's public origin as browsers reach it, and whether that is https.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    /// `https://shortlist.example.com` (no trailing slash).
    pub origin: String,
    pub https: bool,
}

impl PublicUrl {
    /// `[auth] public_url`, else the origin of the audience.
    pub fn of(auth: &crate::catalog::config::ResourceServerConfig) -> Option<PublicUrl> {
        let raw = auth.public_url.as_deref().unwrap_or(&auth.audience);
        let url = url::Url::parse(raw).ok()?;
        Some(PublicUrl {
            origin: url.origin().ascii_serialization(),
            https: url.scheme() == "https",
        })
    }

    /// An absolute URL of `path` on this server.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// The cookie's name: `__Host-` prefixed behind https.
    pub fn cookie_name(&self, base: &str) -> String {
        if self.https {
            format!("__Host-{base}")
        } else {
            base.to_string()
        }
    }

    /// A `Set-Cookie` value for `value`, living `max_age`.
    pub fn set_cookie(&self, base: &str, value: &str, max_age: Duration) -> String {
        let (secure, path) = if self.https {
            ("; Secure", "/")
        } else {
            ("", "/oauth")
        };
        format!(
            "{}={value}; Path={path}; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
            self.cookie_name(base),
            max_age.as_secs()
        )
    }

    /// A `Set-Cookie` value that removes the cookie.
    pub fn clear_cookie(&self, base: &str) -> String {
        self.set_cookie(base, "", Duration::ZERO)
    }
}

/// The value of cookie `name` in `headers`, if sent.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty())
}

/// A small page with a fixed text: nothing a provider or a request said is echoed.
pub fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body>\
         <h1>{t}</h1><p>{x}</p></body></html>",
        t = esc(title),
        x = esc(text)
    );
    let mut res = (status, Html(html)).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// A redirect that sets (or clears) cookies on the way.
pub fn redirect(to: &str, cookies: &[String]) -> Response {
    let mut res = StatusCode::SEE_OTHER.into_response();
    let h = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(to) {
        h.insert(header::LOCATION, v);
    }
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            h.append(header::SET_COOKIE, v);
        }
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

/// A response with cookies set (or cleared) on it.
pub fn with_cookies(mut res: Response, cookies: &[String]) -> Response {
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            res.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    res
}

/// The answer once the limit is reached.
pub fn too_many() -> Response {
    let mut res = page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests",
        "Too many consent pages were asked for at once. Wait a moment and reload this page.",
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_host_prefixed_and_secure_behind_https() {
        let https = PublicUrl {
            origin: "https://mcp.example".into(),
            https: true,
        };
        let c = https.set_cookie("shortlist-consent", "v", Duration::from_secs(600));
        assert_eq!(
            c,
            "__Host-shortlist-consent=v; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure"
        );
        let http = PublicUrl {
            origin: "http://127.0.0.1:9".into(),
            https: false,
        };
        let c = http.set_cookie("shortlist-consent", "v", Duration::from_secs(600));
        assert_eq!(
            c,
            "shortlist-consent=v; Path=/oauth; Max-Age=600; HttpOnly; SameSite=Lax"
        );
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            "a=1; shortlist-consent=xyz".parse().unwrap(),
        );
        assert_eq!(cookie(&h, "shortlist-consent").as_deref(), Some("xyz"));
        assert_eq!(cookie(&h, "b"), None);
    }

    #[test]
    fn the_public_url_defaults_to_the_audiences_origin() {
        let mut auth = crate::catalog::config::ResourceServerConfig {
            audience: "https://mcp.example/team/mcp".into(),
            ..Default::default()
        };
        let p = PublicUrl::of(&auth).unwrap();
        assert_eq!((p.origin.as_str(), p.https), ("https://mcp.example", true));
        auth.public_url = Some("http://10.0.0.5:8080".into());
        let p = PublicUrl::of(&auth).unwrap();
        assert_eq!(
            (p.at("/oauth/signin").as_str(), p.https),
            ("http://10.0.0.5:8080/oauth/signin", false)
        );
    }
}
