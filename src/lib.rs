//! shortlist: an MCP server that lets assistants use large REST API catalogs by exposing only
//! the few endpoints that matter for the task at hand.
//!
//! Data flows one way: [`catalog`] (load and normalize OpenAPI) -> [`index`] (doc text,
//! embeddings, persistence) -> [`shortlist`] (rank endpoints for a query) -> server -> invoke.

pub mod auth;
pub mod catalog;
pub mod console;
pub mod credentials;
pub mod enrich;
pub mod eval;
pub mod index;
pub mod invoke;
pub mod places;
pub mod server;
pub mod shortlist;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod upstream;
