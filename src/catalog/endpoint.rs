//! The `Endpoint` record: the currency every later stage (index, shortlist, server, invoke)
//! trades in. It is deliberately self-contained (schemas inlined, servers and auth copied in)
//! so that a stage holding one endpoint never needs the spec it came from.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// One API of a catalog: what is shared by all its endpoints.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Api {
    /// Spec id: the config's `id`, or the spec file's stem.
    pub id: String,
    /// `info.title`, or the id when the spec has none.
    pub title: String,
    /// `info.version`.
    pub version: String,
    /// `info.description`, raw.
    pub description: Option<String>,
    /// The declared `openapi` / `swagger` version string.
    pub spec_version: String,
    /// The file it was loaded from.
    pub source: std::path::PathBuf,
    /// Base URLs in the order the spec declares them.
    pub servers: Vec<String>,
    /// The catalog config entry (`[[api]]`, by position) that loaded this API: where its
    /// `visible_to`, `read_only` and `auth` come from. `None` for an API no entry loaded
    /// (never true of a loaded catalog), which therefore has no rule to satisfy and is
    /// served to nobody who is limited by rules.
    #[serde(skip)]
    pub config_index: Option<usize>,
}

/// HTTP methods an OpenAPI path item can hold.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Options,
    Head,
    Patch,
    Trace,
}

impl Method {
    /// All methods, in the order OpenAPI lists them in a path item.
    pub const ALL: [Method; 8] = [
        Method::Get,
        Method::Put,
        Method::Post,
        Method::Delete,
        Method::Options,
        Method::Head,
        Method::Patch,
        Method::Trace,
    ];

    /// The lower-case key used in a path item.
    pub fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Options => "options",
            Method::Head => "head",
            Method::Patch => "patch",
            Method::Trace => "trace",
        }
    }

    /// The upper-case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Head => "HEAD",
            Method::Patch => "PATCH",
            Method::Trace => "TRACE",
        }
    }

    /// Parses a method name in any case.
    pub fn parse(s: &str) -> Option<Method> {
        Method::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
    }

    /// Safe methods never change server state (RFC 9110 §9.2.1).
    pub fn is_safe(self) -> bool {
        matches!(
            self,
            Method::Get | Method::Head | Method::Options | Method::Trace
        )
    }

    /// Idempotent methods can be retried (RFC 9110 §9.2.2).
    pub fn is_idempotent(self) -> bool {
        self.is_safe() || matches!(self, Method::Put | Method::Delete)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a parameter travels.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ParamLocation {
    Path,
    Query,
    Header,
    Cookie,
    /// A top-level property of an MCP tool's `inputSchema`: the upstream's own argument,
    /// sent by name in `tools/call`.
    Argument,
}

impl ParamLocation {
    pub fn parse(s: &str) -> Option<ParamLocation> {
        match s {
            "path" => Some(ParamLocation::Path),
            "query" => Some(ParamLocation::Query),
            "header" => Some(ParamLocation::Header),
            "cookie" => Some(ParamLocation::Cookie),
            "argument" => Some(ParamLocation::Argument),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ParamLocation::Path => "path",
            ParamLocation::Query => "query",
            ParamLocation::Header => "header",
            ParamLocation::Cookie => "cookie",
            ParamLocation::Argument => "argument",
        }
    }
}

/// Where a generated value came from, so a reviewer (and a client) can tell it from
/// human-written text.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Provenance {
    /// `heuristic` or the LLM model id.
    pub generator: String,
    /// Prompt template name (empty for the heuristic enricher).
    pub template: String,
    /// ISO date of generation.
    pub date: String,
    /// The author's own text this generated one is shown instead of (a weak description,
    /// see `catalog::weak`): what the ranking reads when the generated text is the
    /// heuristic's, which adds nothing the author's words and the names do not carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
}

/// One operation parameter, merged from path-level and operation-level declarations.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub location: ParamLocation,
    pub required: bool,
    pub description: Option<String>,
    /// The parameter's JSON Schema, `$ref`s inlined (bounded; see `catalog::resolve`).
    pub schema: Value,
    /// OpenAPI serialization style (`form`, `simple`, `spaceDelimited`, `pipeDelimited`,
    /// `deepObject`, ...); `None` means the location's default.
    pub style: Option<String>,
    pub explode: Option<bool>,
    /// An example value, from `example`/`examples` or the schema.
    pub example: Option<Value>,
    pub deprecated: bool,
    /// Set when the description was generated rather than written by the spec's author.
    pub description_provenance: Option<Provenance>,
    /// Set when the example was generated.
    pub example_provenance: Option<Provenance>,
}

