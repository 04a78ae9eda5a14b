//! An API's credentials as the catalog config names them: which kind, and the environment
//! variables that hold its secrets.

use serde::Deserialize;

/// Credentials, named by the environment variables that hold them.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AuthConfig {
    /// `Authorization: Bearer <token>`.
    Bearer { token_env: String },
    /// An API key in a header or a query parameter.
    ApiKey {
        name: String,
        #[serde(rename = "in", default = "default_key_location")]
        location: KeyLocation,
        value_env: String,
    },
    /// HTTP basic auth.
    Basic {
        username_env: String,
        password_env: String,
    },
    /// The API's own token from an OAuth authorization server (the client credentials
    /// grant), for machine-to-machine APIs: one token for everyone, fetched and renewed by
    /// the server.
    ClientCredentials {
        token_url: String,
        client_id: String,
        client_secret_env: String,
        scope: Option<String>,
        /// RFC 8707 `resource`: the API as the authorization server names it.
        resource: Option<String>,
    },
    /// Each person's own token for an API behind the organisation's identity provider:
    /// their MCP access token exchanged at `token_url` (RFC 8693) for one whose audience
    /// is `audience`, the server authenticating as `client_id`. Needs the `[auth]` table.
    TokenExchange {
        /// Where the exchange is posted: by default the `[auth]` issuer's token endpoint
        /// (from its discovery document). Since the request carries the person's MCP
        /// access token, another URL is refused unless `trust_token_url` says so.
        #[serde(default)]
        token_url: Option<String>,
        client_id: String,
        client_secret_env: String,
        /// The audience asked for; an MCP server's may be left out and is then read from
        /// its protected-resource metadata (its `resource`).
        #[serde(default)]
        audience: String,
        scope: Option<String>,
        /// Send people's access tokens to a `token_url` that is not the `[auth]` issuer's
        /// token endpoint (an exchange service in front of the provider).
        #[serde(default)]
        trust_token_url: bool,
    },
    /// Each person's own token for a third-party API, by the authorization code grant
    /// with PKCE: the first call that needs it answers with a link the person opens to
    /// consent; the token is kept sealed in the state store and refreshed. Needs the
    /// `[auth]` table (the person) and `serve --http` (the redirect comes back to
    /// `/oauth/callback`).
    AuthorizationCode {
        /// An MCP server's two endpoints may be left out: they are then read from the
        /// authorization server its protected-resource metadata names.
        #[serde(default)]
        authorize_url: String,
        #[serde(default)]
        token_url: String,
        client_id: String,
        /// Absent for a public client (PKCE alone).
        client_secret_env: Option<String>,
        scope: Option<String>,
        /// RFC 8707 `resource`, sent with the authorization request.
        resource: Option<String>,
        /// Where tokens are revoked (RFC 7009) when the person disconnects.
        revocation_url: Option<String>,
        /// Default: the `/oauth/callback` of the server's public URL.
        redirect_uri: Option<String>,
        /// The authorization server's issuer identifier: when given, the redirect back must
        /// carry it as `iss` (RFC 9207), so a response from another server cannot be
        /// passed off as this one's (mix-up attacks).
        #[serde(default)]
        issuer: Option<String>,
    },
}

impl AuthConfig {
    /// The environment variables this credential reads.
    pub fn env_vars(&self) -> Vec<&str> {
        match self {
            AuthConfig::Bearer { token_env } => vec![token_env],
            AuthConfig::ApiKey { value_env, .. } => vec![value_env],
            AuthConfig::Basic {
                username_env,
                password_env,
            } => vec![username_env, password_env],
            AuthConfig::ClientCredentials {
                client_secret_env, ..
            }
            | AuthConfig::TokenExchange {
                client_secret_env, ..
            } => vec![client_secret_env],
            AuthConfig::AuthorizationCode {
                client_secret_env, ..
            } => client_secret_env.iter().map(String::as_str).collect(),
        }
    }

    /// Whether the token depends on who calls (a verified person is needed).
    pub fn is_per_person(&self) -> bool {
        matches!(
            self,
            AuthConfig::TokenExchange { .. } | AuthConfig::AuthorizationCode { .. }
        )
    }

    /// Whether the server obtains the token at run time (rather than reading it).
    pub fn is_obtained(&self) -> bool {
        self.is_per_person() || matches!(self, AuthConfig::ClientCredentials { .. })
    }
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum KeyLocation {
    Header,
    Query,
}

fn default_key_location() -> KeyLocation {
    KeyLocation::Header
}
