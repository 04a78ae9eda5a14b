//! See `shortlist_fuzz::redact_secrets` (fuzz/src/lib.rs) for what this target drives and asserts.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shortlist_fuzz::redact_secrets(data));
shortlist_fuzz::libfuzzer_main!();
