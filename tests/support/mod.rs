//! Helpers shared by integration tests (`mod support;`).
//!
//! Each test crate uses a different subset, so unused items are expected here.
#![allow(dead_code)]

pub mod proxy;
pub mod upstream;
