//! The catalog config file (TOML): which APIs to load, and per API the base URL override,
//! credentials (by environment variable name, never the secret itself) and a read-only
//! switch.
//!
//! ```toml
//! data_dir = ".shortlist"          # optional, relative to this file (default: a per-user
//!                                  # cache folder for this catalog)
//! [model]                          # optional: the embedding model (flags override it)
//! dir = "models/bge-small-en"      # relative to this file
//! pooling = "cls"
//!
//! [[api]]
//! id = "tmdb"
//! spec = "tmdb.json"               # relative to this file
//! base_url = "https://api.themoviedb.org/3"
//! read_only = true
//! auth = { kind = "bearer", token_env = "TMDB_TOKEN" }
//! # allow_link_local = true      # only for an API served on a link-local address
//! visible_to = { groups = ["eng"], scopes = ["tmdb"] }   # optional: who sees this API
//!
//! [upstream]                       # optional: an egress proxy for calls to the APIs
//! proxy = "http://proxy.example.com:3128"
//!
//! [auth]                           # optional: the HTTP server as an OAuth resource server
//! issuer = "https://idp.example.com/realms/org"
//! audience = "https://shortlist.example.com/mcp"
//! required_scopes = ["mcp"]
//! ```

use serde::Deserialize;

pub use super::upstream_config::UpstreamConfig;
use std::path::{Path, PathBuf};

/// A whole catalog config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CatalogConfig {
    /// Where the index lives; relative paths are relative to the config file.
    pub data_dir: Option<PathBuf>,
    #[serde(default, rename = "api")]
    pub apis: Vec<ApiConfig>,
    /// Settings of `shortlist enrich` (command-line flags override them).
    #[serde(default)]
    pub enrich: Option<EnrichConfig>,
    /// The embedding model (command-line flags override it; it overrides the environment).
    #[serde(default)]
    pub model: Option<ModelConfig>,
    /// The HTTP server as an OAuth 2.1 resource server (tokens from this issuer only).
    #[serde(default)]
    pub auth: Option<ResourceServerConfig>,
    /// How calls to the APIs leave the host: directly, or through an egress proxy.
    #[serde(default)]
    pub upstream: Option<UpstreamConfig>,
}

/// The `[auth]` table: `serve --http` accepts only access tokens that `issuer` signed for
/// `audience` (the server's canonical `/mcp` URL, RFC 8707). The issuer's OpenID discovery
/// document names its signing keys; nothing secret is configured here.
///
/// ```toml
/// [auth]
/// issuer = "https://idp.example.com/realms/org"
/// audience = "https://shortlist.example.com/mcp"
/// required_scopes = ["mcp"]        # every token must carry all of these (default: none)
/// groups_claim = "groups"          # the claim that lists a person's groups (default)
/// leeway_secs = 30                 # clock skew allowed on exp and nbf (default)
/// jwks_min_refetch_secs = 10       # least time between two key fetches for unknown kids
/// admins = { groups = ["platform"] } # who reads the audit log in the console (see People)
/// reviewers = { groups = ["api-docs"] } # who may edit the tool text in the console
/// audit = "required"               # refuse a call whose audit record cannot be written
/// public_url = "https://shortlist.example.com"   # behind TLS termination (default: audience's origin)
/// signin = { client_id = "shortlist", client_secret_env = "SHORTLIST_SIGNIN_SECRET" }
/// ```
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ResourceServerConfig {
    pub issuer: String,
    pub audience: String,
    #[serde(default)]
    pub required_scopes: Vec<String>,
    pub groups_claim: Option<String>,
    pub leeway_secs: Option<u64>,
    pub jwks_min_refetch_secs: Option<u64>,
    /// Who, among the people the tokens name, administers this server's console.
    #[serde(default)]
    pub admins: Option<People>,
    /// Who, besides admins, may accept, edit or reject generated text in the console: the
    /// text every colleague's agent reads, so nobody else may write it.
    #[serde(default)]
    pub reviewers: Option<People>,
    /// Whether a call whose audit record cannot be written is refused (`required`) or
    /// made and the failure logged (`best_effort`, the default).
    #[serde(default)]
    pub audit: AuditMode,
    /// The server's public origin as people's browsers reach it (`https://...` behind a
    /// TLS-terminating balancer): where consent pages send browsers back to, and whether
    /// their cookies are `Secure`. Default: the origin of `audience`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// The server as an OpenID client of the issuer, which signs a person's browser in
    /// before a consent link goes on: a link opened by anyone but the person it was made
    /// for is refused. Needed by APIs whose `auth` is `authorization_code`.
    #[serde(default)]
    pub signin: Option<SignIn>,
}

