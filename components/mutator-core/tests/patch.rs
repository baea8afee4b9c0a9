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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

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
