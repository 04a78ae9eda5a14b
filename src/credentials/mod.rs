//! Upstream credentials obtained at run time rather than read from the environment.
//!
//! [`client_credentials`]: an API's own token from an OAuth authorization server (the
//! client credentials grant, for machine-to-machine APIs), cached until shortly before it
//! expires. This module knows nothing of MCP: it speaks OAuth to token endpoints.

pub mod client_credentials;

pub use client_credentials::{ClientCredentials, CredentialError};
