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

pub use super::redact::Redactor;

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
/// `redactor` (which masks it in every spelling, see `redact`). `obtained` is the token
/// an OAuth grant gave for this call, for the kinds whose token is obtained at run time.
pub fn resolve(
    auth: Option<&AuthConfig>,
    api: &str,
    env: &EnvLookup,
    obtained: Option<&str>,
    redactor: &mut Redactor,
) -> Result<Credentials, String> {
    let mut creds = Credentials::default();
    let Some(auth) = auth else {
        return Ok(creds);
    };
    let read = |var: &str, what: &str| -> Result<String, String> {
        match env(var) {
            // A client that does not expand `${VAR}` in its configuration (or expands an
            // unset one to itself) passes the placeholder on: it is no credential.
            Some(v) if v.starts_with("${") && v.ends_with('}') => Err(format!(
                "environment variable {var} holds the placeholder {v}, which the MCP client did not expand; set {var} where the client starts, or write its value in the client's configuration"
            )),
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
        AuthConfig::ClientCredentials { .. }
        | AuthConfig::TokenExchange { .. }
        | AuthConfig::AuthorizationCode { .. } => {
            let token = obtained.ok_or_else(|| {
                format!("API '{api}': no token was obtained for this call (see `auth` in the catalog config)")
            })?;
            if token.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
                return Err(format!(
                    "API '{api}': the token endpoint returned a token with a line break; it cannot be sent in a header"
                ));
            }
            // The caller registered it with its expiry (`Redactor::add_until`); this
            // only makes sure the call's own result masks it.
            redactor.add_local(token);
            creds
                .headers
                .push(("Authorization".into(), format!("Bearer {token}")));
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
        let err = resolve(
            Some(&auth),
            "tmdb",
            &env(&[]),
            None,
            &mut Redactor::default(),
        )
        .unwrap_err();
        assert!(
            err.contains("environment variable TMDB_TOKEN is not set"),
            "{err}"
        );
        // What a client configuration that was never filled in passes on.
        for placeholder in ["${TMDB_TOKEN}", "${env:TMDB_TOKEN}"] {
            let vars: &'static [(&str, &str)] = if placeholder.contains("env:") {
                &[("TMDB_TOKEN", "${env:TMDB_TOKEN}")]
            } else {
                &[("TMDB_TOKEN", "${TMDB_TOKEN}")]
            };
            let err = resolve(
                Some(&auth),
                "tmdb",
                &env(vars),
                None,
                &mut Redactor::default(),
            )
            .unwrap_err();
            assert!(
                err.contains("holds the placeholder") && err.contains(placeholder),
                "{err}"
            );
        }
    }

    #[test]
    fn query_key_is_encoded_and_redacted_in_all_forms() {
        let auth = AuthConfig::ApiKey {
            name: "api_key".into(),
            location: KeyLocation::Query,
            value_env: "K".into(),
        };
        let mut r = Redactor::default();
        let c = resolve(
            Some(&auth),
            "tmdb",
            &env(&[("K", "s3cr/t key")]),
            None,
            &mut r,
        )
        .unwrap();
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
            None,
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
            None,
            &mut r,
        )
        .unwrap_err();
        assert!(
            err.contains("T contains a line break") && !err.contains("Evil"),
            "{err}"
        );
    }
}
