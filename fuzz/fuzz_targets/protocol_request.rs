//! The `protocol_request` fuzz target: libFuzzer's entry around `fuzz/targets/protocol_request.rs`, whose
//! checks `tests/it/fuzz_inputs.rs` also runs on every committed input.
#![no_main]

#[path = "../targets/protocol_request.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::check(data));
