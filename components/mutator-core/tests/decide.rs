//! `replace::decide` against a plain reference model, over an in-memory worktree.
//!
//! The reference is written the obvious way (linear scans, `String` operations) so that a
//! disagreement points at the optimized decision code. The real component and file system
//! are exercised by the host's integration tests; this runs the same logic natively.

use proptest::prelude::*;
use satyrn_mutator_core::replace::{self, RefusalCode, ReplaceError, ReplaceRequest};
use satyrn_mutator_core::revision::Revision;
use std::collections::BTreeMap;

mod common;
use common::memory::Memory;

fn sha(bytes: &[u8]) -> String {
    Revision::of(bytes).to_hex()
}

/// The reference: every gate written plainly.
fn reference(
    files: &BTreeMap<String, Option<Vec<u8>>>,
    path: &str,
    writable: &[String],
    expected: Option<&str>,
    old: &str,
    new: &str,
) -> Result<Vec<u8>, Option<RefusalCode>> {
    let bad_shape = path.is_empty()
        || path.len() > 4096
        || path.split('/').any(|s| s.len() > 255)
        || path.starts_with('/')
        || path.contains('\0')
        || path.contains('\\')
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad_shape || old.is_empty() {
        return Err(None);
    }
    if path.split('/').any(|s| s.eq_ignore_ascii_case(".git"))
        || !writable.iter().any(|p| p == "*" || p == path)
    {
        return Err(Some(RefusalCode::PathUndeclared));
    }
    let Some(expected) = expected else {
        return Err(Some(RefusalCode::RevisionUnavailable));
    };
    let Some(Some(bytes)) = files.get(path) else {
        return Err(Some(RefusalCode::MutationFailed));
    };
    if sha(bytes) != expected {
        return Err(Some(RefusalCode::RevisionStale));
    }
    let Ok(text) = String::from_utf8(bytes.clone()) else {
        return Err(Some(RefusalCode::MutationFailed));
    };
    let starts: Vec<usize> = (0..text.len())
        .filter(|&i| text.as_bytes()[i..].starts_with(old.as_bytes()))
        .collect();
    match starts.as_slice() {
        [] => Err(Some(RefusalCode::AnchorMissing)),
        [at] => {
            let mut out = text.as_bytes()[..*at].to_vec();
            out.extend_from_slice(new.as_bytes());
            out.extend_from_slice(&text.as_bytes()[at + old.len()..]);
            Ok(out)
        }
        _ => Err(Some(RefusalCode::AnchorAmbiguous)),
    }
}

fn text_strategy() -> impl Strategy<Value = String> {
    // Small alphabets make repeated and overlapping anchors likely.
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "aa", "\n", "\r\n", "é", "$1", "\\0", " "]),
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(4000))]

    #[test]
    fn decide_agrees_with_the_reference(
        content in text_strategy(),
        invalid_utf8 in any::<bool>(),
        old in text_strategy(),
        new in text_strategy(),
        path in prop::sample::select(vec!["f.txt", "d/f.txt", "g.txt", "missing.txt", "dir", "../f.txt", "", "d//f.txt", ".git/config", "d/.GIT"]),
        declared in any::<bool>(),
        revision_kind in 0u8..3,
    ) {
        let mut bytes = content.into_bytes();
        if invalid_utf8 {
            bytes.push(0xff);
        }
        let mut files = BTreeMap::new();
        files.insert("f.txt".to_string(), Some(bytes.clone()));
        files.insert("d/f.txt".to_string(), Some(bytes.clone()));
        files.insert("g.txt".to_string(), Some(b"other".to_vec()));
        files.insert("dir".to_string(), None);
        files.insert(".git/config".to_string(), Some(bytes.clone()));
        files.insert("d/.GIT".to_string(), Some(bytes.clone()));
        let writable = if declared { vec!["*".to_string()] } else { vec!["nothing".to_string()] };
        let current = files.get(path).cloned().flatten().unwrap_or_default();
        let expected = match revision_kind {
            0 => None,
            1 => Some(sha(&current)),
            _ => Some(sha(b"stale")),
        };
        let request = ReplaceRequest {
            path,
            writable_paths: &writable,
            private_paths: &[],
            expected_sha256: expected.as_deref(),
            old_text: &old,
            new_text: &new,
        };
        let got = replace::decide(&Memory(files.clone()), &request);
        let want = reference(&files, path, &writable, expected.as_deref(), &old, &new);
        match (got, want) {
            (Ok(plan), Ok(bytes)) => {
                prop_assert_eq!(&plan.new_content, &bytes);
                prop_assert_eq!(plan.next, Revision::of(&bytes));
                prop_assert_eq!(plan.base, Revision::of(&current));
                prop_assert_eq!(plan.path.as_str(), path);
            }
            (Err(ReplaceError::InvalidRequest(_)), Err(None)) => {}
            (Err(ReplaceError::Refused(r)), Err(Some(code))) => prop_assert_eq!(r.code, code),
            (got, want) => prop_assert!(false, "decide gave {:?}, the reference {:?}", got, want),
        }
    }
}

#[test]
fn replacement_is_literal_and_keeps_crlf() {
    let content = b"one\r\ntwo $x\r\nthree\r\n".to_vec();
    let files = BTreeMap::from([("f.txt".to_string(), Some(content.clone()))]);
    let writable = vec!["f.txt".to_string()];
    let expected = sha(&content);
    let plan = replace::decide(
        &Memory(files),
        &ReplaceRequest {
            path: "f.txt",
            writable_paths: &writable,
            private_paths: &[],
            expected_sha256: Some(&expected),
            old_text: "$x",
            new_text: "$1\\0&",
        },
    )
    .unwrap();
    assert_eq!(plan.new_content, b"one\r\ntwo $1\\0&\r\nthree\r\n");
}
