//! The `edit` fuzz target: libFuzzer's entry around `fuzz/targets/edit.rs`. Its input is
//! structured (`arbitrary`), so it keeps no committed inputs; `tests/it/fuzz_inputs.rs` runs its
//! checks on a few batches, and the core's property tests hold the same model to the
//! library.
#![no_main]

#[path = "../targets/edit.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|input: target::Input| target::check(input));
