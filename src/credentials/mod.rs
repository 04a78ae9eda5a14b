//! Upstream credentials obtained at run time rather than read from the environment.
//!
//! - [`client_credentials`]: an API's own token from an OAuth authorization server (the
//!   client credentials grant, for machine-to-machine APIs).
//! - [`token_exchange`]: a person's token for an API behind the organisation's identity
//!   provider, exchanged for their MCP access token (RFC 8693, on behalf of the caller).
//! - [`authorization_code`]: a person's token for a third-party API, after they consent
//!   once in a browser (PKCE); kept sealed in the state store and refreshed.
//! - [`broker`]: which of these an API's config names, and the token for one call;
//!   [`consent`]: a person's consent from link to stored token; [`renewal`]: a stored
//!   token's renewal (once across replicas) and revocation.
//!
//! Tokens are used until shortly before they expire. This module knows nothing of MCP: it
//! speaks OAuth to token endpoints and keeps per-person tokens in the state store.

pub mod authorization_code;
pub mod broker;
pub mod client_credentials;
pub mod consent;
pub mod renewal;
pub mod token_endpoint;
pub mod token_exchange;

pub use authorization_code::{AuthorizationCode, AuthorizationCodeSettings};
pub use broker::{Broker, Grant, Person, ServerSide};
pub use client_credentials::ClientCredentials;
pub use consent::{Completed, Incomplete};
pub use token_exchange::TokenExchange;

/// A token obtained at run time, with how long it may be used: secrets masking keeps it
/// no longer than that.
#[derive(Clone)]
pub struct Obtained {
    pub value: String,
    pub good_until: std::time::Instant,
}

impl std::fmt::Debug for Obtained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Obtained")
            .field("good_until", &self.good_until)
            .finish_non_exhaustive()
    }
}

/// Why no token could be had. Never carries a client secret or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("cannot reach the token endpoint {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the token endpoint {url} refused the request of client '{client_id}': {reason}")]
    Refused {
        url: String,
        client_id: String,
        reason: String,
    },
}
