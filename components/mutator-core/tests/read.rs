//! `read::read` natively, against a plain reference model of paging, over an in-memory
//! worktree. The component runs the same code (tests/it/protocol_read.rs); this makes the
//! decision visible to native property tests and to coverage.

use proptest::prelude::*;
use satyrn_mutator_core::read::{
    self, MAX_READ_BYTES, MAX_READ_FILE_BYTES, MAX_READ_LINES, ReadCode, ReadError, ReadPage,
    ReadRequest,
};
use satyrn_mutator_core::revision::Revision;
use std::collections::BTreeMap;

mod common;
use common::memory::{Memory, one};

fn request<'a>(
    path: &'a str,
    writable: &'a [String],
    offset: Option<u32>,
    limit: Option<u32>,
) -> ReadRequest<'a> {
    ReadRequest {
        path,
        writable_paths: writable,
        private_paths: &[],
        offset,
        limit,
    }
}

fn code(result: &Result<ReadPage, ReadError>) -> Option<ReadCode> {
    match result {
        Err(ReadError::Refused { code, .. }) => Some(*code),
        _ => None,
    }
}

/// The reference: lines split after each LF, pages filled line by line.
fn reference(
    bytes: &[u8],
    offset: Option<u32>,
    limit: Option<u32>,
) -> Result<(u32, u32, u32, String, Option<u32>), ReadCode> {
    if bytes.contains(&0) {
        return Err(ReadCode::NotText);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| ReadCode::NotText)?;
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let total = lines.len();
    let first = offset.unwrap_or(1) as usize;
    if first > total.max(1) {
        return Err(ReadCode::OutOfRange);
    }
    let wanted = limit.unwrap_or(MAX_READ_LINES).min(MAX_READ_LINES) as usize;
    let mut page = String::new();
    let mut shown = 0usize;
    for line in lines.iter().skip(first - 1).take(wanted) {
        if page.len() + line.len() > MAX_READ_BYTES {
            if shown == 0 {
                return Err(ReadCode::TooLarge);
            }
            break;
        }
        page.push_str(line);
        shown += 1;
    }
    let last = first - 1 + shown;
    let next = (last < total).then_some((last + 1) as u32);
    Ok((first as u32, shown as u32, total as u32, page, next))
}

#[test]
fn a_small_file_is_one_page_with_its_revision_and_writability() {
    let text = b"one\r\ntwo\nthree";
    let wt = one("src/a.txt", text);
    let writable = vec!["src/*.txt".to_string()];
    let page = read::read(&wt, &request("src/a.txt", &writable, None, None)).expect("page");
    assert_eq!(page.text, "one\r\ntwo\nthree");
    assert_eq!((page.offset, page.lines, page.total_lines), (1, 3, 3));
    assert_eq!(page.revision, Revision::of(text));
    assert!(page.writable && !page.bom);
    assert_eq!((page.next_offset, page.notice), (None, None));
    let page = read::read(&wt, &request("src/a.txt", &[], None, None)).expect("page");
    assert!(
        !page.writable,
        "writability follows the contract's patterns"
    );
}

#[test]
fn a_byte_order_mark_is_reported_not_shown_and_an_empty_file_has_no_lines() {
    let wt = one("bom.txt", "\u{feff}hi\n".as_bytes());
    let page = read::read(&wt, &request("bom.txt", &[], None, None)).expect("page");
    assert!(page.bom);
    assert_eq!(page.text, "hi\n");
    let wt = one("empty.txt", b"");
    let page = read::read(&wt, &request("empty.txt", &[], Some(1), None)).expect("page");
    assert_eq!(
        (page.lines, page.total_lines, page.text.as_str()),
        (0, 0, "")
    );
}

#[test]
fn the_limit_the_line_cap_and_the_byte_cap_each_say_how_to_continue() {
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    let wt = one("many.txt", text.as_bytes());
    let page = read::read(&wt, &request("many.txt", &[], Some(3), Some(2))).expect("page");
    assert_eq!(page.text, "line 3\nline 4\n");
    assert_eq!(page.next_offset, Some(5));
    assert_eq!(
        page.notice.as_deref(),
        Some(
            "[Showing lines 3-4 of 2500 (the requested limit of 2 lines). Use offset=5 to continue.]"
        )
    );
    let page = read::read(&wt, &request("many.txt", &[], None, Some(5000))).expect("page");
    assert_eq!(page.lines, MAX_READ_LINES);
    assert!(
        page.notice
            .expect("notice")
            .contains("the 2000-line page limit")
    );
    let wide: String = (0..100)
        .map(|_| format!("{}\n", "x".repeat(1023)))
        .collect();
    let wt = one("wide.txt", wide.as_bytes());
    let page = read::read(&wt, &request("wide.txt", &[], None, None)).expect("page");
    assert_eq!(page.lines, 50);
    assert_eq!(page.text.len(), MAX_READ_BYTES);
    assert!(
        page.notice
            .expect("notice")
            .contains("the 51200-byte page limit")
    );
}

