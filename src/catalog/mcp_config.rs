//! An MCP server as a catalog source: how to reach it, and which of its tools to serve.
//!
//! An `[[api]]` entry holds either a `spec` or an `mcp` table. The entry's other settings
//! (`id`, `visible_to`, `read_only`, `auth`, `headers`, `timeout_secs`) mean for a server's
//! tools what they mean for an API's endpoints, so everything downstream of the catalog
//! reads one kind of entry.
//!
//! A child is started only from what the operator wrote here, never from a request, and
//! sees only the environment named here: [`DEFAULT_ENV`] plus `env` (names whose values
//! are passed on from shortlist's own environment) and `set_env` (literal values, as a
//! client's config file gives them). None of shortlist's own secrets reach it otherwise.

use super::auth_config::AuthConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Variables every child sees when shortlist has them: what a program needs to find its
/// interpreter and home folder, and nothing that carries a credential. The same list the
/// MCP SDKs pass by default.
pub const DEFAULT_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The transports an MCP server can be reached over.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process speaking over its stdin and stdout (`command`).
    #[default]
    Stdio,
    /// Streamable HTTP at `url` (2025-03-26 and later).
    StreamableHttp,
    /// The older HTTP+SSE transport (2024-11-05) at `url`.
    Sse,
}

/// The `mcp` table of an `[[api]]` entry.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct McpSource {
    /// The program to start (stdio).
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// The child's working folder (relative to the config file).
    pub cwd: Option<PathBuf>,
    /// Names of variables the child may see, taken from shortlist's environment.
    #[serde(default)]
    pub env: Vec<String>,
    /// Variables set for the child with these literal values.
    #[serde(default)]
    pub set_env: BTreeMap<String, String>,
    /// The server's URL (streamable HTTP or SSE).
    pub url: Option<String>,
    /// How to reach the server: `stdio` when `command` is given, else `streamable_http`.
    pub transport: Option<McpTransport>,
    /// Only these tools are served (exact names, or a prefix ending in `*`).
    #[serde(default)]
    pub include: Vec<String>,
    /// These tools are never served (same forms as `include`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Tools that count as read-only whatever their annotations say: with the entry's
    /// `read_only`, these and the tools annotated `readOnlyHint` are the ones served.
    #[serde(default)]
    pub read_only_tools: Vec<String>,
    /// Seconds to wait for the server to start and list its tools (default 30).
    pub start_timeout_secs: Option<u64>,
    /// Which tool definitions wait for a reviewer before they are served, where the server
    /// keeps a state store: `hold` (every new or changed one; the default with an `[auth]`
    /// table), `first_use` (the server's first listing is trusted, what changes after
    /// waits) or `warn` (every definition is served, a changed one with a warning; the
    /// default otherwise).
    pub review: Option<ToolReview>,
    /// A variable holding the bearer token this server's tools are listed with, where its
    /// calls carry each person's own token (`auth` of kind `token_exchange` or
    /// `authorization_code`): listing happens before anyone calls.
    pub list_token_env: Option<String>,
}

/// How a server's tool definitions are pinned (see [`McpSource::review`]).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ToolReview {
    /// New servers, new tools and changed definitions wait for a reviewer.
    Hold,
    /// The definitions of a server's first listing are pinned as they are; new tools and
    /// changed definitions after it wait for a reviewer.
    FirstUse,
    /// Every definition is pinned as it is listed; a changed one is logged as a warning
    /// (one person's own servers, with nobody else to review them).
    Warn,
}

/// How long a server may take to start and list its tools when the entry does not say.
pub const DEFAULT_START_TIMEOUT_SECS: u64 = 30;

impl McpSource {
    /// The transport this entry uses.
    pub fn transport(&self) -> McpTransport {
        self.transport.unwrap_or(if self.command.is_some() {
            McpTransport::Stdio
        } else {
            McpTransport::StreamableHttp
        })
    }

    /// What is wrong with this entry, if anything: a transport without what it needs.
    pub fn check(&self) -> Result<(), String> {
        match (self.transport(), &self.command, &self.url) {
            (McpTransport::Stdio, None, _) => Err("a stdio MCP server needs `command`".into()),
            (McpTransport::Stdio, Some(_), Some(_)) => {
                Err("give an MCP server either `command` or `url`, not both".into())
            }
            (McpTransport::StreamableHttp | McpTransport::Sse, _, None) => {
                Err("an HTTP MCP server needs `url`".into())
            }
            (McpTransport::StreamableHttp | McpTransport::Sse, Some(_), Some(_)) => {
                Err("give an MCP server either `command` or `url`, not both".into())
            }
            _ => Ok(()),
        }
    }

    /// What is wrong with the credentials `auth` gives this server, if anything: a child
    /// takes its credentials from its environment, the older HTTP+SSE transport a fixed
    /// bearer token only, and streamable HTTP a bearer token, the client credentials grant
    /// or each person's own token.
    pub fn check_auth(&self, auth: Option<&AuthConfig>) -> Result<(), String> {
        let per_person = auth.is_some_and(AuthConfig::is_per_person);
        if self.list_token_env.is_some() && !per_person {
            return Err("`list_token_env` is for a server whose calls carry each person's own token (auth of kind token_exchange or authorization_code)".into());
        }
        match (self.transport(), auth) {
            (_, None) => Ok(()),
            (McpTransport::Stdio, Some(_)) => Err("a stdio MCP server takes no `auth`: give it its credentials through `env` or `set_env`".into()),
            (McpTransport::Sse, Some(AuthConfig::Bearer { .. })) => Ok(()),
            (McpTransport::Sse, Some(_)) => Err("an HTTP+SSE MCP server takes a bearer token only (`kind = \"bearer\"`); obtained tokens need streamable HTTP".into()),
            (McpTransport::StreamableHttp, Some(a)) if a.is_obtained() || matches!(a, AuthConfig::Bearer { .. }) => Ok(()),
            (McpTransport::StreamableHttp, Some(_)) => Err("an MCP server takes a bearer token, the client credentials grant or each person's own token (token_exchange, authorization_code)".into()),
        }
    }

