//! The team server's front door: the HTTP server as an OAuth 2.1 resource server.
//!
//! When the catalog config has an `[auth]` table, every `/mcp` request carries an access
//! token that the organisation's identity provider signed for this server (RFC 8707
//! audience). [`Verifier`] checks it against the issuer's published keys ([`jwks`]); the
//! [`layer`] answers `401`/`403` the way MCP authorization asks (RFC 6750, RFC 9728) and
//! hands the verified [`Principal`] to the MCP handler in the request's extensions.
//! [`visibility`] decides which APIs a principal sees.
//!
//! This module knows nothing of MCP: it reads the config types of `catalog` and speaks HTTP.

pub mod discovery;
pub mod jwks;
pub mod layer;
pub mod metadata;
pub mod principal;
pub mod verify;
pub mod visibility;

pub use layer::require_access_token;
pub use principal::{Principal, SubjectToken};
pub use verify::{AuthError, Verifier};
pub use visibility::{api_visible, sees};