/// `audit` in the `[auth]` table.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum AuditMode {
    /// A call is made even when its record cannot be written; the failure is logged.
    #[default]
    BestEffort,
    /// A call is made only once its record is written.
    Required,
}

/// `signin` in the `[auth]` table: the OpenID client (authorization code with PKCE) the
/// server signs browsers in with. Register it at the provider with the redirect URI
/// `<public_url>/oauth/signin`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    pub client_id: String,
    /// The environment variable holding the client's secret (absent: a public client).
    #[serde(default)]
    pub client_secret_env: Option<String>,
}

/// People named by a rule of the `[auth]` table (`admins`, `reviewers`): a person is
/// named when in any of `groups`, holding any of `scopes`, or listed in `subs` (exact,
/// case-sensitive names, as for `visible_to`). Groups are what a platform team manages at
/// its identity provider; `subs` is for a person or machine client outside them.
///
/// `admins` may read what the server records about everyone (the audit log, the metrics)
/// and see every API in the console whatever its `visible_to`; without `admins`, no access
/// token makes an admin: only the console's operator (the static `--auth-token-env` token,
/// or a loopback console without one) does. `reviewers` may also accept, edit and reject
/// generated text in the console.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct People {
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    #[serde(default)]
    pub subs: Vec<String>,
}

/// `visible_to` on an `[[api]]`: the API is visible to a person who is in any of `groups`
/// or holds any of `scopes`. Without it every person sees the API; with both lists empty,
/// nobody does.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct VisibleTo {
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// The `[model]` table: which embedding model and ONNX Runtime, and how to run them. Each
/// key has a flag of the same name (`--model-dir`, `--ort-library`, `--pooling`,
/// `--max-tokens`, `--embed-threads`) and an environment variable it overrides.
///
/// ```toml
/// [model]
/// dir = "models/bge-small-en-v1.5"     # model.onnx + tokenizer files; relative to this file
/// ort_library = "/opt/onnxruntime/lib/libonnxruntime.so.1.24.4"
/// pooling = "cls"                      # mean (default) or cls
/// max_tokens = 256
/// threads = 2
/// query_dir = "models/query"           # a model for requests beside `dir` (--query-model-dir)
/// ```
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub dir: Option<PathBuf>,
    pub ort_library: Option<PathBuf>,
    /// `mean` or `cls`; checked where the model is loaded.
    pub pooling: Option<String>,
    pub max_tokens: Option<usize>,
    pub threads: Option<usize>,
    /// A model that embeds requests into the document model's space.
    pub query_dir: Option<PathBuf>,
}

/// The `[enrich]` table: which LLM `shortlist enrich` talks to. The API key is named by
/// the environment variable that holds it, never written here.
///
/// ```toml
/// [enrich]
/// llm_url = "http://127.0.0.1:8080/v1"   # or "none" for the heuristic enricher
/// llm_model = "gpt-4o-mini"
/// api_key_env = "OPENAI_API_KEY"
/// concurrency = 4
/// prompts = "enrich-prompts"              # relative to this file
/// ```
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EnrichConfig {
    pub llm_url: Option<String>,
    pub llm_model: Option<String>,
    pub api_key_env: Option<String>,
    pub concurrency: Option<usize>,
    pub prompts: Option<PathBuf>,
}

