//! The edit semantics through the real wasm component, against the plain reference model
//! shared with the core library's native property test. The native test runs thousands of
//! cases at native speed; this one runs the same generator through wasmtime and the
//! embedded component, so the shipped artifact is held to the model too.

use proptest::prelude::*;
use satyrn_contract::repo::RepoRoot;
use satyrn_engine::{EditError, EditOp, EditRequest, InsertAfterEdit, Loaded, ReplaceEdit};
use satyrn_protocol::problem_spelling;

#[path = "../../components/mutator-core/tests/common/edit_model.rs"]
mod edit_model;

use edit_model::{Codes, E, edits_for, file, model};

struct Worktree {
    dir: tempfile::TempDir,
    root: RepoRoot,
    loaded: Loaded,
}

impl Worktree {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        crate::support::git_ok(dir.path(), &["init", "-q", "."]);
        let root = RepoRoot::open(dir.path()).expect("root");
        Self {
            dir,
            root,
            loaded: Loaded::new().expect("engine"),
        }
    }
}

fn wit_op(e: &E) -> EditOp {
    if e.insert {
        EditOp::InsertAfter(InsertAfterEdit {
            anchor_text: e.selector.clone(),
            new_text: e.new_text.clone(),
            occurrence: e.occurrence,
        })
    } else {
        EditOp::Replace(ReplaceEdit {
            old_text: e.selector.clone(),
            new_text: e.new_text.clone(),
            occurrence: e.occurrence,
        })
    }
}

fn check(w: &Worktree, text: &str, edits: &[E]) -> Result<(), TestCaseError> {
    std::fs::write(w.dir.path().join("f.txt"), text).expect("write");
    let sha = satyrn_mutator_core::revision::Revision::of(text.as_bytes()).to_hex();
    let mut mutator = w.loaded.instantiate(w.root.dir()).expect("instantiate");
    let decided = mutator
        .edit(&EditRequest {
            path: "f.txt".to_string(),
            writable_paths: vec!["*.txt".to_string()],
            private_paths: Vec::new(),
            expected_sha256: Some(sha),
            edits: edits.iter().map(wit_op).collect(),
        })
        .expect("the component never traps");
    match (model(text, edits), decided) {
        (Ok(bytes), Ok(plan)) => {
            prop_assert_eq!(bytes.as_bytes(), plan.plan.new_content.as_slice());
            prop_assert_eq!(
                plan.plan.next_sha256,
                satyrn_mutator_core::revision::Revision::of(bytes.as_bytes()).to_hex()
            );
        }
        (Err(codes), Err(EditError::Rejected(rejection))) => {
            let got: Codes = rejection
                .problems
                .iter()
                .map(|p| (p.index.map(|i| i as usize), problem_spelling(p.code)))
                .collect();
            prop_assert_eq!(codes, got);
        }
        (expected, got) => prop_assert!(false, "model {:?} but component {:?}", expected, got),
    }
    // The component only plans: the file is untouched.
    prop_assert_eq!(
        std::fs::read(w.dir.path().join("f.txt")).expect("read"),
        text.as_bytes()
    );
    Ok(())
}

thread_local! {
    static WORKTREE: Worktree = Worktree::new();
}

proptest! {
    #![proptest_config(crate::cases::config(1500))]

    #[test]
    fn the_component_agrees_with_the_reference_model((text, edits) in file().prop_flat_map(edits_for)) {
        WORKTREE.with(|w| check(w, &text, &edits))?;
    }
}
