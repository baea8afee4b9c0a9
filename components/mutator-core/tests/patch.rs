//! `apply_patch` against a model of it: a hunk built from a unique block of random lines
//! applies to exactly the splice of that block; the parser and the applier never panic.

use proptest::prelude::*;
use satyrn_mutator_core::patch::{Op, apply_update, parse};

/// A line from a small alphabet, so that blocks repeat often enough to be ambiguous.
fn line() -> impl Strategy<Value = String> {
    prop::string::string_regex("[ab ]{0,3}").expect("regex")
}

/// The lines' occurrences of `block` as a contiguous run.
fn occurrences(lines: &[String], block: &[String]) -> usize {
    (0..=lines.len().saturating_sub(block.len()))
        .filter(|&p| p + block.len() <= lines.len() && lines[p..p + block.len()] == *block)
        .count()
}

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(2000))]

    #[test]
    fn a_hunk_applies_exactly_when_its_block_is_unique(
        lines in prop::collection::vec(line(), 1..12),
        from in 0usize..12,
        len in 1usize..4,
        new in prop::collection::vec(line(), 0..4),
        crlf in any::<bool>(),
        final_newline in any::<bool>(),
    ) {
        // A last empty line without a final newline is a final newline: no such file.
        prop_assume!(final_newline || lines.last().is_some_and(|l| !l.is_empty()));
        let from = from % lines.len();
        let len = len.min(lines.len() - from);
        let block = &lines[from..from + len];
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut text = lines.join(eol);
        if final_newline {
            text.push_str(eol);
        }
        let mut patch = String::from("*** Begin Patch\n*** Update File: f\n@@\n");
        for l in block {
            patch.push('-');
            patch.push_str(l);
            patch.push('\n');
        }
        for l in &new {
            patch.push('+');
            patch.push_str(l);
            patch.push('\n');
        }
        patch.push_str("*** End Patch\n");
        let parsed = parse(&patch);
        // A block of only empty lines reads as blank separators: nothing to check then.
        let Ok(parsed) = parsed else { return Ok(()) };
        let Some(Op::Update { hunks, .. }) = parsed.ops.first() else { return Ok(()) };
        if hunks[0].old != block {
            return Ok(());
        }
        let result = apply_update(&text, hunks);
        // Lines with a CR in them would be the file's line endings: the alphabet has none.
        if occurrences(&lines, block) == 1 {
            let mut expected: Vec<String> = lines[..from].to_vec();
            expected.extend(new.iter().cloned());
            expected.extend(lines[from + len..].iter().cloned());
            // A file without a line break has no line endings to keep: new lines take LF.
            let kept = if lines.len() > 1 || final_newline { eol } else { "\n" };
            let mut want = expected.join(kept);
            if final_newline && !expected.is_empty() {
                want.push_str(kept);
            }
            prop_assert_eq!(result.expect("a unique block applies"), want);
        } else {
            prop_assert!(result.is_err(), "an ambiguous block must be refused");
        }
    }

    #[test]
    fn parsing_and_applying_anything_never_panics(
        patch in "(\\*\\*\\* (Begin Patch|End Patch|Update File: f|Add File: g|End of File)|@@ ?[ab]?|[ +-][ab]{0,2}|)(\n(\\*\\*\\* (Begin Patch|End Patch|Update File: f|Add File: g|Delete File: h|Move to: i|End of File)|@@ ?[ab]?|[ +-][ab]{0,2}|\r|))*",
        text in "[ab\n\r]{0,20}",
    ) {
        if let Ok(parsed) = parse(&patch) {
            for op in parsed.ops {
                if let Op::Update { hunks, .. } = op {
                    let _ = apply_update(&text, &hunks);
                }
            }
        }
    }
}

/// Every file under `dir`, by its `/`-separated relative path.
fn tree(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .expect("under")
                    .to_str()
                    .expect("utf-8")
                    .to_owned();
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// `tests/patch_scenarios/NAME/`: `before/` (the tree), `patch`, and either `after/` (the
/// tree the patch makes) or `refusal` (the first problem's code, and its first hunk's).
#[test]
fn every_scenario_gives_its_tree_or_its_refusal() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/patch_scenarios");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .expect("scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 15, "only {} scenarios", names.len());
    let (mut applied, mut refused) = (0, 0);
    for dir in names {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let before = tree(&dir.join("before"));
        let patch = std::fs::read_to_string(dir.join("patch")).expect("patch");
        let outcome: Result<Vec<satyrn_mutator_core::change_set::FileChange>, String> =
            match parse(&patch) {
                Err(_) => Err(satyrn_mutator_core::patch::PatchErrorCode::CODE.to_owned()),
                Ok(parsed) => {
                    use satyrn_mutator_core::change_set::{RevisionPolicy, patch_ops, plan};
                    let ops = patch_ops(&parsed, "", &|_| None);
                    let mut read = |path: &str| -> Result<
                        Option<Vec<u8>>,
                        satyrn_mutator_core::gates::Refusal,
                    > { Ok(before.get(path).cloned()) };
                    plan(&ops, &mut read, RevisionPolicy::Unchecked).map_err(|problems| {
                        let first = &problems[0];
                        match first.hunks.first() {
                            Some(hunk) => format!("{} {}", first.code.as_str(), hunk.code.as_str()),
                            None => first.code.as_str().to_owned(),
                        }
                    })
                }
            };
        if dir.join("after").exists() {
            let changes = outcome.unwrap_or_else(|e| panic!("{name}: refused {e}"));
            let mut now = before.clone();
            for change in changes {
                match change.content {
                    Some(bytes) => now.insert(change.path, bytes),
                    None => now.remove(&change.path),
                };
            }
            assert_eq!(now, tree(&dir.join("after")), "{name}");
            applied += 1;
        } else {
            let want = std::fs::read_to_string(dir.join("refusal")).expect("refusal");
            assert_eq!(outcome.err().as_deref(), Some(want.trim()), "{name}");
            refused += 1;
        }
    }
    assert!(
        applied >= 8 && refused >= 8,
        "{applied} applied, {refused} refused"
    );
}
