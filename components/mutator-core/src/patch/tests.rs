use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use alloc::collections::BTreeMap;

use super::{HunkProblemCode, Op, PatchErrorCode, apply_update, parse};
use crate::change_set::{FileChange, OpCode, OpProblem, RevisionPolicy, patch_ops, plan};
use crate::gates::{Refusal, RefusalCode};

/// A patch planned as a change set over an in-memory base, revisions unchecked.
fn planned(patch: &str, base: &[(&str, &str)]) -> Result<Vec<FileChange>, Vec<OpProblem>> {
    let files: BTreeMap<String, Vec<u8>> = base
        .iter()
        .map(|(p, t)| ((*p).to_string(), t.as_bytes().to_vec()))
        .collect();
    let patch = parse(patch).expect("parses");
    let ops = patch_ops(&patch, "", &|_| None);
    let mut read =
        |path: &str| -> Result<Option<Vec<u8>>, Refusal> { Ok(files.get(path).cloned()) };
    plan(&ops, &mut read, RevisionPolicy::Unchecked)
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(ToString::to_string).collect()
}

/// The hunks of a one-Update patch.
fn update(patch: &str) -> Vec<super::Hunk> {
    match parse(patch).expect("parses").ops.as_slice() {
        [Op::Update { hunks, .. }] => hunks.clone(),
        other => panic!("not one update: {other:?}"),
    }
}

#[test]
fn every_operation_parses_with_its_lines() {
    let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+fn a() {}\n+\n*** Delete File: old.txt\n*** Update File: src/lib.rs\n*** Move to: src/core.rs\n@@ fn f()\n-    1\n+    2\n     three\n*** End of File\n*** Add File: empty.txt\n*** End Patch\n";
    let parsed = parse(patch).expect("parses");
    assert_eq!(parsed.ops.len(), 4);
    assert_eq!(
        parsed.ops[0],
        Op::Add {
            line: 2,
            path: "src/new.rs".into(),
            text: "fn a() {}\n\n".into()
        }
    );
    assert_eq!(
        parsed.ops[1],
        Op::Delete {
            line: 5,
            path: "old.txt".into()
        }
    );
    let Op::Update {
        line,
        path,
        move_to,
        hunks,
    } = &parsed.ops[2]
    else {
        panic!()
    };
    assert_eq!(
        (*line, path.as_str(), move_to.as_deref()),
        (6, "src/lib.rs", Some("src/core.rs"))
    );
    assert_eq!(hunks.len(), 1);
    assert_eq!(hunks[0].anchor.as_deref(), Some("fn f()"));
    assert_eq!(hunks[0].old, lines("    1\n    three"));
    assert_eq!(hunks[0].new, lines("    2\n    three"));
    assert!(hunks[0].end_of_file);
    assert_eq!(
        parsed.ops[3],
        Op::Add {
            line: 13,
            path: "empty.txt".into(),
            text: String::new()
        }
    );
}

#[test]
fn the_costless_leniencies_are_accepted() {
    // Surrounding whitespace, a heredoc wrapper, CRLF, a first hunk without @@, a blank
    // context line without its space, blank lines between hunks.
    let patch = "\n  apply_patch <<'EOF'\r\n *** Begin Patch \r\n*** Update File:  a.txt \r\n x\r\n-y\r\n+Y\r\n\r\n z\r\n\r\n@@\r\n-w\r\n+W\r\n*** End Patch  \r\nEOF\r\n\n";
    let hunks = update(patch);
    assert_eq!(hunks.len(), 2);
    assert_eq!(
        hunks[0].old,
        vec!["x".to_string(), "y".into(), String::new(), "z".into()]
    );
    assert_eq!(
        hunks[0].new,
        vec!["x".to_string(), "Y".into(), String::new(), "z".into()]
    );
    assert_eq!(hunks[1].old, lines("w"));
    let Op::Update { path, .. } = &parse(patch).unwrap().ops[0] else {
        panic!()
    };
    assert_eq!(path, "a.txt");
}