/// A request body, from 3.x `requestBody` or 2.0 `body` / `formData` parameters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestBody {
    /// The media type the body is sent as (`application/json` preferred when offered).
    pub content_type: String,
    pub required: bool,
    pub description: Option<String>,
    /// JSON Schema of the body, `$ref`s inlined (bounded).
    pub schema: Value,
}

/// How a security scheme wants its credential.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AuthScheme {
    ApiKey {
        name: String,
        location: ParamLocation,
    },
    Bearer,
    Basic,
    OAuth2 {
        scopes: Vec<String>,
    },
    OpenIdConnect,
    Other {
        description: String,
    },
}

/// One security alternative: every scheme in it applies together.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SecurityRequirement {
    pub schemes: Vec<(String, AuthScheme)>,
}

/// One operation of one API, normalized.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Endpoint {
    /// The id of the API this endpoint belongs to.
    pub api: String,
    /// The API's human title (`info.title`).
    pub api_title: String,
    /// Unique, stable tool name matching `^[a-zA-Z0-9_-]{1,64}$`.
    pub tool_name: String,
    pub method: Method,
    /// The path template exactly as the spec's `paths` key.
    pub path: String,
    pub operation_id: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub deprecated: bool,
    pub parameters: Vec<Parameter>,
    pub request_body: Option<RequestBody>,
    /// Property names found in the success response (a few levels deep). Tells which ids an
    /// endpoint produces, which the shortlist uses to add prerequisite endpoints.
    pub response_fields: Vec<String>,
    /// Alternatives of security requirements; empty means no auth declared.
    pub security: Vec<SecurityRequirement>,
    /// Base URLs: operation-level, else path-level, else API-level servers.
    pub servers: Vec<String>,
    /// Generated summary (document expansion); never replaces `summary`.
    pub generated_summary: Option<String>,
    /// Generated questions a user might ask that this endpoint answers.
    pub generated_questions: Vec<String>,
    /// Set when `description` was generated rather than written by the spec's author.
    pub description_provenance: Option<Provenance>,
    /// Set for a tool of an MCP server: what a call needs (its server, its own name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<super::mcp_tool::McpTool>,
}

impl Endpoint {
    /// `METHOD /path`, the way benchmarks and people name an endpoint.
    /// An MCP tool is named by its own name.
    pub fn key(&self) -> String {
        match &self.mcp {
            Some(t) => t.name.clone(),
            None => format!("{} {}", self.method, self.path),
        }
    }

    /// `<api> METHOD /path` (`<server> <tool>` for an MCP tool), unique across a
    /// multi-API catalog.
    pub fn qualified_key(&self) -> String {
        format!("{} {}", self.api, self.key())
    }

    /// `METHOD /path` for an endpoint of an HTTP API; `None` for an MCP server's tool, which
    /// has no route (its method and path only stand in for read-only-ness and its name).
    pub fn http_route(&self) -> Option<String> {
        self.mcp
            .is_none()
            .then(|| format!("{} {}", self.method, self.path))
    }

    /// How a call goes out, for people and models: `GET /movie/{id}`, or for an MCP
    /// server's tool `MCP tool get_current_time`.
    pub fn operation(&self) -> String {
        match &self.mcp {
            Some(t) => format!("MCP tool {}", t.name),
            None => format!("{} {}", self.method, self.path),
        }
    }

    /// The best short line describing the endpoint: summary, else the first sentence of the
    /// description, else the generated summary, else the method and path.
    pub fn one_line(&self) -> String {
        let pick = self
            .summary
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string)
            .or_else(|| {
                self.description
                    .as_deref()
                    .map(crate::text::first_sentence)
                    .filter(|s| !s.is_empty())
            })
            .or_else(|| self.generated_summary.clone());
        match pick {
            Some(s) => crate::text::clip_chars(&crate::text::clean(&s), 160),
            None => self.key(),
        }
    }

    /// Whether [`Endpoint::one_line`] shows generated text (a generated description's first
    /// sentence, or the generated summary) rather than what the spec's author wrote.
    pub fn one_line_generated(&self) -> bool {
        if self
            .summary
            .as_deref()
            .is_some_and(|s| !s.trim().is_empty())
        {
            return false;
        }
        let from_description = self
            .description
            .as_deref()
            .is_some_and(|d| !crate::text::first_sentence(d).is_empty());
        if from_description {
            self.description_provenance.is_some()
        } else {
            self.generated_summary.is_some()
        }
    }

    /// Parameters that must be supplied, by name.
    pub fn required_params(&self) -> impl Iterator<Item = &Parameter> {
        self.parameters.iter().filter(|p| p.required)
    }
}
