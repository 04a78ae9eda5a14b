//! Credentials: read from the environment at call time, attached to the request, and
//! scrubbed from everything the caller gets back.
//!
//! The catalog config names environment variables, never secrets, so a config file can be
//! committed and a rotated token takes effect without a restart. A missing variable is
//! reported by its *name*. Every secret value that was read is registered with a
//! [`Redactor`], and every text leaving the invoker (errors, including reqwest's, which
//! quote the URL with its query API key; response bodies, which may echo the request)
//! passes through it.

use super::style::enc;
use crate::catalog::{AuthConfig, KeyLocation};
use base64::Engine;

/// Looks up an environment variable; injectable so tests need not mutate the process
/// environment.
pub type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// The process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What a configured credential adds to a request.
#[derive(Default)]
pub struct Credentials {
    /// Raw header values; the request builder validates them.
    pub headers: Vec<(String, String)>,
    /// Already-encoded `name=value` query items.
    pub query: Vec<String>,
}

/// Secret values are never shown, even in `Debug` output.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("query_items", &self.query.len())
            .finish()
    }
}

/// Reads the credentials of `auth` for API `api`, registering every secret with
/// `redactor` (in the forms it can appear in: raw, URL-encoded, base64).
pub fn resolve(
    auth: Option<&AuthConfig>,
    api: &str,
    env: &EnvLookup,
    redactor: &mut Redactor,
) -> Result<Credentials, String> {
    let mut creds = Credentials::default();
    let Some(auth) = auth else {
        return Ok(creds);
    };
    let read = |var: &str, what: &str| -> Result<String, String> {
        match env(var) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(format!(
                "environment variable {var} is not set; it should hold the {what} for API '{api}' (see `auth` in the catalog config)"
            )),
        }
    };
    match auth {
        AuthConfig::Bearer { token_env } => {
            let token = read(token_env, "bearer token")?;
            check_header_safe(&token, token_env)?;
            redactor.add(&token);
            creds
                .headers
                .push(("Authorization".into(), format!("Bearer {token}")));
        }
        AuthConfig::ApiKey {
            name,
            location,
            value_env,
        } => {
            let key = read(value_env, "API key")?;
            redactor.add(&key);
            match location {
                KeyLocation::Header => {
                    check_header_safe(&key, value_env)?;
                    creds.headers.push((name.clone(), key));
                }
                KeyLocation::Query => creds.query.push(format!("{}={}", enc(name), enc(&key))),
            }
        }
        AuthConfig::Basic {
            username_env,
            password_env,
        } => {
            let user = read(username_env, "basic-auth user name")?;
            let pass = read(password_env, "basic-auth password")?;
            redactor.add(&pass);
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            redactor.add(&token);
            creds
                .headers
                .push(("Authorization".into(), format!("Basic {token}")));
        }
    }
    Ok(creds)
}

/// A header value with a line break would let the environment inject headers; refuse it,
/// naming the variable.
fn check_header_safe(value: &str, var: &str) -> Result<(), String> {
    if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        return Err(format!(
            "environment variable {var} contains a line break; it cannot be sent in a header"
        ));
    }
    Ok(())
}

/// Replaces known secret values with `[REDACTED]`.
///
/// Secrets shorter than 4 characters are not registered: replacing every `ab` in a
/// response would wreck the text while protecting nothing a guess would not find.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    secrets: Vec<String>,
}

const MASK: &str = "[REDACTED]";

impl Redactor {
    /// Registers a secret in the forms it can take in a URL or message.
    pub fn add(&mut self, secret: &str) {
        for form in [secret.to_string(), enc(secret), utf8_form(secret)] {
            if form.chars().count() >= 4 && !self.secrets.contains(&form) {
                self.secrets.push(form);
            }
        }
        // Longest first, so a secret that contains another is masked whole.
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` with every registered secret masked.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        out
    }

    /// Like [`redact`](Self::redact), for text that was cut off: a tail that is the
    /// beginning of a secret is masked too.
    pub fn redact_cut(&self, text: &str) -> String {
        let mut out = self.redact(text);
        for s in &self.secrets {
            let cut = (4..s.len())
                .rev()
                .filter(|&n| s.is_char_boundary(n))
                .find(|&n| out.ends_with(&s[..n]));
            if let Some(n) = cut {
                out.truncate(out.len() - n);
                out.push_str(MASK);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }
}

/// `application/x-www-form-urlencoded` form (spaces as `+`), as some servers echo it.
fn utf8_form(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn missing_variable_is_named_not_valued() {
        let auth = AuthConfig::Bearer {
            token_env: "TMDB_TOKEN".into(),
        };
        let err = resolve(Some(&auth), "tmdb", &env(&[]), &mut Redactor::default()).unwrap_err();
        assert!(
            err.contains("environment variable TMDB_TOKEN is not set"),
            "{err}"
        );
    }

    #[test]
    fn query_key_is_encoded_and_redacted_in_all_forms() {
        let auth = AuthConfig::ApiKey {
            name: "api_key".into(),
            location: KeyLocation::Query,
            value_env: "K".into(),
        };
        let mut r = Redactor::default();
        let c = resolve(Some(&auth), "tmdb", &env(&[("K", "s3cr/t key")]), &mut r).unwrap();
        assert_eq!(c.query, ["api_key=s3cr%2Ft%20key"]);
        let text =
            "GET http://h/x?api_key=s3cr%2Ft%20key failed; echoed s3cr/t key and s3cr%2Ft+key";
        assert_eq!(
            r.redact(text),
            "GET http://h/x?api_key=[REDACTED] failed; echoed [REDACTED] and [REDACTED]"
        );
    }

    #[test]
    fn basic_auth_header_and_crlf_refusal() {
        let auth = AuthConfig::Basic {
            username_env: "U".into(),
            password_env: "P".into(),
        };
        let mut r = Redactor::default();
        let c = resolve(
            Some(&auth),
            "a",
            &env(&[("U", "aladdin"), ("P", "opensesame")]),
            &mut r,
        )
        .unwrap();
        assert_eq!(
            c.headers,
            [(
                "Authorization".to_string(),
                "Basic YWxhZGRpbjpvcGVuc2VzYW1l".to_string()
            )]
        );
        assert_eq!(r.redact("YWxhZGRpbjpvcGVuc2VzYW1l"), "[REDACTED]");
        assert_eq!(r.redact_cut("pass: opensesa"), "pass: [REDACTED]");
        let bearer = AuthConfig::Bearer {
            token_env: "T".into(),
        };
        let err = resolve(
            Some(&bearer),
            "a",
            &env(&[("T", "abc\r\nX-Evil: 1")]),
            &mut r,
        )
        .unwrap_err();
        assert!(
            err.contains("T contains a line break") && !err.contains("Evil"),
            "{err}"
        );
    }
}