#[test]
fn malformed_patches_are_named_refusals_with_their_line() {
    for (patch, code, line) in [
        ("", PatchErrorCode::NoBegin, 1),
        (
            "*** Add File: a\n+x\n*** End Patch",
            PatchErrorCode::NoBegin,
            1,
        ),
        (
            "*** Begin Patch\n*** Add File: a\n+x",
            PatchErrorCode::NoEnd,
            3,
        ),
        (
            "*** Begin Patch\n*** Rename File: a\n*** End Patch",
            PatchErrorCode::BadHeader,
            2,
        ),
        (
            "*** Begin Patch\n*** Add File:   \n*** End Patch",
            PatchErrorCode::BadHeader,
            2,
        ),
        (
            "*** Begin Patch\n*** Update File: a\n*** End Patch",
            PatchErrorCode::EmptyUpdate,
            2,
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
            PatchErrorCode::EmptyHunk,
            3,
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n x\n!y\n*** End Patch",
            PatchErrorCode::BadHunkLine,
            5,
        ),
        (
            "*** Begin Patch\n*** Update File: a\nnot a hunk\n*** End Patch",
            PatchErrorCode::BadHunkLine,
            3,
        ),
    ] {
        let err = parse(patch).expect_err(patch);
        assert_eq!(
            (err.code, err.line),
            (code, line),
            "{patch:?}: {}",
            err.message
        );
        assert!(!err.message.is_empty());
    }
    // A rename without hunks is an Update.
    assert!(parse("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch").is_ok());
}

#[test]
fn a_hunk_replaces_exactly_its_lines_and_keeps_line_endings_bom_and_final_newline() {
    let hunks =
        update("*** Begin Patch\n*** Update File: f\n@@\n a\n-b\n+B\n+B2\n c\n*** End Patch");
    assert_eq!(apply_update("a\nb\nc\n", &hunks).unwrap(), "a\nB\nB2\nc\n");
    assert_eq!(
        apply_update("a\r\nb\r\nc\r\n", &hunks).unwrap(),
        "a\r\nB\r\nB2\r\nc\r\n"
    );
    assert_eq!(
        apply_update("\u{feff}a\nb\nc", &hunks).unwrap(),
        "\u{feff}a\nB\nB2\nc"
    );
    // No final newline stays none, also when the last line changes.
    let last =
        update("*** Begin Patch\n*** Update File: f\n@@\n-c\n+C\n*** End of File\n*** End Patch");
    assert_eq!(apply_update("a\nc", &last).unwrap(), "a\nC");
    assert_eq!(apply_update("a\nc\n", &last).unwrap(), "a\nC\n");
}

#[test]
fn context_must_match_exactly_and_once_and_a_near_miss_is_reported() {
    let hunks = update(
        "*** Begin Patch\n*** Update File: f\n@@\n-    let x = 1;\n+    let x = 2;\n*** End Patch",
    );
    // Whitespace differs: refused, the near miss names the line.
    let err = apply_update("fn f() {\n  let x = 1;\n}\n", &hunks).unwrap_err();
    assert_eq!(err[0].code, HunkProblemCode::ContextMissing);
    assert!(
        err[0].message.contains("different whitespace at line 2"),
        "{}",
        err[0].message
    );
    // Twice: ambiguous, both lines named.
    let err = apply_update("    let x = 1;\nmid\n    let x = 1;\n", &hunks).unwrap_err();
    assert_eq!(err[0].code, HunkProblemCode::ContextAmbiguous);
    assert!(err[0].message.contains("lines 1, 3"), "{}", err[0].message);
    // Exactly once: applied (the sibling success).
    assert_eq!(
        apply_update("a\n    let x = 1;\n", &hunks).unwrap(),
        "a\n    let x = 2;\n"
    );
}

#[test]
fn an_anchor_narrows_the_search_and_must_itself_be_unique() {
    let hunks = update(
        "*** Begin Patch\n*** Update File: f\n@@ fn second\n-    return 1;\n+    return 2;\n*** End Patch",
    );
    let text = "fn first() {\n    return 1;\n}\nfn second() {\n    return 1;\n}\n";
    assert_eq!(
        apply_update(text, &hunks).unwrap(),
        "fn first() {\n    return 1;\n}\nfn second() {\n    return 2;\n}\n"
    );
    let twice = "fn second() {}\nfn second() {\n    return 1;\n}\n";
    assert_eq!(
        apply_update(twice, &hunks).unwrap_err()[0].code,
        HunkProblemCode::AnchorAmbiguous
    );
    let none = "fn third() {\n    return 1;\n}\n";
    assert_eq!(
        apply_update(none, &hunks).unwrap_err()[0].code,
        HunkProblemCode::AnchorMissing
    );
}

