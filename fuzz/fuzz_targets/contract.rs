//! The `contract` fuzz target: libFuzzer's entry around `fuzz/targets/contract.rs`, whose
//! checks `tests/it/fuzz_inputs.rs` also runs on every committed input.
#![no_main]

#[path = "../targets/contract.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::check(data));
