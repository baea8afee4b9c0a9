//! The change-set decision natively (`change_set::decide` and `decide_patch`) over a real
//! directory (`common/disk.rs`): what a whole set plans, path by path, and that one refused
//! operation refuses the set with every problem named. The decision reads only: the
//! directory is unchanged after every call, granted or refused. The component runs the same
//! code in `tests/it/change_set.rs`, which also publishes.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::disk::Disk;
use satyrn_mutator_core::change_set::{
    Action, ChangeOp, ChangeSetError, ChangeSetRequest, FileChange, OpCode, PatchRequest, decide,
    decide_patch,
};
use satyrn_mutator_core::edit::EditOp;
use satyrn_mutator_core::gates::RefusalCode;
use satyrn_mutator_core::revision::Revision;

fn worktree(files: &[(&str, &str)]) -> (tempfile::TempDir, Disk) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let at = dir.path().join(path);
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
        std::fs::write(at, text).expect("write");
    }
    let disk = Disk(dir.path().to_path_buf());
    (dir, disk)
}

/// Every file under `root`, by relative path.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("inside").to_string_lossy();
                out.insert(rel.into_owned(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

fn sha(text: &str) -> String {
    Revision::of(text.as_bytes()).to_hex()
}

fn patterns(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| (*s).to_owned()).collect()
}

fn by_path(changes: Vec<FileChange>) -> BTreeMap<String, FileChange> {
    changes.into_iter().map(|c| (c.path.clone(), c)).collect()
}

const MAIN: &str = "fn main() {\n    old();\n}\n";
const LIB: &str = "pub fn lib() {}\n";
const GONE: &str = "remove me\n";

#[test]
fn a_whole_set_plans_every_path_and_changes_nothing_on_disk() {
    let (dir, disk) = worktree(&[
        ("src/main.rs", MAIN),
        ("src/lib.rs", LIB),
        ("src/gone.rs", GONE),
    ]);
    let before = snapshot(dir.path());
    let (main_sha, lib_sha, gone_sha) = (sha(MAIN), sha(LIB), sha(GONE));
    let edits = [EditOp::Replace {
        old_text: "old();",
        new_text: "new();",
        occurrence: None,
    }];
    let ops = [
        ChangeOp {
            path: "src/main.rs",
            expected_sha256: Some(&main_sha),
            action: Action::Edit(&edits),
            line: None,
        },
        ChangeOp {
            path: "src/new.rs",
            expected_sha256: None,
            action: Action::Write("pub fn new() {}\n"),
            line: None,
        },
        ChangeOp {
            path: "src/gone.rs",
            expected_sha256: Some(&gone_sha),
            action: Action::Delete,
            line: None,
        },
        ChangeOp {
            path: "src/lib.rs",
            expected_sha256: Some(&lib_sha),
            action: Action::Move {
                to: "src/moved/lib.rs",
                to_expected_sha256: None,
            },
            line: None,
        },
    ];
    let writable = patterns(&["src/*"]);
    let planned = decide(
        &disk,
        &ChangeSetRequest {
            ops: &ops,
            writable_paths: &writable,
            private_paths: &[],
        },
    )
    .expect("the set is granted");
    let planned = by_path(planned);
    let main = &planned["src/main.rs"];
    assert_eq!(main.base, Some(Revision::of(MAIN.as_bytes())));
    let new_main = "fn main() {\n    new();\n}\n";
    assert_eq!(main.content.as_deref(), Some(new_main.as_bytes()));
    assert_eq!(main.next, Some(Revision::of(new_main.as_bytes())));
    let created = &planned["src/new.rs"];
    assert_eq!(created.base, None);
    assert_eq!(created.content.as_deref(), Some(&b"pub fn new() {}\n"[..]));
    let gone = &planned["src/gone.rs"];
    assert_eq!(gone.base, Some(Revision::of(GONE.as_bytes())));
    assert_eq!(gone.content, None);
    let moved_from = &planned["src/lib.rs"];
    assert_eq!(moved_from.content, None, "a move removes its source");
    let moved = &planned["src/moved/lib.rs"];
    assert_eq!(moved.content.as_deref(), Some(LIB.as_bytes()));
    assert_eq!(moved.mode_from.as_deref(), Some("src/lib.rs"));
    assert_eq!(snapshot(dir.path()), before, "deciding writes nothing");
}

#[test]
fn one_refused_operation_refuses_the_set_and_names_every_problem() {
    let (dir, disk) = worktree(&[
        ("src/main.rs", MAIN),
        (".env", "KEY=1\n"),
        ("README", "r\n"),
    ]);
    let before = snapshot(dir.path());
    let main_sha = sha(MAIN);
    let stale = sha("what the caller saw once\n");
    let edits = [EditOp::Replace {
        old_text: "old();",
        new_text: "new();",
        occurrence: None,
    }];
    let set = |ops: &[ChangeOp<'_>]| {
        decide(
            &disk,
            &ChangeSetRequest {
                ops,
                writable_paths: &patterns(&["src/*", "*.env", ".env"]),
                private_paths: &patterns(&[".env"]),
            },
        )
    };
    // The sibling: the good operation alone is granted.
    let good = ChangeOp {
        path: "src/main.rs",
        expected_sha256: Some(&main_sha),
        action: Action::Edit(&edits),
        line: None,
    };
    assert!(set(&[good]).is_ok());
    let ops = [
        good,
        ChangeOp {
            path: "README",
            expected_sha256: None,
            action: Action::Write("changed\n"),
            line: None,
        },
        ChangeOp {
            path: ".env",
            expected_sha256: None,
            action: Action::Write("KEY=2\n"),
            line: None,
        },
        ChangeOp {
            path: "src/main.rs",
            expected_sha256: Some(&stale),
            action: Action::Delete,
            line: None,
        },
        ChangeOp {
            path: "src/missing.rs",
            expected_sha256: Some(&main_sha),
            action: Action::Delete,
            line: None,
        },
    ];
    let Err(ChangeSetError::Rejected { message, problems }) = set(&ops) else {
        panic!("the set must be refused whole");
    };
    assert!(message.contains("nothing was changed"), "{message}");
    let codes: Vec<(u32, OpCode)> = problems.iter().map(|p| (p.index, p.code)).collect();
    assert!(
        codes.contains(&(1, OpCode::Refused(RefusalCode::PathUndeclared))),
        "{codes:?}"
    );
    assert!(
        codes.contains(&(2, OpCode::Refused(RefusalCode::PathPrivate))),
        "{codes:?}"
    );
    assert!(codes.iter().any(|(i, _)| *i == 3), "{codes:?}");
    assert!(codes.iter().any(|(i, _)| *i == 4), "{codes:?}");
    assert!(
        codes.iter().all(|(i, _)| *i != 0),
        "the good op is no problem: {codes:?}"
    );
    assert!(problems.iter().all(|p| !p.message.is_empty()));
    assert_eq!(snapshot(dir.path()), before, "a refusal writes nothing");
}

#[test]
fn a_stale_revision_is_refused_with_the_current_one() {
    let (_dir, disk) = worktree(&[("src/main.rs", MAIN)]);
    let stale = sha("an older text\n");
    let ops = [ChangeOp {
        path: "src/main.rs",
        expected_sha256: Some(&stale),
        action: Action::Write("replaced\n"),
        line: None,
    }];
    let writable = patterns(&["src/*"]);
    let Err(ChangeSetError::Rejected { problems, .. }) = decide(
        &disk,
        &ChangeSetRequest {
            ops: &ops,
            writable_paths: &writable,
            private_paths: &[],
        },
    ) else {
        panic!("a stale revision is refused");
    };
    assert_eq!(
        problems[0].code,
        OpCode::Refused(RefusalCode::RevisionStale)
    );
    assert_eq!(problems[0].current, Some(Revision::of(MAIN.as_bytes())));
}

#[test]
fn malformed_sets_are_invalid_requests_before_any_gate() {
    let (_dir, disk) = worktree(&[("src/main.rs", MAIN)]);
    let writable = patterns(&["src/*"]);
    let request = |ops: &[ChangeOp<'_>]| {
        decide(
            &disk,
            &ChangeSetRequest {
                ops,
                writable_paths: &writable,
                private_paths: &[],
            },
        )
    };
    let invalid = |r: Result<Vec<FileChange>, ChangeSetError>, needle: &str| match r {
        Err(ChangeSetError::InvalidRequest(m)) => assert!(m.contains(needle), "{m}"),
        other => panic!("{needle}: {other:?}"),
    };
    invalid(request(&[]), "at least one operation");
    let write = |path| ChangeOp {
        path,
        expected_sha256: None,
        action: Action::Write("x\n"),
        line: None,
    };
    invalid(request(&[write("/etc/passwd")]), "ops[0].path");
    invalid(request(&[write("src/../x")]), "ops[0].path");
    let itself = ChangeOp {
        path: "src/main.rs",
        expected_sha256: None,
        action: Action::Move {
            to: "src/main.rs",
            to_expected_sha256: None,
        },
        line: None,
    };
    invalid(request(&[itself]), "itself");
    let bad_sha = ChangeOp {
        path: "src/main.rs",
        expected_sha256: Some("not-a-revision"),
        action: Action::Delete,
        line: None,
    };
    invalid(request(&[bad_sha]), "ops[0].expected_sha256");
}

#[test]
fn a_patch_plans_its_files_and_an_add_over_an_existing_path_is_refused() {
    let (dir, disk) = worktree(&[("src/main.rs", MAIN), ("src/gone.rs", GONE)]);
    let before = snapshot(dir.path());
    let writable = patterns(&["src/*"]);
    let seen = vec![
        ("src/main.rs".to_owned(), sha(MAIN)),
        ("src/gone.rs".to_owned(), sha(GONE)),
    ];
    let patch = "*** Begin Patch\n*** Update File: src/main.rs\n@@\n fn main() {\n-    old();\n+    new();\n }\n*** Add File: src/added.rs\n+pub fn added() {}\n*** Delete File: src/gone.rs\n*** End Patch\n";
    let planned = by_path(
        decide_patch(
            &disk,
            &PatchRequest {
                patch,
                expected_sha256: &seen,
                writable_paths: &writable,
                private_paths: &[],
                agent_root: None,
            },
        )
        .expect("the patch is granted"),
    );
    assert_eq!(
        planned["src/main.rs"].content.as_deref(),
        Some(&b"fn main() {\n    new();\n}\n"[..])
    );
    assert_eq!(
        planned["src/added.rs"].content.as_deref(),
        Some(&b"pub fn added() {}\n"[..])
    );
    assert_eq!(planned["src/gone.rs"].content, None);
    let add_existing = "*** Begin Patch\n*** Add File: src/main.rs\n+again\n*** End Patch\n";
    let Err(ChangeSetError::Rejected { problems, .. }) = decide_patch(
        &disk,
        &PatchRequest {
            patch: add_existing,
            expected_sha256: &seen,
            writable_paths: &writable,
            private_paths: &[],
            agent_root: None,
        },
    ) else {
        panic!("an Add over an existing file is refused");
    };
    assert_eq!(problems[0].code, OpCode::AddExists);
    assert_eq!(problems[0].line, Some(2), "the Add's header line");
    assert_eq!(snapshot(dir.path()), before, "deciding writes nothing");
}

/// Each gate of a set's single operation, refused with its code, beside the same kind of
/// operation granted.
#[test]
fn each_gate_of_an_operation_refuses_with_its_code_and_its_sibling_is_granted() {
    let (dir, disk) = worktree(&[("src/main.rs", MAIN), ("src/lib.rs", LIB)]);
    let before = snapshot(dir.path());
    let (main_sha, lib_sha) = (sha(MAIN), sha(LIB));
    let writable = patterns(&["src/*"]);
    let one = |op: ChangeOp<'_>| {
        decide(
            &disk,
            &ChangeSetRequest {
                ops: &[op],
                writable_paths: &writable,
                private_paths: &[],
            },
        )
    };
    let code = |r: Result<Vec<FileChange>, ChangeSetError>| match r {
        Err(ChangeSetError::Rejected { problems, .. }) => problems[0].code,
        other => panic!("expected a refusal: {other:?}"),
    };
    let replace = [EditOp::Replace {
        old_text: "old();",
        new_text: "new();",
        occurrence: None,
    }];
    let missing_anchor = [EditOp::Replace {
        old_text: "not in the file",
        new_text: "x",
        occurrence: None,
    }];
    let op = |path, sha, action| ChangeOp {
        path,
        expected_sha256: sha,
        action,
        line: None,
    };
    // An edit needs the revision the caller saw, and its batch must apply.
    assert_eq!(
        code(one(op("src/main.rs", None, Action::Edit(&replace)))),
        OpCode::Refused(RefusalCode::RevisionUnavailable)
    );
    assert_eq!(
        code(one(op(
            "src/main.rs",
            Some(&main_sha),
            Action::Edit(&missing_anchor)
        ))),
        OpCode::EditsRejected
    );
    assert!(one(op("src/main.rs", Some(&main_sha), Action::Edit(&replace))).is_ok());
    // A write without a revision creates; with one it overwrites; neither the other way.
    assert_eq!(
        code(one(op("src/main.rs", None, Action::Write("x\n")))),
        OpCode::Refused(RefusalCode::TargetExists)
    );
    assert_eq!(
        code(one(op(
            "src/absent.rs",
            Some(&main_sha),
            Action::Write("x\n")
        ))),
        OpCode::FileMissing
    );
    let overwritten =
        one(op("src/main.rs", Some(&main_sha), Action::Write("x\n"))).expect("an overwrite");
    assert_eq!(overwritten[0].base, Some(Revision::of(MAIN.as_bytes())));
    assert_eq!(overwritten[0].content.as_deref(), Some(&b"x\n"[..]));
    // A move onto an existing file needs that file's revision.
    let onto = |to_sha| {
        op(
            "src/main.rs",
            Some(&main_sha),
            Action::Move {
                to: "src/lib.rs",
                to_expected_sha256: to_sha,
            },
        )
    };
    assert_eq!(code(one(onto(None))), OpCode::MoveExists);
    let moved = by_path(one(onto(Some(&lib_sha))).expect("a move over a seen file"));
    assert_eq!(moved["src/lib.rs"].base, Some(Revision::of(LIB.as_bytes())));
    assert_eq!(
        moved["src/lib.rs"].content.as_deref(),
        Some(MAIN.as_bytes())
    );
    assert_eq!(moved["src/main.rs"].content, None);
    assert_eq!(snapshot(dir.path()), before, "deciding writes nothing");
}

