//! Calling endpoints for real: the MCP tool schema of an endpoint, argument validation,
//! request building (encoding, styles, credentials, host pinning) and response shaping.
//!
//! `invoke` needs only an [`Endpoint`](crate::catalog::Endpoint), the API's
//! [`ApiConfig`](crate::catalog::ApiConfig) and the call's arguments; it knows nothing of
//! the index or the server. The server lists tools with [`input_schema`] and
//! [`annotations`], and runs them with [`Invoker::call`], mapping the [`CallOutcome`] to
//! an MCP result.
//!
//! ```text
//! args ─► validate (schema.rs/check.rs) ─► auth (env) ─► request (style.rs, body.rs)
//!      ─► client (timeout, same-host redirects) ─► response (cap, shape) ─► CallOutcome
//! ```

pub mod address;
pub mod annotations;
pub mod args;
pub mod auth;
pub mod body;
pub mod check;
pub mod client;
pub mod log_secrets;
pub mod mask;
pub mod mcp;
pub mod near;
pub mod outcome;
pub mod redact;
pub mod request;
pub mod response;
pub mod schema;
pub mod strict;
pub mod style;
pub mod transport;
pub mod validate;

pub use annotations::{annotations, ToolAnnotations};
pub use args::{arguments, ArgSpec, ArgTarget, BODY_ARG};
pub use client::{CallFor, Called, Invoker, InvokerOptions};
pub use outcome::CallOutcome;
pub use schema::input_schema;
pub use transport::{Egress, EgressError};
pub use validate::{validate, ValidArgs, ValidationError};