#[test]
fn hunks_apply_in_order_and_every_failing_hunk_is_reported() {
    let hunks = update(
        "*** Begin Patch\n*** Update File: f\n@@\n-x\n+X\n@@\n-missing\n+M\n@@\n-z\n+Z\n@@\n-gone\n+G\n*** End Patch",
    );
    let err = apply_update("x\ny\nz\n", &hunks).unwrap_err();
    let codes: Vec<(usize, HunkProblemCode)> = err.iter().map(|p| (p.hunk, p.code)).collect();
    assert_eq!(
        codes,
        vec![
            (2, HunkProblemCode::ContextMissing),
            (4, HunkProblemCode::ContextMissing)
        ]
    );
    // A later hunk is searched after the earlier one's match: the second `x` is unique there.
    let ok =
        update("*** Begin Patch\n*** Update File: f\n@@\n a\n-x\n+X\n@@\n-x\n+X2\n*** End Patch");
    assert_eq!(apply_update("a\nx\nb\nx\n", &ok).unwrap(), "a\nX\nb\nX2\n");
    // Without the context, the first hunk's `x` is ambiguous (no first-match fallback).
    let bare = update("*** Begin Patch\n*** Update File: f\n@@\n-x\n+X\n*** End Patch");
    assert_eq!(
        apply_update("a\nx\nb\nx\n", &bare).unwrap_err()[0].code,
        HunkProblemCode::ContextAmbiguous
    );
}

#[test]
fn an_insertion_goes_after_its_anchor_or_at_the_end_and_nowhere_else() {
    let after =
        update("*** Begin Patch\n*** Update File: f\n@@ [deps]\n+serde = \"1\"\n*** End Patch");
    assert_eq!(
        apply_update("[deps]\nx = 1\n", &after).unwrap(),
        "[deps]\nserde = \"1\"\nx = 1\n"
    );
    let end =
        update("*** Begin Patch\n*** Update File: f\n@@\n+tail\n*** End of File\n*** End Patch");
    assert_eq!(apply_update("a\n", &end).unwrap(), "a\ntail\n");
    assert_eq!(apply_update("", &end).unwrap(), "tail\n");
    let nowhere = update("*** Begin Patch\n*** Update File: f\n@@\n+lost\n*** End Patch");
    assert_eq!(
        apply_update("a\n", &nowhere).unwrap_err()[0].code,
        HunkProblemCode::NoPosition
    );
}

#[test]
fn end_of_file_requires_the_context_at_the_end() {
    let hunks =
        update("*** Begin Patch\n*** Update File: f\n@@\n-a\n+A\n*** End of File\n*** End Patch");
    assert_eq!(
        apply_update("a\nb\n", &hunks).unwrap_err()[0].code,
        HunkProblemCode::ContextMissing
    );
    assert_eq!(apply_update("b\na\n", &hunks).unwrap(), "b\nA\n");
}

#[test]
fn mixed_line_endings_are_refused_by_name() {
    let hunks = update("*** Begin Patch\n*** Update File: f\n@@\n-a\n+A\n*** End Patch");
    let err = apply_update("a\r\nb\nc\n", &hunks).unwrap_err();
    assert_eq!(err[0].code, HunkProblemCode::LineEndingsUnsupported);
    assert_eq!(err[0].code.as_str(), "LINE_ENDINGS_UNSUPPORTED");
}

#[test]
fn a_patch_is_decided_whole_against_one_base() {
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+n\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n*** Delete File: gone.txt\n*** Delete File: again.txt\n*** Add File: again.txt\n+fresh\n*** End Patch";
    let base = [
        ("a.txt", "a\n"),
        ("gone.txt", "g\n"),
        ("again.txt", "old\n"),
    ];
    let changes = planned(patch, &base).expect("applies");
    type Summary<'c> = (&'c str, bool, Option<&'c [u8]>, Option<&'c str>);
    let summary: Vec<Summary<'_>> = changes
        .iter()
        .map(|c| {
            (
                c.path.as_str(),
                c.base.is_some(),
                c.content.as_deref(),
                c.mode_from.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a.txt", true, None, None),
            ("again.txt", true, Some(&b"fresh\n"[..]), None),
            ("b.txt", false, Some(&b"A\n"[..]), Some("a.txt")),
            ("gone.txt", true, None, None),
            ("new.txt", false, Some(&b"n\n"[..]), None),
        ]
    );
}