    /// Whether a tool of this server is served at all (`include`, `exclude`).
    pub fn serves(&self, tool: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| name_matches(p, tool)))
            && !self.exclude.iter().any(|p| name_matches(p, tool))
    }

    /// Whether the operator vouches for this tool being read-only.
    pub fn vouched_read_only(&self, tool: &str) -> bool {
        self.read_only_tools.iter().any(|p| name_matches(p, tool))
    }

    /// The child's whole environment: the allowed names that `lookup` knows, then the
    /// literal values.
    pub fn child_env(&self, lookup: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for name in DEFAULT_ENV
            .iter()
            .copied()
            .chain(self.env.iter().map(String::as_str))
        {
            if let Some(v) = lookup(name) {
                out.insert(name.to_string(), v);
            }
        }
        for (k, v) in &self.set_env {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    /// The command line as a person would type it, for messages.
    pub fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(c), _) => std::iter::once(c.as_str())
                .chain(self.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(u)) => super::without_credentials(u),
            (None, None) => "(nothing to start)".into(),
        }
    }
}

/// What is wrong with an API's (not an MCP server's) credentials, if anything: only an MCP
/// server publishes the metadata that the settings left out would be read from.
pub fn check_api_auth(auth: Option<&AuthConfig>) -> Result<(), String> {
    match auth {
        Some(AuthConfig::TokenExchange { audience, .. }) if audience.is_empty() => {
            Err("auth of kind token_exchange needs `audience`".into())
        }
        Some(AuthConfig::AuthorizationCode {
            authorize_url,
            token_url,
            ..
        }) if authorize_url.is_empty() || token_url.is_empty() => {
            Err("auth of kind authorization_code needs `authorize_url` and `token_url`".into())
        }
        _ => Ok(()),
    }
}

/// `pattern` is a tool name, or a prefix followed by `*`.
fn name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_take_names_and_prefixes() {
        let s = McpSource {
            command: Some("x".into()),
            include: vec!["git_*".into(), "echo".into()],
            exclude: vec!["git_reset".into()],
            ..McpSource::default()
        };
        assert!(s.serves("git_log") && s.serves("echo"));
        assert!(!s.serves("git_reset") && !s.serves("echoes"));
    }

    #[test]
    fn a_child_sees_only_the_names_it_is_allowed() {
        let s = McpSource {
            command: Some("x".into()),
            env: vec!["MEMORY_FILE_PATH".into()],
            set_env: [("TZ".to_string(), "UTC".to_string())].into(),
            ..McpSource::default()
        };
        let env = s.child_env(|k| match k {
            "PATH" => Some("/bin".into()),
            "MEMORY_FILE_PATH" => Some("/tmp/m.json".into()),
            "SHORTLIST_STATE_KEY" | "AWS_SECRET_ACCESS_KEY" => Some("secret".into()),
            _ => None,
        });
        assert_eq!(
            env.keys().map(String::as_str).collect::<Vec<_>>(),
            ["MEMORY_FILE_PATH", "PATH", "TZ"]
        );
    }

    #[test]
    fn an_entry_needs_what_its_transport_needs() {
        assert!(McpSource::default().check().is_err());
        let both = McpSource {
            command: Some("x".into()),
            url: Some("http://h/mcp".into()),
            ..McpSource::default()
        };
        assert!(both.check().is_err());
        let http = McpSource {
            url: Some("http://h/mcp".into()),
            ..McpSource::default()
        };
        assert_eq!(http.transport(), McpTransport::StreamableHttp);
        assert!(http.check().is_ok());
    }

    #[test]
    fn credentials_fit_the_transport() {
        let bearer = AuthConfig::Bearer {
            token_env: "T".into(),
        };
        let exchange = AuthConfig::TokenExchange {
            token_url: None,
            client_id: "c".into(),
            client_secret_env: "S".into(),
            audience: String::new(),
            scope: None,
            trust_token_url: false,
        };
        let child = McpSource {
            command: Some("x".into()),
            ..McpSource::default()
        };
        assert!(child.check_auth(Some(&bearer)).unwrap_err().contains("env"));
        let http = McpSource {
            url: Some("https://mcp.example/mcp".into()),
            ..McpSource::default()
        };
        assert!(http.check_auth(Some(&exchange)).is_ok());
        let sse = McpSource {
            transport: Some(McpTransport::Sse),
            ..http.clone()
        };
        assert!(sse.check_auth(Some(&bearer)).is_ok());
        assert!(sse.check_auth(Some(&exchange)).is_err());
        let listed = McpSource {
            list_token_env: Some("L".into()),
            ..http
        };
        assert!(listed.check_auth(Some(&bearer)).is_err());
        assert!(listed.check_auth(Some(&exchange)).is_ok());
        // Only an MCP server's metadata can stand in for a missing audience.
        assert!(check_api_auth(Some(&exchange)).is_err());
    }
}