/// One API entry.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// API id; defaults to the spec's file stem.
    pub id: Option<String>,
    /// Spec file (or folder of specs, each its own API); empty for an MCP server.
    #[serde(default)]
    pub spec: PathBuf,
    /// An MCP server whose tools this entry serves, instead of a spec.
    #[serde(default)]
    pub mcp: Option<super::mcp_config::McpSource>,
    /// Replaces the spec's servers.
    pub base_url: Option<String>,
    /// Refuse methods that are not safe (anything but GET/HEAD/OPTIONS).
    #[serde(default)]
    pub read_only: bool,
    pub auth: Option<AuthConfig>,
    /// Extra headers sent with every request (values are literal, not secrets).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Request timeout in seconds.
    pub timeout_secs: Option<u64>,
    /// Allow calls to link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata
    /// services (169.254.169.254, fd00:ec2::254, 100.100.100.200), which are refused by
    /// default: a spec naming one as its server (or a name resolving to one) would
    /// otherwise let a tool call read the host's cloud credentials. Loopback and private
    /// addresses are not affected.
    #[serde(default)]
    pub allow_link_local: bool,
    /// Allow calls to loopback and private addresses (127.0.0.0/8, 10.0.0.0/8,
    /// 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7, ...) on a server with an
    /// `[auth]` table, which refuses them by default: a team server runs inside the
    /// organisation's network, where a spec's author could otherwise point a tool at an
    /// internal service that was never registered as an API. A single person's server
    /// (no `[auth]`) calls them as declared.
    #[serde(default)]
    pub allow_private: bool,
    /// Through an egress proxy (`[upstream]`), hand this API's names to the proxy even
    /// when they do not resolve here (names only the proxy's network knows), so their
    /// addresses are not checked here. Names that resolve here are checked all the same.
    #[serde(default)]
    pub proxy_resolves: bool,
    /// Who sees this API when the server checks OAuth tokens (see [`VisibleTo`]).
    #[serde(default)]
    pub visible_to: Option<VisibleTo>,
}

impl ApiConfig {
    /// Whether the entry names exactly one source, and an MCP server an id: a server has
    /// no file whose name could stand in for one.
    pub fn check_source(&self) -> Result<(), String> {
        match (&self.mcp, self.spec.as_os_str().is_empty()) {
            (None, true) => Err("needs `spec` (an OpenAPI file or folder) or `mcp`".into()),
            (Some(_), false) => Err("give either `spec` or `mcp`, not both".into()),
            (Some(_), true) if self.id.as_deref().is_none_or(str::is_empty) => {
                Err("an MCP server needs an `id`".into())
            }
            (Some(m), true) => m.check().and(m.check_auth(self.auth.as_ref())),
            (None, false) => super::mcp_config::check_api_auth(self.auth.as_ref()),
        }
    }

    /// Whether this entry sets anything beyond its spec: then its id matters, since the
    /// id is how calls, stored tokens and reviews find the entry's settings.
    pub fn has_rules(&self) -> bool {
        self.visible_to.is_some()
            || self.auth.is_some()
            || self.read_only
            || self.base_url.is_some()
            || !self.headers.is_empty()
            || self.timeout_secs.is_some()
            || self.allow_link_local
            || self.allow_private
            || self.proxy_resolves
    }
}

pub use super::auth_config::{AuthConfig, KeyLocation};

impl CatalogConfig {
    /// Reads a config file; relative paths inside it are made relative to its folder.
    pub fn load(path: &Path) -> anyhow::Result<CatalogConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{}: cannot read catalog config: {e}", path.display()))?;
        let mut cfg: CatalogConfig = toml::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}: invalid catalog config: {}",
                path.display(),
                e.to_string().trim()
            )
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for (i, api) in cfg.apis.iter_mut().enumerate() {
            api.check_source()
                .map_err(|e| anyhow::anyhow!("{}: [[api]] #{}: {e}", path.display(), i + 1))?;
            if let Some(cwd) = api.mcp.as_mut().and_then(|m| m.cwd.as_mut()) {
                if cwd.is_relative() {
                    *cwd = dir.join(&*cwd);
                }
            }
            if api.mcp.is_none() && api.spec.is_relative() {
                api.spec = dir.join(&api.spec);
            }
        }
        if let Some(d) = &cfg.data_dir {
            if d.is_relative() {
                cfg.data_dir = Some(dir.join(d));
            }
        }
        if let Some(p) = cfg.enrich.as_mut().and_then(|e| e.prompts.as_mut()) {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
        if let Some(m) = cfg.model.as_mut() {
            for p in [m.dir.as_mut(), m.ort_library.as_mut(), m.query_dir.as_mut()]
                .into_iter()
                .flatten()
            {
                if p.is_relative() {
                    *p = dir.join(&*p);
                }
            }
        }
        Ok(cfg)
    }

    /// A config equivalent to plain spec paths given on the command line.
    pub fn from_paths(paths: &[PathBuf]) -> CatalogConfig {
        CatalogConfig {
            data_dir: None,
            enrich: None,
            model: None,
            auth: None,
            upstream: None,
            apis: paths
                .iter()
                .map(|p| ApiConfig {
                    id: None,
                    spec: p.clone(),
                    mcp: None,
                    base_url: None,
                    read_only: false,
                    auth: None,
                    headers: Default::default(),
                    timeout_secs: None,
                    allow_link_local: false,
                    allow_private: false,
                    proxy_resolves: false,
                    visible_to: None,
                })
                .collect(),
        }
    }

    /// The entry for an API id, if the config names it.
    pub fn api(&self, id: &str) -> Option<&ApiConfig> {
        self.apis.iter().find(|a| a.id.as_deref() == Some(id))
    }
}