#[test]
fn every_refusal_is_named_and_a_sibling_read_succeeds() {
    let huge = vec![b'a'; MAX_READ_BYTES + 1];
    let wt = Memory(BTreeMap::from([
        ("bin.dat".to_string(), Some(b"a\0b".to_vec())),
        ("latin1.txt".to_string(), Some(vec![0xe9, b'\n'])),
        ("long.txt".to_string(), Some(huge)),
        ("dir".to_string(), None),
        ("ok.txt".to_string(), Some(b"fine\n".to_vec())),
    ]));
    let cases: [(&str, Option<u32>, ReadCode); 6] = [
        ("bin.dat", None, ReadCode::NotText),
        ("latin1.txt", None, ReadCode::NotText),
        ("long.txt", None, ReadCode::TooLarge),
        ("dir", None, ReadCode::Unavailable),
        ("missing.txt", None, ReadCode::Unavailable),
        ("ok.txt", Some(3), ReadCode::OutOfRange),
    ];
    for (path, offset, expected) in cases {
        let result = read::read(&wt, &request(path, &[], offset, None));
        assert_eq!(code(&result), Some(expected), "{path}: {result:?}");
        let ReadError::Refused { message, .. } = result.expect_err("refused") else {
            unreachable!()
        };
        assert!(!message.is_empty());
        assert!(expected.as_str().starts_with("READ_"));
    }
    for git in [".git/config", "sub/.GIT/HEAD"] {
        let result = read::read(&wt, &request(git, &[], None, None));
        assert_eq!(code(&result), Some(ReadCode::Unavailable), "{git}");
    }
    assert!(read::read(&wt, &request("ok.txt", &[], Some(1), Some(1))).is_ok());
}

#[test]
fn malformed_requests_are_invalid_before_any_file_is_read() {
    let wt = one("ok.txt", b"fine\n");
    for (path, offset, limit) in [
        ("", None, None),
        ("/abs", None, None),
        ("a/../ok.txt", None, None),
        ("ok.txt", Some(0), None),
        ("ok.txt", None, Some(0)),
    ] {
        let result = read::read(&wt, &request(path, &[], offset, limit));
        assert!(
            matches!(result, Err(ReadError::InvalidRequest(_))),
            "{path:?} {offset:?} {limit:?}: {result:?}"
        );
    }
}

#[test]
fn the_file_size_limit_is_the_edit_limit() {
    assert_eq!(MAX_READ_FILE_BYTES, 16 * 1024 * 1024);
    let wt = one(
        "big.txt",
        &vec![b'\n'; usize::try_from(MAX_READ_FILE_BYTES).expect("fits") + 1],
    );
    let result = read::read(&wt, &request("big.txt", &[], None, None));
    assert_eq!(code(&result), Some(ReadCode::Unavailable));
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-z é]{0,12}\n",
        2 => "[a-z]{0,6}\r\n",
        1 => "[a-z]{0,4}",
        1 => (20_000usize..30_000).prop_map(|n| format!("{}\n", "w".repeat(n))),
    ]
}

#[path = "common/cases.rs"]
mod cases;

proptest! {
    #![proptest_config(cases::config(96))]

    #[test]
    fn pages_agree_with_the_reference(
        lines in prop::collection::vec(line(), 0..40),
        bom in any::<bool>(),
        offset in prop::option::of(1u32..45),
        limit in prop::option::of(1u32..12),
    ) {
        let mut text = if bom { String::from("\u{feff}") } else { String::new() };
        text.extend(lines);
        let wt = one("f.txt", text.as_bytes());
        let got = read::read(&wt, &request("f.txt", &[], offset, limit));
        match reference(text.as_bytes(), offset, limit) {
            Ok((first, shown, total, page, next)) => {
                let got = got.expect("a page");
                prop_assert_eq!((got.offset, got.lines, got.total_lines), (first, shown, total));
                prop_assert_eq!(&got.text, &page);
                prop_assert_eq!(got.next_offset, next);
                prop_assert_eq!(got.notice.is_some(), next.is_some());
                prop_assert_eq!(got.bom, bom);
                prop_assert_eq!(got.revision, Revision::of(text.as_bytes()));
            }
            Err(expected) => prop_assert_eq!(code(&got), Some(expected)),
        }
    }
}
