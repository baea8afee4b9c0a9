//! Every committed fuzz input — each target's regressions (`fuzz/regressions/TARGET/`) and
//! seeds (`fuzz/seeds/TARGET/`) — through the very checks its fuzz target makes
//! (`fuzz/targets/TARGET.rs`, included here), in the default test run and without
//! AddressSanitizer. The fuzzing campaign itself, instrumented, is `scripts/fuzz.sh`
//! (`docs/fuzzing.md`). The `edit` target takes structured input and keeps no inputs: its
//! checks run here on a few batches written out, so the target compiles in every run.

use std::path::{Path, PathBuf};

#[path = "../../fuzz/targets/contract.rs"]
mod contract;
// The target includes the edit model itself, as `edit_component` does: two copies of
// that model in this binary are harmless, and the target stays one file for libFuzzer.
#[allow(clippy::duplicate_mod)]
#[path = "../../fuzz/targets/edit.rs"]
mod edit;
#[path = "../../fuzz/targets/path_fnmatch.rs"]
mod path_fnmatch;
#[path = "../../fuzz/targets/protocol_request.rs"]
mod protocol_request;

/// The committed inputs of `target`, regressions first, each with its path.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut found = Vec::new();
    for kind in ["regressions", "seeds"] {
        let dir = fuzz.join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.map(|e| e.expect("a fuzz input").path()).collect();
        paths.sort();
        for path in paths {
            let bytes = std::fs::read(&path).expect("a readable fuzz input");
            found.push((path, bytes));
        }
    }
    found
}

/// Runs `check` on every committed input of `target`, naming the input that fails.
fn replay(target: &str, at_least: usize, check: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(
        inputs.len() >= at_least,
        "{target}: {} committed inputs, expected at least {at_least}",
        inputs.len()
    );
    for (path, bytes) in inputs {
        if std::panic::catch_unwind(|| check(&bytes)).is_err() {
            panic!(
                "{target}: {} fails its fuzz target's checks",
                path.display()
            );
        }
    }
}

#[test]
fn every_committed_protocol_request_input_passes_the_targets_checks() {
    replay("protocol_request", 8, protocol_request::check);
}

#[test]
fn every_committed_contract_input_passes_the_targets_checks() {
    replay("contract", 14, contract::check);
}

#[test]
fn every_committed_path_fnmatch_input_passes_the_targets_checks() {
    replay("path_fnmatch", 6, path_fnmatch::check);
}

#[test]
fn the_edit_targets_checks_hold_for_batches_that_apply_and_batches_that_are_refused() {
    let batch = |edits: &[(bool, &str, &str, Option<u8>)]| {
        edits
            .iter()
            .map(|(insert, s, n, o)| (*insert, (*s).to_owned(), (*n).to_owned(), *o))
            .collect::<Vec<_>>()
    };
    let text = "fn a() {}\nfn b() {}\nfn a() {}\n".to_owned();
    edit::check((text.clone(), batch(&[(false, "fn b", "fn c", None)])));
    edit::check((
        text.clone(),
        batch(&[(true, "fn b() {}\n", "// after b\n", None)]),
    ));
    edit::check((text.clone(), batch(&[(false, "fn a", "fn z", Some(1))])));
    // Refused batches: an ambiguous selector, a missing one, overlapping edits.
    edit::check((text.clone(), batch(&[(false, "fn a", "fn z", None)])));
    edit::check((text.clone(), batch(&[(false, "missing", "x", None)])));
    edit::check((
        text,
        batch(&[(false, "fn b", "x", None), (false, "b() {}", "y", None)]),
    ));
}

/// The replay can fail: a check that panics on an input fails the test, naming the input.
#[test]
fn an_input_that_fails_its_check_is_named() {
    let failed = std::panic::catch_unwind(|| replay("contract", 1, |_| panic!("violated")))
        .expect_err("a failing check fails the replay");
    let message = failed
        .downcast_ref::<String>()
        .expect("a formatted panic message");
    assert!(
        message.contains("fuzz/regressions/contract/crash-") && message.contains("fails"),
        "{message}"
    );
}
