//! `edit::apply` and `edit::decide` against a plain reference model of the edit semantics.
//!
//! The reference is written the obvious way (char-by-char scans, `String` operations, all
//! matches collected, every pair compared) so that a disagreement points at the decision
//! code. It checks the same success bytes and the same refusal codes, in the same order.

use proptest::prelude::*;
use satyrn_mutator_core::edit::{self, EditError, EditOp, EditRequest};
use satyrn_mutator_core::revision::Revision;
use satyrn_mutator_core::worktree::{NotEditable, Worktree};

/// One edit, owned.
#[derive(Debug, Clone)]
struct E {
    insert: bool,
    selector: String,
    new_text: String,
    occurrence: Option<u32>,
}

impl E {
    fn op(&self) -> EditOp<'_> {
        if self.insert {
            EditOp::InsertAfter {
                anchor_text: &self.selector,
                new_text: &self.new_text,
                occurrence: self.occurrence,
            }
        } else {
            EditOp::Replace {
                old_text: &self.selector,
                new_text: &self.new_text,
                occurrence: self.occurrence,
            }
        }
    }
}

type Codes = Vec<(Option<usize>, &'static str)>;

/// A resolved edit in the model: start, end, new text, whether it is an insertion.
type Span = (usize, usize, String, bool);

/// The reference model: the new file, or each problem as (edit index, code).
fn model(text: &str, edits: &[E]) -> Result<String, Codes> {
    let (bom, body) = if let Some(rest) = text.strip_prefix('\u{feff}') {
        ("\u{feff}", rest)
    } else {
        ("", text)
    };
    let chars: Vec<char> = body.chars().collect();
    let mut bare_cr = false;
    let mut crlf = false;
    let mut lf = false;
    for i in 0..chars.len() {
        if chars[i] == '\r' && chars.get(i + 1) != Some(&'\n') {
            bare_cr = true;
        }
        if chars[i] == '\n' {
            if i > 0 && chars[i - 1] == '\r' {
                crlf = true;
            } else {
                lf = true;
            }
        }
    }
    let irregular = bare_cr || (crlf && lf);
    let normalize = |s: &str| -> String {
        if irregular {
            s.to_string()
        } else if crlf {
            s.replace("\r\n", "\n").replace('\n', "\r\n")
        } else if lf {
            s.replace("\r\n", "\n")
        } else {
            s.to_string()
        }
    };
    // (start, end, new text, is insert) or the edit's problem.
    let mut resolved: Vec<Result<Span, &'static str>> = Vec::new();
    for e in edits {
        let breaks = |s: &str| s.contains('\n') || s.contains('\r');
        if e.selector.is_empty() {
            resolved.push(Err("SELECTOR_EMPTY"));
            continue;
        }
        if irregular && (breaks(&e.selector) || breaks(&e.new_text)) {
            resolved.push(Err("LINE_ENDINGS_UNSUPPORTED"));
            continue;
        }
        let selector = normalize(&e.selector);
        let new_text = normalize(&e.new_text);
        if (e.insert && new_text.is_empty()) || (!e.insert && new_text == selector) {
            resolved.push(Err("NO_OP_EDIT"));
            continue;
        }
        let mut at = Vec::new();
        for p in 0..=body.len() {
            if body.is_char_boundary(p) && body[p..].starts_with(selector.as_str()) {
                at.push(p);
            }
        }
        let chosen = match e.occurrence {
            _ if at.is_empty() => Err("ANCHOR_MISSING"),
            None if at.len() > 1 => Err("ANCHOR_AMBIGUOUS"),
            None => Ok(at[0]),
            Some(k) if (k as usize) > at.len() => Err("OCCURRENCE_OUT_OF_RANGE"),
            Some(k) => Ok(at[k as usize - 1]),
        };
        resolved.push(chosen.map(|p| {
            let end = p + selector.len();
            if e.insert {
                (end, end, new_text, true)
            } else {
                (p, end, new_text, false)
            }
        }));
    }
    let mut problems = Vec::new();
    for j in 0..resolved.len() {
        match &resolved[j] {
            Err(code) => problems.push((Some(j), *code)),
            Ok(b) => {
                for a in resolved[..j].iter().flatten() {
                    let code = match (a.3, b.3) {
                        (false, false) if a.0 < b.1 && b.0 < a.1 => Some("EDITS_OVERLAP"),
                        (true, true) if a.0 == b.0 => Some("INSERTIONS_COLLIDE"),
                        (true, false) if b.0 <= a.0 && a.0 <= b.1 => {
                            Some("INSERTION_IN_REPLACEMENT")
                        }
                        (false, true) if a.0 <= b.0 && b.0 <= a.1 => {
                            Some("INSERTION_IN_REPLACEMENT")
                        }
                        _ => None,
                    };
                    if let Some(code) = code {
                        problems.push((Some(j), code));
                    }
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut spans: Vec<Span> = resolved.into_iter().flatten().collect();
    spans.sort_by_key(|s| s.0);
    let mut out = String::new();
    let mut cursor = 0;
    for (start, end, new_text, _) in spans {
        out += &body[cursor..start];
        out += &new_text;
        cursor = end;
    }
    out += &body[cursor..];
    if out == body {
        return Err(vec![(None, "NO_OP_BATCH")]);
    }
    Ok(format!("{bom}{out}"))
}

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

const LINES: &[&str] = &[
    "fn main() {",
    "    let x = 1;",
    "}",
    "",
    "aa",
    "aaa",
    "é ü 🦀",
    "foo bar",
    "foo  bar",
    "x",
];

const SELECTORS: &[&str] = &[
    "a", "aa", "aaa", "x", "}", "\n", "}\n", "bar\nfoo", "foo bar", "🦀", "é", " ", "fn", "let x",
    "zzz", "",
];

const NEW_TEXTS: &[&str] = &[
    "", "X", "aa", "line\n", "a\r\nb", "🦀\n", "\n", "<SAME>", "<SAME>", "foo",
];

fn file() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(LINES), 0..9),
        prop::collection::vec(0u8..20, 9),
        any::<bool>(),
        any::<bool>(),
        0u8..10,
    )
        .prop_map(|(lines, endings, final_newline, bom, style)| {
            let mut s = String::new();
            if bom {
                s.push('\u{feff}');
            }
            for (i, line) in lines.iter().enumerate() {
                s.push_str(line);
                if i + 1 < lines.len() || final_newline {
                    // Mostly one style per file; sometimes mixed or with a bare CR.
                    s.push_str(match (style, endings[i]) {
                        (0..=4, _) => "\n",
                        (5..=8, _) => "\r\n",
                        (_, 0..=8) => "\n",
                        (_, 9..=17) => "\r\n",
                        _ => "\r",
                    });
                }
            }
            s
        })
}

fn edits_for(text: String) -> impl Strategy<Value = (String, Vec<E>)> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let edit = (
        any::<bool>(),
        prop_oneof![
            prop::sample::select(SELECTORS).prop_map(str::to_string),
            (0..=n, 0usize..12).prop_map(move |(start, len)| {
                chars[start..(start + len).min(n)]
                    .iter()
                    .collect::<String>()
            }),
        ],
        prop::sample::select(NEW_TEXTS),
        prop_oneof![3 => Just(None), 2 => (1u32..4).prop_map(Some)],
        any::<bool>(),
    )
        .prop_map(|(insert, selector, new_text, occurrence, lf)| {
            // Selectors quoted from a CRLF file are sometimes sent with LF endings.
            let selector = if lf {
                selector.replace("\r\n", "\n")
            } else {
                selector
            };
            let new_text = if new_text == "<SAME>" {
                selector.clone()
            } else {
                new_text.to_string()
            };
            E {
                insert,
                selector,
                new_text,
                occurrence,
            }
        });
    (Just(text), prop::collection::vec(edit, 1..6))
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
            prop_assert_eq!(codes.len(), r.problems.len());
        }
        (_, other) => prop_assert!(false, "model {:?} but decide {:?}", expected, other),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

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
    let ops = [EditOp::Replace {
        old_text: "",
        new_text: "x",
        occurrence: None,
    }];
    let writable = vec!["*.txt".to_string()];
    let worktree = One(b"abc\n".to_vec());
    let request = |path, expected| EditRequest {
        path,
        writable_paths: &writable,
        expected_sha256: expected,
        edits: &ops,
    };
    let sha = Revision::of(b"abc\n").to_hex();
    let stale = Revision::of(b"other").to_hex();
    assert!(matches!(
        edit::decide(&worktree, &request("../f.txt", Some(&sha))),
        Err(EditError::InvalidRequest(_))
    ));
    assert!(matches!(
        edit::decide(&worktree, &request(".git/f.txt", Some(&sha))),
        Err(EditError::Refused(_))
    ));
    assert!(matches!(
        edit::decide(&worktree, &request("f.rs", Some(&sha))),
        Err(EditError::Refused(_))
    ));
    assert!(matches!(
        edit::decide(&worktree, &request("f.txt", None)),
        Err(EditError::Refused(_))
    ));
    match edit::decide(&worktree, &request("f.txt", Some(&stale))) {
        Err(EditError::Stale { current, message }) => {
            assert_eq!(current.to_hex(), sha);
            assert!(message.contains(&sha), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        edit::decide(&worktree, &request("f.txt", Some(&sha))),
        Err(EditError::Rejected(_))
    ));
}
