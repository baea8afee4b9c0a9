//! `edit::apply` and `edit::decide` against a plain reference model of the edit semantics.
//!
//! The reference is written the obvious way (char-by-char scans, `String` operations, all
//! matches collected, every pair compared) so that a disagreement points at the decision
//! code. It checks the same success bytes and the same refusal codes, in the same order.

use proptest::prelude::*;
use satyrn_mutator_core::edit::{self, EditError, EditOp, EditRequest};
use satyrn_mutator_core::revision::Revision;
use satyrn_mutator_core::worktree::{NotEditable, Worktree};

mod common;

use common::edit_model::{Codes, E, edits_for, file, model};

struct One(Vec<u8>);

impl Worktree for One {
    fn read_regular(&self, segments: &[&str], max_len: u64) -> Result<Vec<u8>, NotEditable> {
        if segments != ["f.txt"] {
            return Err(NotEditable("does not exist".into()));
        }
        if self.0.len() as u64 > max_len {
            return Err(NotEditable("too large".into()));
        }
        Ok(self.0.clone())
    }
}

fn check(text: &str, edits: &[E]) -> Result<(), TestCaseError> {
    let ops: Vec<EditOp<'_>> = edits.iter().map(E::op).collect();
    let expected = model(text, edits);
    let got = edit::apply(text, &ops);
    match (&expected, &got) {
        (Ok(bytes), Ok(applied)) => {
            prop_assert_eq!(bytes.as_bytes(), applied.content.as_slice());
            prop_assert!(!applied.changed.is_empty());
        }
        (Err(codes), Err(rejection)) => {
            let got: Codes = rejection
                .problems
                .iter()
                .map(|p| (p.index.map(|i| i as usize), p.code.as_str()))
                .collect();
            prop_assert_eq!(codes, &got);
        }
        _ => prop_assert!(false, "model {:?} but library {:?}", expected, got),
    }
    // Through every gate, with the revision: the same outcome, and the next revision.
    let writable = vec!["*.txt".to_string()];
    let sha = Revision::of(text.as_bytes()).to_hex();
    let worktree = One(text.as_bytes().to_vec());
    let decided = edit::decide(
        &worktree,
        &EditRequest {
            path: "f.txt",
            writable_paths: &writable,
            private_paths: &[],
            expected_sha256: Some(&sha),
            edits: &ops,
        },
    );
    match (&expected, decided) {
        (Ok(bytes), Ok(plan)) => {
            prop_assert_eq!(bytes.as_bytes(), plan.plan.new_content.as_slice());
            prop_assert_eq!(plan.plan.next, Revision::of(bytes.as_bytes()));
            prop_assert_eq!(plan.plan.base, Revision::of(text.as_bytes()));
        }
        (Err(codes), Err(EditError::Rejected(r))) => {
            let got: Codes = r
                .problems
                .iter()
                .map(|p| (p.index.map(|i| i as usize), p.code.as_str()))
                .collect();
            prop_assert_eq!(codes, &got);
        }
        (_, other) => prop_assert!(false, "model {:?} but decide {:?}", expected, other),
    }
    Ok(())
}

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(3000))]

    /// Generated files (LF, CRLF, mixed, bare CR, BOM, unicode, repeated lines) and batches.
    #[test]
    fn library_agrees_with_the_model((text, edits) in file().prop_flat_map(edits_for)) {
        check(&text, &edits)?;
    }

    /// Arbitrary text and selectors: no panic, and still the model's answer.
    #[test]
    fn arbitrary_text_agrees_with_the_model(
        text in "[ab\r\n \u{feff}é🦀\t]{0,24}",
        edits in prop::collection::vec(
            (any::<bool>(), "[ab\r\n é🦀\t]{0,4}", "[ab\r\n é]{0,3}", prop_oneof![Just(None), (1u32..5).prop_map(Some)]),
            1..5,
        ),
    ) {
        let edits: Vec<E> = edits
            .into_iter()
            .map(|(insert, selector, new_text, occurrence)| E { insert, selector, new_text, occurrence })
            .collect();
        check(&text, &edits)?;
    }
}

#[test]
fn the_gates_come_first_in_replace_order() {
    use satyrn_mutator_core::replace::RefusalCode;
    // Every request below fails several gates at once; the first gate in order decides.
    let empty_selector = [EditOp::Replace {
        old_text: "",
        new_text: "x",
        occurrence: None,
    }];
    let missing = [EditOp::Replace {
        old_text: "zzz",
        new_text: "x",
        occurrence: None,
    }];
    let writable = vec!["*.txt".to_string()];
    let worktree = One(b"abc\n".to_vec());
    let sha = Revision::of(b"abc\n").to_hex();
    let stale = Revision::of(b"other").to_hex();
    let decide = |path: &str, expected: Option<&str>, ops: &[EditOp<'_>]| {
        edit::decide(
            &worktree,
            &EditRequest {
                path,
                writable_paths: &writable,
                private_paths: &[],
                expected_sha256: expected,
                edits: ops,
            },
        )
    };
    let refused = |r: Result<_, EditError>| match r {
        Err(EditError::Refused(refusal)) => refusal.code,
        other => panic!("expected a refusal, got {other:?}"),
    };
    // Shape before policy: a bad path with an undeclared name and no revision.
    assert!(matches!(
        decide("../f.rs", None, &missing),
        Err(EditError::InvalidRequest(_))
    ));
    // `.git` and undeclared before the revision, before any file access.
    assert_eq!(
        refused(decide(".git/f.txt", None, &missing)),
        RefusalCode::PathUndeclared
    );
    assert_eq!(
        refused(decide("f.rs", None, &missing)),
        RefusalCode::PathUndeclared
    );
    assert_eq!(
        refused(decide("f.rs", Some(&stale), &missing)),
        RefusalCode::PathUndeclared
    );
    // Revision present before the file is read (`g.txt` does not exist).
    assert_eq!(
        refused(decide("g.txt", None, &missing)),
        RefusalCode::RevisionUnavailable
    );
    // The file must exist before its revision is compared.
    assert_eq!(
        refused(decide("g.txt", Some(&stale), &missing)),
        RefusalCode::MutationFailed
    );
    // A stale revision before any selector is looked at (missing, or empty).
    for ops in [&missing[..], &empty_selector[..]] {
        match decide("f.txt", Some(&stale), ops) {
            Err(EditError::Stale { current, message }) => {
                assert_eq!(current.to_hex(), sha);
                assert!(message.contains(&sha), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Only then the batch's own problems.
    match decide("f.txt", Some(&sha), &missing) {
        Err(EditError::Rejected(r)) => assert_eq!(r.problems[0].code.as_str(), "ANCHOR_MISSING"),
        other => panic!("{other:?}"),
    }
    match decide("f.txt", Some(&sha), &empty_selector) {
        Err(EditError::Rejected(r)) => assert_eq!(r.problems[0].code.as_str(), "SELECTOR_EMPTY"),
        other => panic!("{other:?}"),
    }
}