#[test]
fn every_operation_s_problem_is_reported_and_nothing_is_planned() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Delete File: none.txt\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n*** Update File: c.txt\n@@\n-missing\n+M\n*** Update File: ghost.txt\n@@\n-x\n+y\n*** End Patch";
    let base = [("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")];
    let problems = planned(patch, &base).expect_err("refused");
    let codes: Vec<(u32, OpCode)> = problems.iter().map(|p| (p.index, p.code)).collect();
    assert_eq!(
        codes,
        vec![
            (0, OpCode::AddExists),
            (1, OpCode::FileMissing),
            (2, OpCode::MoveExists),
            (3, OpCode::HunksRefused),
            (4, OpCode::FileMissing),
        ]
    );
    assert_eq!(problems[3].hunks[0].code, HunkProblemCode::ContextMissing);
    // The sibling: the same patch without its faults applies.
    let fixed = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: d.txt\n@@\n-a\n+A\n*** Update File: c.txt\n@@\n-c\n+C\n*** End Patch";
    assert_eq!(planned(fixed, &base).expect("applies").len(), 3);
}

#[test]
fn a_failure_in_the_last_of_five_files_plans_nothing() {
    let mut patch = String::from("*** Begin Patch\n");
    for i in 1..=5 {
        patch.push_str(&alloc::format!(
            "*** Update File: f{i}.txt\n@@\n-old{i}\n+new{i}\n"
        ));
    }
    patch.push_str("*** End Patch");
    let base = [
        ("f1.txt", "old1\n"),
        ("f2.txt", "old2\n"),
        ("f3.txt", "old3\n"),
        ("f4.txt", "old4\n"),
        ("f5.txt", "changed\n"),
    ];
    let problems = planned(&patch, &base).expect_err("the last file fails");
    assert_eq!(problems.len(), 1);
    assert_eq!(
        (problems[0].index, problems[0].path.as_str()),
        (4, "f5.txt")
    );
    let base_ok = [
        ("f1.txt", "old1\n"),
        ("f2.txt", "old2\n"),
        ("f3.txt", "old3\n"),
        ("f4.txt", "old4\n"),
        ("f5.txt", "old5\n"),
    ];
    assert_eq!(planned(&patch, &base_ok).expect("applies").len(), 5);
}

#[test]
fn an_unreadable_or_binary_base_is_a_named_problem() {
    let patch = parse(
        "*** Begin Patch\n*** Delete File: dir\n*** Update File: bin.dat\n@@\n-a\n+b\n*** End Patch",
    )
    .unwrap();
    let ops = patch_ops(&patch, "", &|_| None);
    let mut read = |path: &str| -> Result<Option<Vec<u8>>, Refusal> {
        match path {
            "dir" => Err(Refusal::new(
                RefusalCode::MutationFailed,
                "`dir` is a directory".to_string(),
            )),
            _ => Ok(Some(b"a\n\0\n".to_vec())),
        }
    };
    let problems = plan(&ops, &mut read, RevisionPolicy::Unchecked).unwrap_err();
    assert_eq!(problems[0].code.as_str(), "MUTATION_FAILED");
    assert!(problems[0].message.contains("directory"));
    assert_eq!(problems[1].code, OpCode::NotText);
    assert_eq!(problems[1].code.as_str(), "NOT_TEXT");
    // The sibling: the same update of a text file applies.
    let mut text = |_: &str| -> Result<Option<Vec<u8>>, Refusal> { Ok(Some(b"a\n".to_vec())) };
    let changes = plan(&ops[1..], &mut text, RevisionPolicy::Unchecked).expect("applies");
    assert_eq!(changes[0].content.as_deref(), Some(&b"b\n"[..]));
}
