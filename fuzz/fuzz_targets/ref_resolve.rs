//! See `shortlist_fuzz::ref_resolve` (fuzz/src/lib.rs) for what this target drives and asserts.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shortlist_fuzz::ref_resolve(data));
shortlist_fuzz::libfuzzer_main!();