#[cfg(test)]
mod tests {

    /// The proxy's password never shows in the config's debug form, with or without a
    /// scheme (the fingerprint and logs read that form).
    #[test]
    fn the_proxy_password_is_not_in_the_debug_form() {
        for proxy in ["http://me:s3cret@proxy:3128", "me:s3cret@proxy:3128"] {
            let cfg = UpstreamConfig {
                proxy: Some(proxy.into()),
                proxy_env: false,
            };
            let shown = format!("{cfg:?}");
            assert!(
                !shown.contains("s3cret") && shown.contains("proxy:3128"),
                "{shown}"
            );
        }
    }
    use super::*;

    #[test]
    fn parses_auth_variants() {
        let cfg: CatalogConfig = toml::from_str(
            r#"
            [[api]]
            spec = "a.json"
            auth = { kind = "api_key", name = "api_key", in = "query", value_env = "K" }
            [[api]]
            spec = "b.json"
            read_only = true
            auth = { kind = "basic", username_env = "U", password_env = "P" }
            "#,
        )
        .unwrap();
        assert_eq!(
            cfg.apis[0].auth,
            Some(AuthConfig::ApiKey {
                name: "api_key".into(),
                location: KeyLocation::Query,
                value_env: "K".into()
            })
        );
        assert!(cfg.apis[1].read_only);
    }

    #[test]
    fn model_table_paths_are_relative_to_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("catalog.toml");
        std::fs::write(
            &f,
            "[model]\ndir = \"m/e5\"\nort_library = \"/abs/libonnxruntime.so\"\npooling = \"cls\"\nmax_tokens = 128\nthreads = 2\n",
        )
        .unwrap();
        let m = CatalogConfig::load(&f).unwrap().model.unwrap();
        assert_eq!(m.dir, Some(tmp.path().join("m/e5")));
        assert_eq!(m.ort_library, Some(PathBuf::from("/abs/libonnxruntime.so")));
        assert_eq!(
            (m.pooling.as_deref(), m.max_tokens, m.threads),
            (Some("cls"), Some(128), Some(2))
        );
        assert!(toml::from_str::<CatalogConfig>("[model]\nfolder = 'x'\n").is_err());
    }

    #[test]
    fn parses_auth_table_and_visible_to() {
        let cfg: CatalogConfig = toml::from_str(
            r#"
            [auth]
            issuer = "https://idp.test"
            audience = "https://mcp.test/mcp"
            required_scopes = ["mcp"]
            [[api]]
            spec = "a.json"
            visible_to = { groups = ["eng"] }
            "#,
        )
        .unwrap();
        let auth = cfg.auth.unwrap();
        assert_eq!(
            (auth.issuer.as_str(), auth.required_scopes),
            ("https://idp.test", vec!["mcp".to_string()])
        );
        let v = cfg.apis[0].visible_to.clone().unwrap();
        assert_eq!((v.groups, v.scopes), (vec!["eng".to_string()], vec![]));
        assert!(toml::from_str::<CatalogConfig>("[auth]\nissuer='x'\n").is_err());
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert!(toml::from_str::<CatalogConfig>("[[api]]\nspec='a'\nbase='x'\n").is_err());
    }
}
