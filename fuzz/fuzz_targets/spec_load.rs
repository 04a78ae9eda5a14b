//! See `shortlist_fuzz::spec_load` (fuzz/src/lib.rs) for what this target drives and asserts.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shortlist_fuzz::spec_load(data));
shortlist_fuzz::libfuzzer_main!();
