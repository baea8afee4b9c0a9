//! The gates of `edit::decide` and `replace::revision` natively, in their documented order,
//! each refusal beside the sibling that passes it; the codes' spellings; revision shapes.
//! (The component runs the same code: tests/it/protocol_*.rs.)

use satyrn_mutator_core::edit::{self, EditError, EditOp, EditRequest, MAX_EDITS};
use satyrn_mutator_core::replace::{self, Refusal, RefusalCode, ReplaceError, RevisionError};
use satyrn_mutator_core::revision::Revision;
use std::collections::BTreeMap;

mod common;
use common::memory::Memory;

fn worktree() -> Memory {
    Memory(BTreeMap::from([
        ("src/a.txt".to_string(), Some(b"hello world\n".to_vec())),
        ("src/latin1.txt".to_string(), Some(vec![0xe9, b'\n'])),
        ("src/link.txt".to_string(), None),
        (".git/config".to_string(), Some(b"[core]\n".to_vec())),
    ]))
}

fn sha(bytes: &[u8]) -> String {
    Revision::of(bytes).to_hex()
}

const REPLACE: &[EditOp<'static>] = &[EditOp::Replace {
    old_text: "world",
    new_text: "satyrn",
    occurrence: None,
}];

fn decide(path: &str, expected: Option<&str>, edits: &[EditOp<'_>]) -> Result<Vec<u8>, EditError> {
    let writable = vec!["*".to_string()];
    edit::decide(
        &worktree(),
        &EditRequest {
            path,
            writable_paths: &writable,
            private_paths: &[],
            expected_sha256: expected,
            edits,
        },
    )
    .map(|plan| plan.plan.new_content)
}

fn refusal_code(result: &Result<Vec<u8>, EditError>) -> Option<RefusalCode> {
    match result {
        Err(EditError::Refused(Refusal { code, .. })) => Some(*code),
        _ => None,
    }
}

#[test]
fn edit_gates_refuse_in_order_and_the_sibling_passes() {
    let good = sha(b"hello world\n");
    // Malformed requests first, before any file is read.
    for (path, expected, edits) in [
        ("../a.txt", Some(good.as_str()), REPLACE),
        ("src/a.txt", Some("ABC"), REPLACE),
        ("src/a.txt", Some(good.as_str()), &[][..]),
        (
            "src/a.txt",
            Some(good.as_str()),
            &[EditOp::Replace {
                old_text: "world",
                new_text: "x",
                occurrence: Some(0),
            }][..],
        ),
    ] {
        let result = decide(path, expected, edits);
        assert!(
            matches!(result, Err(EditError::InvalidRequest(_))),
            "{path} {expected:?}: {result:?}"
        );
    }
    let many = vec![REPLACE[0]; MAX_EDITS + 1];
    assert!(matches!(
        decide("src/a.txt", Some(&good), &many),
        Err(EditError::InvalidRequest(_))
    ));
    // `.git` is never declared, even under `*`.
    assert_eq!(
        refusal_code(&decide(".git/config", Some(&sha(b"[core]\n")), REPLACE)),
        Some(RefusalCode::PathUndeclared)
    );
    // Declared but never read.
    assert_eq!(
        refusal_code(&decide("src/a.txt", None, REPLACE)),
        Some(RefusalCode::RevisionUnavailable)
    );
    // Not an editable file.
    assert_eq!(
        refusal_code(&decide("src/link.txt", Some(&good), REPLACE)),
        Some(RefusalCode::MutationFailed)
    );
    assert_eq!(
        refusal_code(&decide("src/missing.txt", Some(&good), REPLACE)),
        Some(RefusalCode::MutationFailed)
    );
    // Stale: the current revision is reported.
    match decide("src/a.txt", Some(&sha(b"older\n")), REPLACE) {
        Err(EditError::Stale { message, current }) => {
            assert_eq!(current.to_hex(), good);
            assert!(message.contains("read it again"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Not UTF-8 after an equal revision.
    assert_eq!(
        refusal_code(&decide(
            "src/latin1.txt",
            Some(&sha(&[0xe9, b'\n'])),
            REPLACE
        )),
        Some(RefusalCode::MutationFailed)
    );
    // The batch itself.
    let missing = [EditOp::Replace {
        old_text: "planet",
        new_text: "x",
        occurrence: None,
    }];
    assert!(matches!(
        decide("src/a.txt", Some(&good), &missing),
        Err(EditError::Rejected(_))
    ));
    // Sibling: every gate passes.
    assert_eq!(
        decide("src/a.txt", Some(&good), REPLACE).expect("plan"),
        b"hello satyrn\n"
    );
}

#[test]
fn edit_paths_must_be_declared_by_the_contract() {
    let good = sha(b"hello world\n");
    let narrow = vec!["docs/*".to_string()];
    let result = edit::decide(
        &worktree(),
        &EditRequest {
            path: "src/a.txt",
            writable_paths: &narrow,
            private_paths: &[],
            expected_sha256: Some(&good),
            edits: REPLACE,
        },
    );
    assert!(matches!(
        result,
        Err(EditError::Refused(Refusal {
            code: RefusalCode::PathUndeclared,
            ..
        }))
    ));
}

#[test]
fn revision_is_given_only_for_declared_editable_files() {
    let wt = worktree();
    let star = vec!["*".to_string()];
    assert_eq!(
        replace::revision(&wt, "src/a.txt", &star, &[]),
        Ok(Revision::of(b"hello world\n"))
    );
    assert_eq!(
        replace::revision(&wt, ".git/config", &star, &[]),
        Err(RevisionError::Undeclared)
    );
    assert_eq!(
        replace::revision(&wt, "src/a.txt", &["docs/*".to_string()], &[]),
        Err(RevisionError::Undeclared)
    );
    assert!(
        matches!(replace::revision(&wt, "src/link.txt", &star, &[]), Err(RevisionError::NotEditable(m)) if m.contains("symbolic link"))
    );
    assert!(matches!(
        replace::revision(&wt, "/abs", &star, &[]),
        Err(RevisionError::InvalidRequest(_))
    ));
}

#[test]
fn codes_are_spelled_as_the_protocol_documents_them() {
    let all = [
        (RefusalCode::PathUndeclared, "PATH_UNDECLARED"),
        (RefusalCode::RevisionUnavailable, "REVISION_UNAVAILABLE"),
        (RefusalCode::RevisionStale, "REVISION_STALE"),
        (RefusalCode::AnchorMissing, "ANCHOR_MISSING"),
        (RefusalCode::AnchorAmbiguous, "ANCHOR_AMBIGUOUS"),
        (RefusalCode::MutationFailed, "MUTATION_FAILED"),
    ];
    for (code, spelling) in all {
        assert_eq!(code.as_str(), spelling);
        let error = ReplaceError::Refused(Refusal {
            code,
            message: "why".to_string(),
        });
        assert_eq!(error.to_string(), format!("{spelling}: why"));
    }
    assert_eq!(
        ReplaceError::InvalidRequest("bad".into()).to_string(),
        "invalid request: bad"
    );
}

#[test]
fn revisions_are_64_lowercase_hex_digits() {
    let r = Revision::of(b"x");
    assert_eq!(Revision::parse(&r.to_hex()), Ok(r));
    assert_eq!(format!("{r}"), r.to_hex());
    assert_eq!(format!("{r:?}"), format!("Revision({})", r.to_hex()));
    for bad in [
        "",
        "abc",
        &r.to_hex().to_uppercase(),
        &format!("{}g", &r.to_hex()[..63]),
        &format!("{}0", r.to_hex()),
    ] {
        let error = Revision::parse(bad).expect_err(bad);
        assert!(
            error
                .to_string()
                .contains("64 lowercase hexadecimal digits")
        );
    }
}
