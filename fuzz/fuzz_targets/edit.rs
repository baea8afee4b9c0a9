//! The `edit` fuzz target: libFuzzer's entry around `fuzz/targets/edit.rs`. Its input is
//! structured (`arbitrary`), so it keeps no committed inputs; the same model is held to the
//! library by the core's property tests (`components/mutator-core/tests/edit.rs`).
#![no_main]

#[path = "../targets/edit.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|input: (String, Vec<(bool, String, String, Option<u8>)>)| {
    target::check(input)
});