/// Later operations of one set see what earlier ones did: a file written, then edited, then
/// moved, lands once, at its last path, with every change.
#[test]
fn later_operations_see_what_earlier_ones_did() {
    let (_dir, disk) = worktree(&[("src/main.rs", MAIN)]);
    let writable = patterns(&["src/*", "src/*/*"]);
    let edit = [EditOp::InsertAfter {
        anchor_text: "pub fn fresh() {}\n",
        new_text: "pub fn more() {}\n",
        occurrence: None,
    }];
    let ops = [
        ChangeOp {
            path: "src/fresh.rs",
            expected_sha256: None,
            action: Action::Write("pub fn fresh() {}\n"),
            line: None,
        },
        ChangeOp {
            path: "src/fresh.rs",
            expected_sha256: None,
            action: Action::Edit(&edit),
            line: None,
        },
        ChangeOp {
            path: "src/fresh.rs",
            expected_sha256: None,
            action: Action::Move {
                to: "src/deep/fresh.rs",
                to_expected_sha256: None,
            },
            line: None,
        },
    ];
    let planned = by_path(
        decide(
            &disk,
            &ChangeSetRequest {
                ops: &ops,
                writable_paths: &writable,
                private_paths: &[],
            },
        )
        .expect("a set that builds on itself"),
    );
    assert_eq!(
        planned["src/deep/fresh.rs"].content.as_deref(),
        Some(&b"pub fn fresh() {}\npub fn more() {}\n"[..])
    );
    assert_eq!(planned["src/deep/fresh.rs"].base, None);
    assert!(
        planned
            .get("src/fresh.rs")
            .is_none_or(|c| c.content.is_none() && c.base.is_none()),
        "{planned:?}"
    );
}
