//! The benchmark harness behind `shortlist eval`.
//!
//! - [`gold`] reads queries files and resolves their gold endpoints against the catalog;
//! - [`metrics`] scores one ranking (recall, precision, F1, completeness, MRR, nDCG at
//!   several k) and averages over queries;
//! - [`run`] indexes a catalog in a cache folder and ranks every query with the same
//!   [`crate::shortlist::Shortlister`] the server uses;
//! - [`report`] renders tables, JSON and the misses;
//! - [`suite`] runs several datasets and prints one table with their macro-average.

pub mod gold;
pub mod metrics;
pub mod report;
pub mod run;
pub mod suite;

pub use run::{run_setting, EvalConfig, EvalError, QueryFile, Setting, SettingReport};
