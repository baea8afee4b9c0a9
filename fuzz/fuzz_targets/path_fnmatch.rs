//! The `path_fnmatch` fuzz target: libFuzzer's entry around `fuzz/targets/path_fnmatch.rs`, whose
//! checks `tests/it/fuzz_inputs.rs` also runs on every committed input.
#![no_main]

#[path = "../targets/path_fnmatch.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::check(data));
